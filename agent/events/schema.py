"""The event stream: every event loopdeck reads and writes, and the reading of a line.

This module is the events' public face: import them from here. The envelope, the base
of the data and the event ids are in agent/events/base.py, the data models by subject
in the other ``agent/events_*.py`` modules. :func:`event_from_dict` maps a parsed line
back to its model through the type registry, and keeps unknown types as
:class:`UnknownData` so nothing read from a file is ever dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from agent.events.base import Event, EventData, UnknownData
from agent.events.json_line import (
    EventParseError,  # raised here, caught by readers
    data_of,
    read_line,
)
from agent.events.mcp import (
    McpServerSummary,
    SessionMcpServersLoadedData,
    SessionMcpServerStatusChangedData,
)
from agent.events.plan import (
    ExitPlanModeCompletedData,
    ExitPlanModeRequestedData,
    PlanAction,
    SessionPlanChangedData,
)
from agent.events.session import (
    WARNING_OUTPUT_TRUNCATED,
    AbortData,
    AbortReason,
    Mode,
    SessionAutopilotStoppedData,
    SessionContextClearedData,
    SessionCustomNotificationData,
    SessionErrorData,
    SessionHandoffData,
    SessionIdleData,
    SessionInfoData,
    SessionModeChangedData,
    SessionModelChangeData,
    SessionResumeData,
    SessionShutdownData,
    SessionStartData,
    SessionTaskCompleteData,
    SessionTitleChangedData,
    SessionWarningData,
    SessionWorkspaceFileChangedData,
    ShutdownCodeChanges,
    SystemMessageData,
    WorkingDirectoryContext,
)
from agent.events.skills import (
    SKILL_MESSAGE_PREFIX,
    SessionSkillsLoadedData,
    SkillInvokedData,
    SkillsLoadedSkill,
)
from agent.events.stream import (
    AssistantIdleData,
    AssistantStreamingDeltaData,
    AssistantToolCallDeltaData,
    ModelCallFailureData,
    ModelCallFinalResultData,
    ModelCallFinishedData,
    ModelCallStartData,
)
from agent.events.subagents import (
    SubagentCompletedData,
    SubagentDeselectedData,
    SubagentFailedData,
    SubagentSelectedData,
    SubagentStartedData,
)
from agent.events.tools import (
    ElicitationCompletedData,
    ElicitationRequestedData,
    ExternalToolCompletedData,
    ExternalToolRequestedData,
    PermissionCompletedData,
    PermissionRequestedData,
    SessionTodosChangedData,
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
    ToolResultPayload,
    ToolUserRequestedData,
    UserInputCompletedData,
    UserInputRequestedData,
)
from agent.events.turns import (
    AgentMode,
    AssistantMessageData,
    AssistantMessageDeltaData,
    AssistantMessageStartData,
    AssistantReasoningData,
    AssistantReasoningDeltaData,
    AssistantTurnEndData,
    AssistantTurnRetryData,
    AssistantTurnStartData,
    ToolRequest,
    UserMessageData,
)
from agent.events.usage import (
    AssistantUsageData,
    CompactionTokensUsed,
    CompactionTrigger,
    SessionCompactionCompleteData,
    SessionCompactionStartData,
    SessionTruncationData,
    SessionUsageCheckpointData,
    SessionUsageInfoData,
)

__all__ = [
    "DATA_TYPES",
    "SKILL_MESSAGE_PREFIX",
    "WARNING_OUTPUT_TRUNCATED",
    "AbortData",
    "AbortReason",
    "AgentMode",
    "AssistantIdleData",
    "AssistantMessageData",
    "AssistantMessageDeltaData",
    "AssistantMessageStartData",
    "AssistantReasoningData",
    "AssistantReasoningDeltaData",
    "AssistantStreamingDeltaData",
    "AssistantToolCallDeltaData",
    "AssistantTurnEndData",
    "AssistantTurnRetryData",
    "AssistantTurnStartData",
    "AssistantUsageData",
    "CompactionTokensUsed",
    "CompactionTrigger",
    "ElicitationCompletedData",
    "ElicitationRequestedData",
    "Event",
    "EventData",
    "EventParseError",
    "ExitPlanModeCompletedData",
    "ExitPlanModeRequestedData",
    "ExternalToolCompletedData",
    "ExternalToolRequestedData",
    "McpServerSummary",
    "Mode",
    "ModelCallFailureData",
    "ModelCallFinalResultData",
    "ModelCallFinishedData",
    "ModelCallStartData",
    "PermissionCompletedData",
    "PermissionRequestedData",
    "PlanAction",
    "SessionAutopilotStoppedData",
    "SessionCompactionCompleteData",
    "SessionCompactionStartData",
    "SessionContextClearedData",
    "SessionCustomNotificationData",
    "SessionErrorData",
    "SessionHandoffData",
    "SessionIdleData",
    "SessionInfoData",
    "SessionMcpServerStatusChangedData",
    "SessionMcpServersLoadedData",
    "SessionModeChangedData",
    "SessionModelChangeData",
    "SessionPlanChangedData",
    "SessionResumeData",
    "SessionShutdownData",
    "SessionSkillsLoadedData",
    "SessionStartData",
    "SessionTaskCompleteData",
    "SessionTitleChangedData",
    "SessionTodosChangedData",
    "SessionTruncationData",
    "SessionUsageCheckpointData",
    "SessionUsageInfoData",
    "SessionWarningData",
    "SessionWorkspaceFileChangedData",
    "ShutdownCodeChanges",
    "SkillInvokedData",
    "SkillsLoadedSkill",
    "SubagentCompletedData",
    "SubagentDeselectedData",
    "SubagentFailedData",
    "SubagentSelectedData",
    "SubagentStartedData",
    "SystemMessageData",
    "ToolErrorPayload",
    "ToolExecutionCompleteData",
    "ToolExecutionPartialResultData",
    "ToolExecutionStartData",
    "ToolRequest",
    "ToolResultPayload",
    "ToolUserRequestedData",
    "UnknownData",
    "UserInputCompletedData",
    "UserInputRequestedData",
    "UserMessageData",
    "WorkingDirectoryContext",
    "event_from_dict",
    "event_from_json",
]

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
        SessionWorkspaceFileChangedData,
        SessionUsageCheckpointData,
        SessionCustomNotificationData,
        SessionMcpServersLoadedData,
        SessionMcpServerStatusChangedData,
        SessionSkillsLoadedData,
        SkillInvokedData,
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
