"""``task``: start a sub-agent (Copilot CLI's tool of that name and schema).

The sub-agent runs in-process as a loop of its own (agent/session/subagents.py):
its own conversation, its own turns, the tools its agent type allows. Its final
answer is this call's result; its failure is this call's failed result. Several
``task`` calls of one reply run at once (:attr:`Tool.concurrent`), as many as the
session allows.

The tool knows its runner only through :class:`SubagentLauncher`, given to its
constructor: the tools package never imports the session.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult


@dataclass(frozen=True, slots=True)
class AgentTypeInfo:
    """An agent type the model may start: its name and what it is for."""

    name: str
    description: str


class SubagentLauncher(Protocol):
    """Who runs sub-agents (the session's :class:`~agent.session.subagents.SubagentRunner`)."""

    def agent_types(self) -> list[AgentTypeInfo]: ...

    async def run_task(self, args: TaskArgs, tool_call_id: str) -> ToolResult: ...


class TaskArgs(ToolArgs):
    description: str = Field(
        description="A short (3-5 word) description of the task, shown in the UI."
    )
    prompt: str = Field(description="The task, with complete context: the agent sees nothing else.")
    agent_type: str = Field(description="The type of agent to use.")
    name: str | None = Field(
        default=None,
        description="A short name for the agent. Used to generate a human-readable agent ID "
        '(e.g., "math-helper").',
    )
    model: str | None = Field(
        default=None, description="Optional model for the agent (default: the session's)."
    )
    mode: Literal["sync", "background"] | None = Field(
        default=None,
        description='"sync" (the default): wait for the agent and get its answer as the '
        'result. "background" is accepted and runs the same way: several task calls in '
        "one reply already run in parallel.",
    )
    reasoning_effort: str | None = Field(default=None, description="Ignored.")
    context_tier: Literal["default", "long_context"] | None = Field(
        default=None, description="Ignored."
    )


_ACCEPTED_ONLY = ("model", "mode", "reasoning_effort", "context_tier")


class TaskTool(Tool):
    name = "task"
    description = (
        "Start a sub-agent on a task: it works with its own context and tools and its "
        "final answer is the result. Use it for searches that would fill your context "
        "and for independent work; several task calls in one reply run in parallel."
    )
    # The sub-agent's own calls pass the permission gate; starting one asks nothing.
    kind = "read"
    concurrent: ClassVar[bool] = True
    Args = TaskArgs

    def __init__(self, launcher: SubagentLauncher) -> None:
        self._launcher = launcher

    def may_have_effects(self) -> bool:
        # Its sub-agent's own tools record their requests before their effects.
        return False

    def schema(self) -> dict[str, Any]:
        schema = copy.deepcopy(super().schema())
        params = schema["function"]["parameters"]
        # Accepted from a model that knows Copilot's schema, not offered: every token
        # of a tool's schema is sent with every request.
        for unoffered in _ACCEPTED_ONLY:
            params["properties"].pop(unoffered, None)
        types = self._launcher.agent_types()
        kinds = params["properties"]["agent_type"]
        kinds["enum"] = [t.name for t in types]
        kinds["description"] += " " + "; ".join(f"{t.name}: {t.description}" for t in types)
        return schema

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return await self._launcher.run_task(args, ctx.tool_call_id)
