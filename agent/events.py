"""The event stream: the envelope and the data of every event loopdeck emits.

The wire format is the Copilot SDK's (`session-events.schema.json`): an envelope
``{type, data, id, timestamp, parentId, ephemeral?}`` with camelCase keys inside
``data``. Each data model carries its wire ``TYPE``; :func:`event_from_dict` maps a
parsed line back to its model, and keeps unknown types as :class:`UnknownData`
so nothing read from a file is ever dropped.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from agent.log_lines import EventParseError as EventParseError  # raised here, caught by readers
from agent.log_lines import data_of, read_line

Mode = Literal["interactive", "autopilot", "plan"]
# A user message's mode also says "shell" for a ``!command`` the user ran themselves.
AgentMode = Literal["interactive", "autopilot", "plan", "shell"]
AbortReason = Literal["user_initiated", "remote_command", "user_abort", "autopilot_credit_limit"]


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


class SessionHandoffData(EventData):
    """The session continues another one; loopdeck writes it first in a fork of a
    session it does not own (a Copilot CLI session): ``remoteSessionId`` is the
    origin's id, ``context`` the path of its log (see agent/fork.py)."""

    TYPE = "session.handoff"
    handoff_time: str
    source_type: Literal["remote", "local"]
    context: str | None = None
    host: str | None = None
    remote_session_id: str | None = None
    repository: dict[str, Any] | None = None
    summary: str | None = None


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


CompactionTrigger = Literal[
    "threshold", "context_limit_retry", "manual", "memory_pressure", "model_switch"
]


class SessionCompactionStartData(EventData):
    """A summary of the older history is being made (see agent/compaction.py)."""

    TYPE = "session.compaction_start"
    current_tokens: int | None = None
    token_limit: int | None = None
    system_tokens: int | None = None
    conversation_tokens: int | None = None
    tool_definitions_tokens: int | None = None
    # A CompactionTrigger when loopdeck writes it; Copilot's logs also say "auto".
    trigger: str | None = None
    compaction_attempt_id: str | None = None


class CompactionTokensUsed(EventData):
    """What the summary call took (the schema's ``compactionTokensUsed``)."""

    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    request_count: int | None = None
    cost: float | None = None  # loopdeck's own: the schema counts cost in other units


class SessionCompactionCompleteData(EventData):
    """The summary is made (or not): on success it stands in for the first
    ``messages_removed`` messages of the model's history from here on."""

    TYPE = "session.compaction_complete"
    success: bool
    error: str | None = None
    messages_removed: int | None = None
    summary_content: str | None = None
    pre_compaction_tokens: int | None = None
    post_compaction_tokens: int | None = None
    pre_compaction_messages_length: int | None = None
    tokens_removed: int | None = None
    token_limit: int | None = None
    checkpoint_number: int | None = None
    trigger: str | None = None  # as on session.compaction_start
    compaction_attempt_id: str | None = None
    model: str | None = None
    compaction_tokens_used: CompactionTokensUsed | None = None


class SessionTruncationData(EventData):
    """Messages dropped from the start of the model's history (the oldest turns,
    when a summary could not be made), or oversized content cut."""

    TYPE = "session.truncation"
    messages_removed_during_truncation: int
    performed_by: str
    post_truncation_messages_length: int
    post_truncation_tokens_in_messages: int
    pre_truncation_messages_length: int
    pre_truncation_tokens_in_messages: int
    token_limit: int
    tokens_removed_during_truncation: int


class SystemMessageData(EventData):
    """The system prompt (``role: system``) or instructions a developer injected."""

    TYPE = "system.message"
    content: str
    role: Literal["system", "developer"] = "system"
    name: str | None = None


class SessionUsageInfoData(EventData):
    """How full the model's context window is, sent before each model call."""

    TYPE = "session.usage_info"
    EPHEMERAL = True
    current_tokens: int
    messages_length: int
    token_limit: int
    system_tokens: int | None = None
    conversation_tokens: int | None = None
    tool_definitions_tokens: int | None = None
    is_initial: bool | None = None


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
    reason: AbortReason = "user_initiated"


# --- messages and turns -----------------------------------------------------


class UserMessageData(EventData):
    TYPE = "user.message"
    content: str
    agent_mode: AgentMode | None = None
    is_autopilot_continuation: bool | None = None
    source: str | None = None
    # Set when a client gave the message an id (the SDK's ``session.send`` result).
    message_id: str | None = None
    # Files, directories and selections the user attached (the SDK's Attachment
    # shapes, kept as their wire dicts: ``{"type": "file", "path", "displayName"}``…).
    attachments: list[dict[str, Any]] | None = None
    # What the model was given: ``content`` with the attachments' text added (kept so
    # resume sends exactly what the live session sent, whatever the files hold now),
    # or with context such as the date prepended (Copilot writes its autopilot
    # continuations with empty content and the text here).
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
    # "custom": a grammar-based tool call (e.g. gpt-5's apply_patch); absent means "function".
    type: Literal["function", "custom"] | None = "function"


class AssistantMessageData(EventData):
    TYPE = "assistant.message"
    message_id: str
    content: str
    tool_requests: list[ToolRequest] | None = None
    turn_id: str | None = None
    model: str | None = None
    output_tokens: int | None = None
    # The model's visible reasoning, when it came with the message (not streamed).
    reasoning_text: str | None = None


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


class ToolExecutionStartData(EventData):
    TYPE = "tool.execution_start"
    tool_call_id: str
    tool_name: str
    arguments: Any = None
    turn_id: str | None = None


class ToolUserRequestedData(EventData):
    """A tool the user ran themselves (Copilot's ``!command`` is ``local_shell``); its
    ``tool.execution_complete`` carries ``isUserRequested`` and the output."""

    TYPE = "tool.user_requested"
    tool_call_id: str
    tool_name: str
    arguments: Any = None


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
    mode: Literal["form", "url"] | None = "form"
    elicitation_source: str | None = None
    requested_schema: dict[str, Any] | None = None


class ElicitationCompletedData(EventData):
    """The user's answer: ``accept`` with ``content``, or ``cancel`` (dismissed)."""

    TYPE = "elicitation.completed"
    request_id: str
    action: Literal["accept", "decline", "cancel"] | None = None
    content: dict[str, Any] | None = None


# --- the model asks the user; the model's checklist ------------------------------


class UserInputRequestedData(EventData):
    """The model asks the user a question (the ask_user tool), maybe with choices."""

    TYPE = "user_input.requested"
    request_id: str
    question: str
    choices: list[str] | None = None
    allow_freeform: bool | None = None
    tool_call_id: str | None = None


class UserInputCompletedData(EventData):
    """The answer; without one, the question went unanswered (aborted while asked)."""

    TYPE = "user_input.completed"
    request_id: str
    answer: str | None = None
    was_freeform: bool | None = None


class SessionTodosChangedData(EventData):
    """Signal only, as in the SDK: the todo list changed. The list itself is in the
    arguments of the update_todos call that changed it (see agent.todos)."""

    TYPE = "session.todos_changed"


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


# --- plan mode ----------------------------------------------------------------

# What the user may do with a proposed plan (the SDK's ExitPlanModeAction).
PlanAction = Literal["exit_only", "interactive", "autopilot", "autopilot_fleet"]


class SessionPlanChangedData(EventData):
    """The session's plan was written (its text is in the plan file, see agent.plan_mode)."""

    TYPE = "session.plan_changed"
    operation: Literal["create", "update", "delete"]


class ExitPlanModeRequestedData(EventData):
    """The model proposes to leave plan mode with this plan; the user decides."""

    TYPE = "exit_plan_mode.requested"
    request_id: str
    summary: str
    plan_content: str
    actions: list[PlanAction]
    recommended_action: PlanAction
    model: str | None = None


class ExitPlanModeCompletedData(EventData):
    """The user's decision: approved with an action, or not (feedback: keep planning)."""

    TYPE = "exit_plan_mode.completed"
    request_id: str
    approved: bool | None = None
    selected_action: PlanAction | None = None
    feedback: str | None = None
    auto_approve_edits: bool | None = None


# --- sub-agents ------------------------------------------------------------------
#
# A sub-agent runs inside a tool call (Copilot's ``task``): its own events carry the
# envelope's ``agentId`` (see agent/subagents.py), these three frame its run.


class SubagentStartedData(EventData):
    TYPE = "subagent.started"
    tool_call_id: str
    agent_name: str
    agent_display_name: str
    agent_description: str = ""
    model: str | None = None


class SubagentCompletedData(EventData):
    TYPE = "subagent.completed"
    tool_call_id: str
    agent_name: str
    agent_display_name: str
    model: str | None = None
    total_tool_calls: int | None = None
    total_tokens: int | None = None
    duration_ms: float | None = None
    cancelled: bool | None = None


class SubagentFailedData(EventData):
    TYPE = "subagent.failed"
    tool_call_id: str
    agent_name: str
    agent_display_name: str
    error: str
    model: str | None = None
    total_tool_calls: int | None = None
    total_tokens: int | None = None
    duration_ms: float | None = None


class SubagentSelectedData(EventData):
    """The user picked a custom agent: the session's agent from now on."""

    TYPE = "subagent.selected"
    agent_name: str
    agent_display_name: str
    tools: list[str] | None = None


class SubagentDeselectedData(EventData):
    """Back to the default agent."""

    TYPE = "subagent.deselected"


# --- streaming and model-call telemetry ---------------------------------------------
# Copilot CLI writes these to stdout with ``-p --output-format json``; loopdeck reads
# them (agent/stream_fold.py folds them into the turn and the tool call they belong
# to) and writes none of them.


class AssistantToolCallDeltaData(EventData):
    """A piece of a tool call's arguments (JSON text) as the model writes them."""

    TYPE = "assistant.tool_call_delta"
    EPHEMERAL = True
    tool_call_id: str
    input_delta: str
    tool_name: str | None = None
    tool_type: str | None = None  # toolRequests[].type: "function" or "custom"


class AssistantStreamingDeltaData(EventData):
    """Progress of a streaming reply: bytes received so far (cumulative)."""

    TYPE = "assistant.streaming_delta"
    EPHEMERAL = True
    total_response_size_bytes: int


class AssistantIdleData(EventData):
    """The main agent's loop went idle (``session.idle`` may wait for background work)."""

    TYPE = "assistant.idle"
    EPHEMERAL = True
    aborted: bool | None = None


class ModelCallStartData(EventData):
    """A model call of a turn goes out."""

    TYPE = "model.call_start"
    EPHEMERAL = True
    turn_id: str
    model: str | None = None
    parent_tool_call_id: str | None = None  # set for a sub-agent's call


class ModelCallFinishedData(EventData):
    """How one model call of a turn ended (success, error, cancelled, rejected)."""

    TYPE = "model.call_finished"
    EPHEMERAL = True
    turn_id: str
    outcome: str | None = None
    dispatch_duration_ms: float | None = None


class ModelCallFailureData(EventData):
    """A model call failed (the turn may retry it)."""

    TYPE = "model.call_failure"
    EPHEMERAL = True
    source: str | None = None  # top_level, subagent, mcp_sampling
    model: str | None = None
    error_message: str | None = None
    error_type: str | None = None
    status_code: int | None = None
    parent_tool_call_id: str | None = None


class ModelCallFinalResultData(EventData):
    """A model operation's result once its retries settled (``success``, ``http_429``…)."""

    TYPE = "model.call_final_result"
    EPHEMERAL = True
    model: str | None = None
    result: str | None = None


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
        SessionHandoffData,
        SessionIdleData,
        SessionErrorData,
        SessionInfoData,
        SessionWarningData,
        SessionTaskCompleteData,
        SessionModeChangedData,
        SessionModelChangeData,
        SessionCompactionStartData,
        SessionCompactionCompleteData,
        SessionTruncationData,
        SystemMessageData,
        SessionUsageInfoData,
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
        SessionPlanChangedData,
        ExitPlanModeRequestedData,
        ExitPlanModeCompletedData,
        UserInputRequestedData,
        UserInputCompletedData,
        SessionTodosChangedData,
        SubagentStartedData,
        SubagentCompletedData,
        SubagentFailedData,
        SubagentSelectedData,
        SubagentDeselectedData,
        AssistantToolCallDeltaData,
        AssistantStreamingDeltaData,
        AssistantIdleData,
        ModelCallStartData,
        ModelCallFinishedData,
        ModelCallFailureData,
        ModelCallFinalResultData,
    )
}


def now_iso() -> str:
    """ISO 8601 UTC with millisecond precision and a ``Z``, as Copilot writes it.

    Every event is stamped, up to ~100,000 a second while a reply streams: the
    date and time down to the second is formatted once per second, not per event.
    """
    global _stamp_second, _stamp_prefix
    now = time.time()
    second = int(now)
    if second != _stamp_second:
        _stamp_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _stamp_second = second
    return f"{_stamp_prefix}.{int((now - second) * 1000):03d}Z"


_stamp_second = -1
_stamp_prefix = ""


def new_event_id() -> str:
    """A fresh event id: a random (version 4) UUID's text.

    Drawn from a per-process random base and a counter, not ``uuid.uuid4()`` per
    event (a urandom call and a UUID object each time): ids stay unique — 74 random
    bits per process, then the counter — and parse as UUIDs, as the official schema
    requires of ``id`` and ``parentId``.
    """
    return f"{_ID_BASE}{next(_id_counter):012x}"


def _id_base() -> str:
    # 8-4-4-4 hex digits of a random UUID v4 (version and variant bits kept); the
    # last 12 digits come from the counter.
    return str(uuid.uuid4())[:24]


def _reseed() -> None:
    global _ID_BASE, _id_counter
    _ID_BASE = _id_base()
    _id_counter = itertools.count(int.from_bytes(os.urandom(4), "big"))


_ID_BASE = ""
_id_counter = itertools.count()
_reseed()
# A forked child must not hand out its parent's next ids.
os.register_at_fork(after_in_child=_reseed)


class Event(BaseModel):
    """One envelope. ``type`` is the wire type; ``data`` its model."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    type: str
    data: EventData
    id: str
    timestamp: str
    parent_id: str | None = None
    ephemeral: bool = False
    # Set on the events of a sub-agent: the id of the run (its tool call's id).
    agent_id: str | None = None

    @classmethod
    def new(cls, data: EventData, parent_id: str | None) -> Event:
        # Every field is known good here: skip validation (a hot path while streaming).
        return cls.model_construct(
            type=data.TYPE,
            data=data,
            id=new_event_id(),
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
        if self.agent_id is not None:
            out["agentId"] = self.agent_id
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
    etype: str = obj["type"]
    cls = DATA_TYPES.get(etype)
    raw_data = data_of(obj, known=cls is not None)
    data: EventData
    if cls is None:
        data = UnknownData(raw=raw_data)
    else:
        try:
            data = cls.model_validate(raw_data)
        except ValidationError:
            data = UnknownData(raw=raw_data)
    event_id, stamp, parent = obj.get("id"), obj.get("timestamp"), obj.get("parentId")
    agent = obj.get("agentId")
    return Event(
        type=etype,
        data=data,
        id=event_id if isinstance(event_id, str) else "",
        timestamp=stamp if isinstance(stamp, str) else "",
        parent_id=parent if isinstance(parent, str) else None,
        ephemeral=obj.get("ephemeral") is True,
        agent_id=agent if isinstance(agent, str) and agent else None,
    )


def event_from_json(line: str) -> Event:
    """Parse one line. Anything that is not a usable event raises a ValueError
    (:class:`EventParseError` or ``json.JSONDecodeError``), never anything else."""
    return event_from_dict(read_line(line))
