"""What the turn loop needs from its session: the :class:`LoopHost` protocol.

Its own module so the loop's parts (the model call, the tool round) can name their
host without importing the loop itself.
"""

from __future__ import annotations

from typing import Any, Protocol

from agent.events.schema import Event, EventData, Mode, SessionErrorData, ToolRequest
from agent.loop.compaction import ContextKeeper
from agent.loop.history import History
from agent.loop.hooks import LoopHooks
from agent.models.base import ModelClient
from agent.tools.base import ToolContext, ToolResult
from agent.tools.registry import ToolRegistry


class LoopHost(Protocol):
    """What the loop needs from its session."""

    history: History
    model: ModelClient
    hooks: LoopHooks
    # Read tool calls the model wrote in its reply's text (agent/loop/text_tool_calls.py).
    text_tool_calls: bool

    @property
    def mode(self) -> Mode: ...

    @property
    def model_calls(self) -> int:
        """Model calls so far in the session (turn starts + retries), persisted."""
        ...

    @property
    def max_autopilot_continues(self) -> int: ...

    def emit(self, data: EventData) -> Event: ...

    @property
    def halted(self) -> SessionErrorData | None:
        """Why the host stopped the loop itself (a log it cannot write), if it did."""
        ...

    async def persist(self) -> None:
        """Make every event emitted so far durable (written and fsynced).

        Raises :class:`~agent.log.writer.LogWriteError` when the log cannot be written."""
        ...

    async def recorded(self) -> None:
        """Wait until every event emitted so far is written (not fsynced): before
        each model call and each tool, so the loop never runs ahead of a log that
        failed. Raises :class:`~agent.log_writer.LogWriteError` as :meth:`persist`."""
        ...

    def tools(self) -> ToolRegistry: ...

    def tool_context(self, report_progress: Any) -> ToolContext: ...

    def system_prompt(self) -> str: ...

    @property
    def context(self) -> ContextKeeper:
        """Measures each request and keeps it inside the model's window."""
        ...

    async def authorize(self, request: ToolRequest) -> ToolResult | None:
        """None if the call may run, else the failed result the model reads."""
        ...

    def take_steering(
        self,
    ) -> list[tuple[str, str | None, list[dict[str, Any]] | None]]:
        """Messages sent into the running loop since last asked: (text, message id)."""
        ...
