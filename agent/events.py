"""The event stream: the envelope and the data of every event loopdeck emits.

The wire format is the Copilot SDK's (`session-events.schema.json`): an envelope
``{type, data, id, timestamp, parentId, ephemeral?}`` with camelCase keys inside
``data``. Each data model carries its wire ``TYPE``; :func:`event_from_dict` maps a
parsed line back to its model, and keeps unknown types as :class:`UnknownData`
so nothing read from a file is ever dropped.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

Mode = Literal["interactive", "autopilot", "plan"]


class EventData(BaseModel):
    """Base of every event's ``data``. Extra keys read from a file are kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=False,
        defer_build=True,
    )
    TYPE: ClassVar[str] = ""
    EPHEMERAL: ClassVar[bool] = False

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# --- session lifecycle -------------------------------------------------------


class WorkingDirectoryContext(EventData):
    cwd: str
    git_root: str | None = None
    branch: str | None = None


class SessionStartData(EventData):
    TYPE = "session.start"
    session_id: str
    version: int = 1
    producer: str = "loopdeck"
    copilot_version: str
    start_time: str
    selected_model: str | None = None
    context: WorkingDirectoryContext | None = None


class SessionResumeData(EventData):
    TYPE = "session.resume"
    event_count: int
    resume_time: str
    selected_model: str | None = None
    context: WorkingDirectoryContext | None = None


class SessionIdleData(EventData):
    TYPE = "session.idle"
    EPHEMERAL = True
    aborted: bool | None = None
    mode: Mode | None = None


class SessionErrorData(EventData):
    TYPE = "session.error"
    error_type: str
    message: str
    status_code: int | None = None
    provider_error_type: str | None = None


class SessionInfoData(EventData):
    TYPE = "session.info"
    info_type: str
    message: str
    tip: str | None = None


class SessionWarningData(EventData):
    TYPE = "session.warning"
    warning_type: str
    message: str


# session.warning's warningType for a reply the provider cut at its output
# token limit (finish_reason "length"); it follows that turn's assistant.message.
WARNING_OUTPUT_TRUNCATED = "output_truncated"


class SessionTaskCompleteData(EventData):
    TYPE = "session.task_complete"
    summary: str | None = None
    success: bool | None = None


class SessionModeChangedData(EventData):
    TYPE = "session.mode_changed"
    previous_mode: Mode
    new_mode: Mode


class SessionModelChangeData(EventData):
    TYPE = "session.model_change"
    new_model: str
    previous_model: str | None = None


class SessionCompactionStartData(EventData):
    TYPE = "session.compaction_start"
    current_tokens: int | None = None
    token_limit: int | None = None


class SessionCompactionCompleteData(EventData):
    TYPE = "session.compaction_complete"
    success: bool
    error: str | None = None
    messages_removed: int | None = None
    summary_content: str | None = None


class ShutdownCodeChanges(EventData):
    files_modified: list[str] = Field(default_factory=list)
    lines_added: int = 0
    lines_removed: int = 0


class SessionShutdownData(EventData):
    TYPE = "session.shutdown"
    shutdown_type: Literal["routine", "error"] = "routine"
    session_start_time: int
    total_api_duration_ms: float = 0
    code_changes: ShutdownCodeChanges = Field(default_factory=ShutdownCodeChanges)
    model_metrics: dict[str, Any] = Field(default_factory=dict)


class SessionAutopilotStoppedData(EventData):
    """Autopilot stopped continuing without task_complete (e.g. at its cap)."""

    TYPE = "session.autopilot_stopped"
    reason: str


class AbortData(EventData):
    TYPE = "abort"
    reason: Literal["user_initiated", "remote_command", "user_abort"] = "user_initiated"


# --- messages and turns -----------------------------------------------------


class UserMessageData(EventData):
    TYPE = "user.message"
    content: str
    agent_mode: Mode | None = None
    is_autopilot_continuation: bool | None = None
    source: str | None = None
    # Set when a client gave the message an id (the SDK's ``session.send`` result).
    message_id: str | None = None


class AssistantTurnStartData(EventData):
    TYPE = "assistant.turn_start"
    turn_id: str
    model: str | None = None


class AssistantTurnRetryData(EventData):
    """A model call in this turn failed with a retryable error and is retried."""

    TYPE = "assistant.turn_retry"
    turn_id: str
    model: str | None = None
    reason: str | None = None


class AssistantTurnEndData(EventData):
    TYPE = "assistant.turn_end"
    turn_id: str
    model: str | None = None


class AssistantMessageDeltaData(EventData):
    TYPE = "assistant.message_delta"
    EPHEMERAL = True
    message_id: str
    delta_content: str


class AssistantReasoningDeltaData(EventData):
    TYPE = "assistant.reasoning_delta"
    EPHEMERAL = True
    reasoning_id: str
    delta_content: str


class AssistantReasoningData(EventData):
    TYPE = "assistant.reasoning"
    reasoning_id: str
    content: str


class ToolRequest(EventData):
    tool_call_id: str
    name: str
    arguments: Any = None
    type: Literal["function"] = "function"


class AssistantMessageData(EventData):
    TYPE = "assistant.message"
    message_id: str
    content: str
    tool_requests: list[ToolRequest] | None = None
    turn_id: str | None = None
    model: str | None = None
    output_tokens: int | None = None


class AssistantUsageData(EventData):
    TYPE = "assistant.usage"
    EPHEMERAL = True
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    duration: float | None = None


# --- tools ---------------------------------------------------------------------


class ToolExecutionStartData(EventData):
    TYPE = "tool.execution_start"
    tool_call_id: str
    tool_name: str
    arguments: Any = None
    turn_id: str | None = None


class ToolExecutionPartialResultData(EventData):
    TYPE = "tool.execution_partial_result"
    EPHEMERAL = True
    tool_call_id: str
    partial_output: str


class ToolResultPayload(EventData):
    content: str
    detailed_content: str | None = None


class ToolErrorPayload(EventData):
    message: str
    code: str | None = None


class ToolExecutionCompleteData(EventData):
    TYPE = "tool.execution_complete"
    tool_call_id: str
    success: bool
    result: ToolResultPayload | None = None
    error: ToolErrorPayload | None = None
    turn_id: str | None = None
    model: str | None = None


# --- permissions -------------------------------------------------------------


class PermissionRequestedData(EventData):
    TYPE = "permission.requested"
    request_id: str
    permission_request: dict[str, Any]


class PermissionCompletedData(EventData):
    TYPE = "permission.completed"
    request_id: str
    result: dict[str, Any]
    tool_call_id: str | None = None


# --- tools defined by an SDK client --------------------------------------------


class ExternalToolRequestedData(EventData):
    """A tool the connected app defined was called; the app runs it and answers."""

    TYPE = "external_tool.requested"
    request_id: str
    session_id: str
    tool_call_id: str
    tool_name: str
    arguments: Any = None
    working_directory: str | None = None


class ExternalToolCompletedData(EventData):
    """The request is settled (answered, or abandoned by an abort)."""

    TYPE = "external_tool.completed"
    request_id: str


class UnknownData(EventData):
    """Data of an event type loopdeck does not know: kept verbatim, shown raw."""

    model_config = ConfigDict(extra="allow")
    raw: dict[str, Any] = Field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        return dict(self.raw)


DATA_TYPES: dict[str, type[EventData]] = {
    cls.TYPE: cls
    for cls in (
        SessionStartData,
        SessionResumeData,
        SessionIdleData,
        SessionErrorData,
        SessionInfoData,
        SessionWarningData,
        SessionTaskCompleteData,
        SessionModeChangedData,
        SessionModelChangeData,
        SessionCompactionStartData,
        SessionCompactionCompleteData,
        SessionShutdownData,
        SessionAutopilotStoppedData,
        AbortData,
        UserMessageData,
        AssistantTurnRetryData,
        AssistantTurnStartData,
        AssistantTurnEndData,
        AssistantMessageDeltaData,
        AssistantReasoningDeltaData,
        AssistantReasoningData,
        AssistantMessageData,
        AssistantUsageData,
        ToolExecutionStartData,
        ToolExecutionPartialResultData,
        ToolExecutionCompleteData,
        PermissionRequestedData,
        PermissionCompletedData,
        ExternalToolRequestedData,
        ExternalToolCompletedData,
    )
}


def now_iso() -> str:
    """ISO 8601 UTC with millisecond precision and a ``Z``, as Copilot writes it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Event(BaseModel):
    """One envelope. ``type`` is the wire type; ``data`` its model."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    type: str
    data: EventData
    id: str
    timestamp: str
    parent_id: str | None = None
    ephemeral: bool = False

    @classmethod
    def new(cls, data: EventData, parent_id: str | None) -> Event:
        return cls(
            type=data.TYPE,
            data=data,
            id=str(uuid.uuid4()),
            timestamp=now_iso(),
            parent_id=parent_id,
            ephemeral=data.EPHEMERAL,
        )

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "data": self.data.wire(),
            "id": self.id,
            "timestamp": self.timestamp,
            "parentId": self.parent_id,
        }
        if self.ephemeral:
            out["ephemeral"] = True
        return out

    def to_json(self) -> str:
        return json.dumps(self.wire(), ensure_ascii=False, separators=(",", ":"))

    @property
    def known(self) -> bool:
        return not isinstance(self.data, UnknownData)


class EventParseError(ValueError):
    """A line that is JSON but not an event envelope."""


def event_from_dict(obj: Any) -> Event:
    """Build an :class:`Event` from a parsed JSON object.

    Unknown types, and known types whose data does not fit loopdeck's model (a
    newer Copilot schema, say), are kept as :class:`UnknownData` rather than lost.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise EventParseError("not an event envelope (no 'type')")
    raw_data = obj.get("data")
    if not isinstance(raw_data, dict):
        raw_data = {}
    etype: str = obj["type"]
    cls = DATA_TYPES.get(etype)
    data: EventData
    if cls is None:
        data = UnknownData(raw=raw_data)
    else:
        try:
            data = cls.model_validate(raw_data)
        except ValidationError:
            data = UnknownData(raw=raw_data)
    return Event(
        type=etype,
        data=data,
        id=str(obj.get("id") or ""),
        timestamp=str(obj.get("timestamp") or ""),
        parent_id=obj.get("parentId"),
        ephemeral=bool(obj.get("ephemeral", False)),
    )


def event_from_json(line: str) -> Event:
    return event_from_dict(json.loads(line))
