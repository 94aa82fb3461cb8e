"""The event stream: the envelope and the data of every event loopdeck emits.

The wire format is the Copilot SDK's (`session-events.schema.json`): an envelope
``{type, data, id, timestamp, parentId, ephemeral?}`` with camelCase keys inside
``data``. Each data model carries its wire ``TYPE``; :func:`event_from_dict` maps a
parsed line back to its model, and keeps unknown types as :class:`UnknownData`
so nothing read from a file is ever dropped.
"""

from __future__ import annotations

import json
import re
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


class SessionUsageCheckpointData(EventData):
    """The session's usage so far, per model (cumulative): the persisted record of
    what ``assistant.usage`` (ephemeral) reported, read back by replay and resume.

    Each ``providerModelMetrics`` entry is ``{modelId, provider, metrics: {requests:
    {cost, count}, usage: {inputTokens, outputTokens, cacheReadTokens,
    cacheWriteTokens}}}`` (see agent/usage.py).
    """

    TYPE = "session.usage_checkpoint"
    total_nano_aiu: float = 0.0  # Copilot's billing unit; loopdeck bills none
    provider_model_metrics: list[dict[str, Any]] = Field(default_factory=list)


class SessionCustomNotificationData(EventData):
    """Producer-defined data; ``source`` names the producer (see agent/turn_notes.py)."""

    TYPE = "session.custom_notification"
    source: str
    name: str
    payload: Any = None
    subject: dict[str, str] | None = None
    version: int | None = None


class SessionContextClearedData(EventData):
    """The model's context was cleared (``/clear``): earlier turns stay in the log
    and on screen, the model starts from an empty conversation."""

    TYPE = "session.context_cleared"
    messages_cleared: int
    initial_message: str | None = None


class SessionTitleChangedData(EventData):
    TYPE = "session.title_changed"
    title: str


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
    # Files, directories and selections the user attached (the SDK's Attachment
    # shapes, kept as their wire dicts: ``{"type": "file", "path", "displayName"}``…).
    attachments: list[dict[str, Any]] | None = None
    # What the model was given: ``content`` with the attachments' text added. Kept so
    # resume sends exactly what the live session sent, whatever the files hold now.
    transformed_content: str | None = None


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


class AssistantMessageStartData(EventData):
    """A model call goes out; its reply will stream under ``message_id``."""

    TYPE = "assistant.message_start"
    EPHEMERAL = True
    message_id: str
    phase: str | None = None


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
    duration: float | None = None  # milliseconds, the whole call
    time_to_first_token_ms: float | None = None


# --- tools ---------------------------------------------------------------------


class ToolUserRequestedData(EventData):
    """A tool the user ran directly (``!command``), without the model."""

    TYPE = "tool.user_requested"
    tool_call_id: str
    tool_name: str
    arguments: Any = None


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
    is_user_requested: bool | None = None


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


# --- questions put to the user --------------------------------------------------


class ElicitationRequestedData(EventData):
    """A question with fixed answers (a JSON-Schema form), asked of the user."""

    TYPE = "elicitation.requested"
    request_id: str
    message: str
    mode: Literal["form"] = "form"
    elicitation_source: str | None = None
    requested_schema: dict[str, Any] | None = None


class ElicitationCompletedData(EventData):
    """The user's answer: ``accept`` with ``content``, or ``cancel`` (dismissed)."""

    TYPE = "elicitation.completed"
    request_id: str
    action: Literal["accept", "decline", "cancel"] | None = None
    content: dict[str, Any] | None = None


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
        SessionContextClearedData,
        SessionTitleChangedData,
        SessionUsageCheckpointData,
        SessionCustomNotificationData,
        AbortData,
        UserMessageData,
        AssistantTurnRetryData,
        AssistantTurnStartData,
        AssistantTurnEndData,
        AssistantMessageStartData,
        AssistantMessageDeltaData,
        AssistantReasoningDeltaData,
        AssistantReasoningData,
        AssistantMessageData,
        AssistantUsageData,
        ToolUserRequestedData,
        ToolExecutionStartData,
        ToolExecutionPartialResultData,
        ToolExecutionCompleteData,
        PermissionRequestedData,
        PermissionCompletedData,
        ElicitationRequestedData,
        ElicitationCompletedData,
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
        text = json.dumps(self.wire(), ensure_ascii=False, separators=(",", ":"))
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate (the model can send one as a JSON escape) cannot be
                # written as UTF-8: keep it as the JSON escape it came as.
                text = text.encode("utf-8", "backslashreplace").decode("utf-8")
        return text

    @property
    def known(self) -> bool:
        return not isinstance(self.data, UnknownData)


class EventParseError(ValueError):
    """A line that is JSON but not an event envelope."""


# Deeper lines are refused as unreadable: the json module recurses per level (a
# RecursionError near 1,000) and pydantic serializes at most 255. Real events nest
# about a dozen levels.
MAX_DEPTH = 128
_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def is_event_id(value: object) -> bool:
    """Whether ``value`` is an id the official parser accepts (a UUID), so that a
    new event may name it as its ``parentId``."""
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def event_from_dict(obj: Any) -> Event:
    """Build an :class:`Event` from a parsed JSON object.

    Unknown types, and known types whose data does not fit loopdeck's model (a
    newer Copilot schema, say), are kept as :class:`UnknownData` rather than lost.
    An envelope field of the wrong type reads as absent.
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
    event_id, stamp, parent = obj.get("id"), obj.get("timestamp"), obj.get("parentId")
    return Event(
        type=etype,
        data=data,
        id=event_id if isinstance(event_id, str) else "",
        timestamp=stamp if isinstance(stamp, str) else "",
        parent_id=parent if isinstance(parent, str) else None,
        ephemeral=obj.get("ephemeral") is True,
    )


def event_from_json(line: str) -> Event:
    """Parse one line. Anything that is not a usable event raises a ValueError
    (:class:`EventParseError` or ``json.JSONDecodeError``), never anything else."""
    try:
        obj = json.loads(line)
    except RecursionError:
        raise EventParseError("nested too deeply to read") from None
    # Counting brackets is cheap; only a line with many of them is measured.
    if line.count("{") + line.count("[") > MAX_DEPTH and _depth_over(obj, MAX_DEPTH):
        raise EventParseError(f"nested more than {MAX_DEPTH} levels deep")
    if _LONE_SURROGATE.search(line):
        obj = _scrub(obj)  # "\\udc00" alone cannot be printed or written as UTF-8
    return event_from_dict(obj)


def _depth_over(value: Any, limit: int) -> bool:
    """Whether lists and objects in ``value`` nest deeper than ``limit``."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _scrub(value: Any) -> Any:
    """``value`` with lone surrogates in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if isinstance(value, dict):
        return {_scrub(key): _scrub(item) for key, item in value.items()}
    return value
