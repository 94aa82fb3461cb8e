"""Sub-agents: the runs ``task`` starts, each its own loop inside the session.

:class:`SubagentRunner` is the session's :class:`~agent.tools.task.SubagentLauncher`.
A run is framed as Copilot CLI writes it: ``subagent.started``, the run's own events
(each with the envelope's ``agentId`` = the ``task`` call's id), then
``subagent.completed`` or ``subagent.failed``; the call's result is the run's final
answer. So the transcript's fold (agent/transcript/subagents.py) draws a live run
exactly as it draws one read from Copilot's logs, inside its ``task`` card.

At most :attr:`SubagentRunner.max_concurrent` runs at once (the others wait their
turn); an abort cancels every run, each ending ``cancelled``. A run that fails (the
provider, its loop, a bug) is its call's failed result: the session goes on.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agent.events.schema import SubagentCompletedData, SubagentFailedData, SubagentStartedData
from agent.extensions.agents.definition import CustomAgent
from agent.loop.turn_loop import TurnLoop
from agent.models.base import ModelClient
from agent.session.agent_kinds import BUILT_IN, AgentKind
from agent.session.limits import SessionLimits
from agent.session.subagent_host import RunUsage, SubagentHost, SubagentParent
from agent.tools.base import ToolResult
from agent.tools.registry import ToolRegistry
from agent.tools.task import AgentTypeInfo, TaskArgs

DEFAULT_MAX_CONCURRENT = 4
# Copilot CLI's own setting for the bound, honoured here too.
MAX_CONCURRENT_VAR = "COPILOT_SUBAGENT_MAX_CONCURRENT"
NO_RESPONSE = "Agent completed but produced no response."


@runtime_checkable
class ScriptsSubagents(Protocol):
    """A model that scripts its sub-agents' turns apart (the scripted model)."""

    def for_subagent(self, name: str, agent_type: str) -> ModelClient: ...


@dataclass(slots=True)
class SubagentRun:
    """One run, as the runner keeps it: who, how it went, what it used."""

    agent_id: str
    kind: AgentKind
    description: str
    usage: RunUsage
    status: str = "running"  # completed, failed, cancelled
    result: str | None = None


def max_concurrent_from_env(environ: dict[str, str] | None = None) -> int:
    """The bound from ``COPILOT_SUBAGENT_MAX_CONCURRENT`` (1–256), else the default."""
    raw = (environ if environ is not None else os.environ).get(MAX_CONCURRENT_VAR, "")
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_CONCURRENT
    return min(max(value, 1), 256)


class SubagentRunner:
    def __init__(
        self,
        parent: SubagentParent,
        *,
        model: Callable[[], ModelClient],
        offered: Callable[[], ToolRegistry],
        prompt_for: Callable[[ModelClient, list[str]], str],
        limits: Callable[[Callable[[], ModelClient]], SessionLimits] = SessionLimits,
        max_concurrent: int | None = None,
        custom_agents: Callable[[], Iterable[CustomAgent]] | None = None,
    ) -> None:
        self._parent = parent
        self._model = model  # the session's model now
        self._offered = offered  # the session's tools now
        self._prompt_for = prompt_for  # loopdeck's system prompt for a model and tools
        self._limits = limits
        self._kinds: dict[str, AgentKind] = {kind.name: kind for kind in BUILT_IN}
        # The custom agents, read on first use (None: not yet).
        self._custom: Callable[[], Iterable[CustomAgent]] | None = custom_agents
        self._max = max_concurrent or max_concurrent_from_env()
        self._slots = asyncio.Semaphore(self._max)
        self.runs: dict[str, SubagentRun] = {}
        # Makes the client of a model a kind or a call names (the app's); None: the
        # session's model serves every run.
        self.model_factory: Callable[[str], ModelClient] | None = None

    # --- configuration -----------------------------------------------------------

    @property
    def max_concurrent(self) -> int:
        return self._max

    @max_concurrent.setter
    def max_concurrent(self, value: int) -> None:
        """Change the bound; runs already waiting keep the old one."""
        self._max = max(1, value)
        self._slots = asyncio.Semaphore(self._max)

    def add_kinds(self, kinds: Iterable[AgentKind]) -> None:
        """Offer more agent types; a name taken replaces the kind."""
        for kind in kinds:
            self._kinds[kind.name] = kind

    def use_custom_agents(self, agents: Iterable[CustomAgent]) -> None:
        """Offer these custom agents (those the model may invoke) as agent types, in
        place of the ones read from disk."""
        self._custom = None
        self._kinds = {kind.name: kind for kind in BUILT_IN}
        self.add_kinds(AgentKind.from_custom(a) for a in agents if not a.disable_model_invocation)

    def _kinds_now(self) -> dict[str, AgentKind]:
        if self._custom is not None:
            read, self._custom = self._custom, None
            self.use_custom_agents(read())
        return self._kinds

    def kind(self, name: str) -> AgentKind | None:
        return self._kinds_now().get(name)

    def agent_types(self) -> list[AgentTypeInfo]:
        return [AgentTypeInfo(k.name, k.description) for k in self._kinds_now().values()]

    # --- a run -----------------------------------------------------------------------

    async def run_task(self, args: TaskArgs, tool_call_id: str) -> ToolResult:
        kinds = self._kinds_now()
        kind = kinds.get(args.agent_type)
        if kind is None:
            valid = ", ".join(kinds)
            return ToolResult.failure(
                f"Unknown agent_type: {args.agent_type}. Valid types are: {valid}"
            )
        async with self._slots:
            return await self._run(kind, args, tool_call_id)

    async def _run(self, kind: AgentKind, args: TaskArgs, agent_id: str) -> ToolResult:
        parent = self._parent
        model = self._model_for(kind, args)
        started = time.monotonic()
        parent.emit(
            SubagentStartedData(
                tool_call_id=agent_id,
                agent_name=kind.name,
                agent_display_name=kind.display_name,
                agent_description=kind.description,
                model=model.name,
            ),
            agent_id=agent_id,
        )
        tools = kind.registry(self._offered())
        prompt = f"{kind.prompt}\n\n{self._prompt_for(model, tools.names())}"
        host = SubagentHost(
            parent,
            agent_id,
            model=model,
            tools=tools,
            system_prompt=prompt,
            new_meter=lambda m: self._limits(lambda: m).new_meter(),
        )
        run = SubagentRun(agent_id, kind, args.description, host.usage)
        self.runs[agent_id] = run
        try:
            outcome = await TurnLoop(host).run(args.prompt)
        except Exception as exc:  # a bug in the run is its call's failure, not the session's
            return self._failed(run, model, started, f"{type(exc).__name__}: {exc}")
        finally:
            await host.context.close()
        task = asyncio.current_task()
        if outcome.aborted or (task is not None and task.cancelling()):
            # The loop recorded its abort; the run ends cancelled and the cancel goes on.
            self._end(run, model, started, cancelled=True)
            raise asyncio.CancelledError
        if outcome.error is not None:
            return self._failed(run, model, started, outcome.error.message)
        answer = (outcome.final_text or "").strip()
        if not answer:
            return self._failed(run, model, started, NO_RESPONSE)
        run.result = answer
        self._end(run, model, started)
        return ToolResult(content=answer)

    def _model_for(self, kind: AgentKind, args: TaskArgs) -> ModelClient:
        session_model = self._model()
        wanted = args.model or kind.model
        if wanted and self.model_factory is not None and wanted != session_model.name:
            try:
                return self.model_factory(wanted)
            except Exception:  # a model no provider knows: the session's serves instead
                return session_model
        if isinstance(session_model, ScriptsSubagents):
            return session_model.for_subagent(args.name or kind.name, kind.name)
        return session_model

    def _end(
        self, run: SubagentRun, model: ModelClient, started: float, *, cancelled: bool = False
    ) -> None:
        run.status = "cancelled" if cancelled else "completed"
        self._parent.emit(
            SubagentCompletedData(
                tool_call_id=run.agent_id,
                agent_name=run.kind.name,
                agent_display_name=run.kind.display_name,
                model=model.name,
                total_tool_calls=run.usage.tool_calls,
                total_tokens=run.usage.total_tokens,
                duration_ms=round((time.monotonic() - started) * 1000),
                cancelled=True if cancelled else None,
            ),
            agent_id=run.agent_id,
        )

    def _failed(
        self, run: SubagentRun, model: ModelClient, started: float, error: str
    ) -> ToolResult:
        run.status = "failed"
        self._parent.emit(
            SubagentFailedData(
                tool_call_id=run.agent_id,
                agent_name=run.kind.name,
                agent_display_name=run.kind.display_name,
                model=model.name,
                total_tool_calls=run.usage.tool_calls,
                total_tokens=run.usage.total_tokens,
                duration_ms=round((time.monotonic() - started) * 1000),
                error=error,
            ),
            agent_id=run.agent_id,
        )
        return ToolResult.failure(error)
