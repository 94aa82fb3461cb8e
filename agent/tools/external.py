"""Tools a connected app defines: offered to the model like any other, run by the app.

Calling one emits ``external_tool.requested`` (with a request id) and waits for the
app's answer (:meth:`ExternalToolCalls.answer`). ``external_tool.completed`` follows
either way, so an abort also tells the app the call is off.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import ConfigDict

from agent.events.schema import (
    Event,
    EventData,
    ExternalToolCompletedData,
    ExternalToolRequestedData,
)
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult


class ExternalToolArgs(ToolArgs):
    """Whatever the model sent; the app validates against its own schema."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class ExternalToolSpec:
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None  # JSON schema of the arguments
    skip_permission: bool = False
    overrides_built_in_tool: bool = False


class ExternalToolCalls:
    """The calls of one session's external tools that await an answer."""

    def __init__(self, emit: Callable[[EventData], Event], session_id: str) -> None:
        self._emit = emit
        self._session_id = session_id
        self._pending: dict[str, asyncio.Future[ToolResult]] = {}

    async def call(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        request_id = str(uuid.uuid4())
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._emit(
            ExternalToolRequestedData(
                request_id=request_id,
                session_id=self._session_id,
                tool_call_id=ctx.tool_call_id,
                tool_name=name,
                arguments=arguments,
                working_directory=str(ctx.cwd),
            )
        )
        try:
            return await future
        finally:
            del self._pending[request_id]
            self._emit(ExternalToolCompletedData(request_id=request_id))

    def answer(self, request_id: str, result: ToolResult) -> bool:
        """Settle a pending call. False if there is no such call (or it is settled)."""
        future = self._pending.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(result)
        return True

    def pending(self) -> list[str]:
        return list(self._pending)


class ExternalTool(Tool):
    kind = "custom-tool"
    description = ""
    Args = ExternalToolArgs
    parameters: ClassVar[dict[str, Any] | None] = None

    def __init__(self, calls: ExternalToolCalls) -> None:
        self._calls = calls

    def schema(self) -> dict[str, Any]:
        params = dict(self.parameters or {"type": "object", "properties": {}})
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def may_have_effects(self) -> bool:
        return True  # the app's own code runs: even one asked as a read may change things

    async def run(self, args: ExternalToolArgs, ctx: ToolContext) -> ToolResult:
        return await self._calls.call(self.name, args.model_dump(), ctx)


def external_tool(spec: ExternalToolSpec, calls: ExternalToolCalls) -> ExternalTool:
    """A tool instance for ``spec`` whose calls go to ``calls``."""
    attrs: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        # The app said this tool needs no permission: checked like a read.
        "kind": "read" if spec.skip_permission else "custom-tool",
    }
    cls = type(f"ExternalTool_{spec.name}", (ExternalTool,), attrs)
    tool: ExternalTool = cls(calls)
    return tool
