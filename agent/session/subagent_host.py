"""What a sub-agent's loop runs against: a :class:`~agent.loop.host.LoopHost` of its own.

It has its own conversation (a :class:`~agent.loop.history.History` fed with its own
events only), its own turns (counted from 0, apart from the session's), its own
context keeper (it compacts its own history) and its kind's tools. The rest is the
session's: every event goes through the session's ``emit`` with the run's
``agentId`` (so secrets are masked, usage billed and the log written as for any
event), tool calls pass a permission gate with the session's rules and its asker,
commands run in the session's sandbox, and the session's tool hooks see its calls.

The loop sees an interactive host: it never nudges a sub-agent to go on, and a
sub-agent asks no questions. Whether the gate may ask the user is the session's
mode's call (autopilot never asks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.events.schema import (
    AssistantTurnRetryData,
    AssistantTurnStartData,
    AssistantUsageData,
    Event,
    EventData,
    Mode,
    SessionErrorData,
    ToolExecutionCompleteData,
    ToolRequest,
)
from agent.loop.compaction import ContextKeeper
from agent.loop.history import History
from agent.loop.hooks import LoopHooks, ToolAfterword, ToolDecision
from agent.models.base import ModelClient
from agent.permissions.gate import PermissionGate
from agent.tools.base import ToolContext, ToolResult
from agent.tools.registry import ToolRegistry


class SubagentParent(Protocol):
    """What a sub-agent uses of its session."""

    hooks: LoopHooks
    permissions: PermissionGate
    text_tool_calls: bool

    @property
    def mode(self) -> Mode: ...

    @property
    def halted(self) -> SessionErrorData | None: ...

    def emit(
        self, data: EventData, *, at: str | None = None, agent_id: str | None = None
    ) -> Event: ...

    async def persist(self) -> None: ...

    async def recorded(self) -> None: ...

    def tool_context(self, report_progress: Callable[[str], None]) -> ToolContext: ...


@dataclass(slots=True)
class RunUsage:
    """What one sub-agent run used: its model calls, tokens, cost and tool calls."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    models: set[str] = field(default_factory=set)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, usage: AssistantUsageData) -> None:
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        self.cost += usage.cost or 0.0
        if usage.model:
            self.models.add(usage.model)


class SubagentHooks(LoopHooks):
    """The session's tool hooks see a sub-agent's calls; its prompt and its stop are
    the run's own business."""

    def __init__(self, parent: LoopHooks) -> None:
        self._parent = parent

    async def pre_tool_use(self, request: ToolRequest) -> ToolDecision | None:
        return await self._parent.pre_tool_use(request)

    async def post_tool_use(self, request: ToolRequest, result: ToolResult) -> ToolAfterword | None:
        return await self._parent.post_tool_use(request, result)


class _GateView:
    """The sub-agent as its permission gate sees it: its events and tools, the
    session's mode (which decides whether a human may be asked)."""

    def __init__(self, host: SubagentHost) -> None:
        self._host = host

    @property
    def mode(self) -> Mode:
        return self._host.parent.mode

    def emit(self, data: EventData) -> Event:
        return self._host.emit(data)

    def tools(self) -> ToolRegistry:
        return self._host.tools()

    def tool_context(self, report_progress: Callable[[str], None]) -> ToolContext:
        return self._host.tool_context(report_progress)


class SubagentHost:
    """A :class:`~agent.loop.host.LoopHost` for one sub-agent run."""

    def __init__(
        self,
        parent: SubagentParent,
        agent_id: str,
        *,
        model: ModelClient,
        tools: ToolRegistry,
        system_prompt: str,
        new_meter: Callable[[ModelClient], Any],
    ) -> None:
        self.parent = parent
        self.agent_id = agent_id
        self.model = model
        self.history = History()
        self.hooks: LoopHooks = SubagentHooks(parent.hooks)
        self.usage = RunUsage()
        self.text_tool_calls = parent.text_tool_calls  # the same model server as its session's
        self._tools = tools
        self._system_prompt = system_prompt
        self.context = ContextKeeper(self, new_meter(model))
        gate = PermissionGate(_GateView(self), parent.permissions.policy)
        gate.asker = parent.permissions.asker
        gate.ask_in_every_mode = parent.permissions.ask_in_every_mode
        self._gate = gate

    # --- what the loop reads ------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return "interactive"  # never nudged on, whatever the session's mode

    @property
    def model_calls(self) -> int:
        return self.usage.model_calls

    @property
    def max_autopilot_continues(self) -> int:
        return 0

    @property
    def halted(self) -> SessionErrorData | None:
        return self.parent.halted

    def emit(self, data: EventData) -> Event:
        event = self.parent.emit(data, agent_id=self.agent_id)
        # Its own conversation, as a session's history reads its own events.
        self.history.apply(event.model_copy(update={"agent_id": None}))
        match event.data:
            case AssistantTurnStartData() | AssistantTurnRetryData():
                self.usage.model_calls += 1
            case AssistantUsageData() as usage:
                self.usage.add(usage)
            case ToolExecutionCompleteData():
                self.usage.tool_calls += 1
            case _:
                pass
        return event

    async def persist(self) -> None:
        await self.parent.persist()

    async def recorded(self) -> None:
        await self.parent.recorded()

    def tools(self) -> ToolRegistry:
        return self._tools

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self._tools.schemas()

    def tool_context(self, report_progress: Callable[[str], None]) -> ToolContext:
        ctx = self.parent.tool_context(report_progress)
        ctx.questions = None  # nobody to ask: a sub-agent has no ask_user
        ctx.todos = None
        return ctx

    def system_prompt(self) -> str:
        return self._system_prompt

    async def authorize(self, request: ToolRequest) -> ToolResult | None:
        # The user switched the session to plan mode while this run went on: from then
        # on it may only read, as its session may.
        tool = self._tools.get(request.name)
        if self.parent.mode == "plan" and tool is not None and tool.kind != "read":
            return ToolResult.failure(
                f"The session is in plan mode, which is read-only: {request.name} cannot "
                "run now. Answer with what you found so far."
            )
        return await self._gate.check(request)

    def take_steering(self) -> list[tuple[str, str | None, list[dict[str, Any]] | None]]:
        return []
