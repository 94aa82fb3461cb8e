"""A user's message and the assistant's turn: its messages and reasoning, streamed
and whole, and the tool calls it asks for.
"""

from __future__ import annotations

from typing import Any, Literal

from agent.events.base import EventData

# A user message's mode also says "shell" for a ``!command`` the user ran themselves.
AgentMode = Literal["interactive", "autopilot", "plan", "shell"]


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
    # loopdeck's: the model wrote this call in its reply's text, and it was read from
    # there (a server that returned no structured call; see agent/loop/text_tool_calls.py).
    recovered_from_text: bool | None = None


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
