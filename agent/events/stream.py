"""Streaming and model-call telemetry.

Copilot CLI writes these to stdout with ``-p --output-format json``; loopdeck reads
them (agent/transcript/stream_fold.py folds them into the turn and the tool call they belong
to) and writes none of them.
"""

from __future__ import annotations

from agent.events.base import EventData


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
