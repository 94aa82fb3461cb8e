"""Sub-agents, and the custom agent the user picks for the session.

A sub-agent runs inside a tool call (Copilot's ``task``): its own events carry the
envelope's ``agentId`` (see agent/transcript/subagents.py); started, completed and failed frame
its run.
"""

from __future__ import annotations

from agent.events.base import EventData


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
