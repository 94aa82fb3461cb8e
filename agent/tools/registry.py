"""The tools offered to the model, and running one call without ever raising on its mistakes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from agent.tools.ask_user import AskUserTool
from agent.tools.base import Tool, ToolContext, ToolError, ToolResult
from agent.tools.bash import BashTool
from agent.tools.compact_schema import compact_schema
from agent.tools.create import CreateTool
from agent.tools.edit import EditTool
from agent.tools.glob import GlobTool
from agent.tools.grep import GrepTool
from agent.tools.task_complete import TaskCompleteTool
from agent.tools.todos import UpdateTodosTool
from agent.tools.view import ViewTool

_MAX_SHOWN_INPUT = 80


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        # Building a JSON schema costs milliseconds; the loop asks every turn.
        self._schemas: list[dict[str, Any]] | None = None
        # Tools offered before and gone since (an MCP server that went down): what a
        # call to one says instead of "unknown tool".
        self._gone: dict[str, str] = {}
        self._compact = False
        for tool in tools:
            self.register(tool)

    def mark_gone(self, name: str, why: str) -> None:
        self._gone[name] = why

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._schemas = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        if self._schemas is None:
            schemas = [tool.schema() for tool in self._tools.values()]
            self._schemas = [compact_schema(s) for s in schemas] if self._compact else schemas
        return self._schemas

    @property
    def compact(self) -> bool:
        """Whether :meth:`schemas` are the short ones (agent/tools/compact_schema.py)."""
        return self._compact

    @compact.setter
    def compact(self, value: bool) -> None:
        if value != self._compact:
            self._compact = value
            self._schemas = None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)


def default_tools(autopilot: bool) -> ToolRegistry:
    tools: list[Tool] = [
        ViewTool(),
        GrepTool(),
        GlobTool(),
        CreateTool(),
        EditTool(),
        BashTool(),
        AskUserTool(),
        UpdateTodosTool(),
    ]
    if autopilot:
        tools.append(TaskCompleteTool())
    return ToolRegistry(tools)


def rule_tool_names() -> list[str]:
    """The built-in tools a permission rule can name: those that ask (writes, shell)."""
    registry = default_tools(autopilot=True)
    asking = (registry.get(name) for name in registry.names())
    return [tool.name for tool in asking if tool is not None and tool.kind != "read"]


async def execute(
    registry: ToolRegistry,
    name: str,
    raw_arguments: str | dict[str, Any] | None,
    ctx: ToolContext,
) -> ToolResult:
    """Run one tool call. Model mistakes and tool crashes become failed results.

    asyncio.CancelledError is not an Exception, so cancellation still propagates.
    """
    tool = registry.get(name)
    if tool is None and name in registry._gone:
        return ToolResult.failure(registry._gone[name])
    if tool is None:
        available = ", ".join(registry.names()) or "none"
        return ToolResult.failure(f"unknown tool {name!r}; available tools: {available}")
    arguments = _parse_arguments(name, raw_arguments)
    if isinstance(arguments, str):
        return ToolResult.failure(arguments)
    try:
        args = tool.Args.model_validate(arguments)
    except ValidationError as exc:
        return ToolResult.failure(f"invalid arguments for {name}: {_describe(exc, tool)}")
    try:
        return await tool.run(args, ctx)
    except ToolError as exc:
        return ToolResult.failure(str(exc))
    except Exception as exc:
        return ToolResult.failure(f"tool {name} crashed: {type(exc).__name__}: {exc}")


def _parse_arguments(name: str, raw: str | dict[str, Any] | None) -> dict[str, Any] | str:
    """The arguments as a dict, or the message explaining why they are unusable."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            return (
                f"arguments for {name} are not valid JSON ({exc.msg} at line {exc.lineno} "
                f"column {exc.colno}); send a JSON object of the tool's parameters"
            )
    if not isinstance(raw, dict):
        return (
            f"arguments for {name} must be a JSON object of the tool's parameters, "
            f"got {_json_type(raw)}"
        )
    return raw


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


def _describe(exc: ValidationError, tool: Tool) -> str:
    problems: list[str] = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "missing":
            problems.append(f"missing required field '{where}'")
        elif error["type"] == "extra_forbidden":
            problems.append(f"unknown field '{where}'")
        else:
            shown = repr(error.get("input"))
            if len(shown) > _MAX_SHOWN_INPUT:
                shown = shown[:_MAX_SHOWN_INPUT] + "…"
            problems.append(f"field '{where}': {error['msg']} (got {shown})")
    fields = ", ".join(tool.Args.model_fields) or "none"
    return "; ".join(problems) + f". Parameters are: {fields}"
