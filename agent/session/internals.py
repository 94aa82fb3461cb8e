"""What the session's own modules (opening, fold, runner, ``!`` commands) use of a
:class:`~agent.session.session.Session`: its state, declared once here so that they
depend on this description and not on the class that imports them.

The underscored members are the session's bookkeeping, shared by these modules
only; nothing outside ``agent/session/`` touches them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from agent.events.schema import Event, EventData, Mode, SessionErrorData, ToolRequest
from agent.events.usage_ledger import UsageLedger
from agent.extensions.mcp.servers import McpServers
from agent.log.lock import SessionLock
from agent.log.store import SessionStore
from agent.log.writer import SessionWriter
from agent.loop.compaction import ContextKeeper
from agent.loop.history import History
from agent.loop.host import LoopHost
from agent.models.base import ModelClient
from agent.permissions.level import PermissionLevelChoice
from agent.sandbox.policy import Sandbox
from agent.session.extensions import SessionExtensions
from agent.session.fanout import EventFanout
from agent.session.plan_mode import PlanMode
from agent.session.tail_resume import ResumePlan
from agent.session.todos import TodoList
from agent.tools.base import ToolContext, ToolResult
from agent.tools.registry import ToolRegistry


class Stoppable(Protocol):
    """The prompt runner (agent/session/runner.py), as closing sees it."""

    async def stop(self) -> None: ...


class SessionInternals(LoopHost, Protocol):
    """A session as the loop sees it (:class:`~agent.loop.host.LoopHost`), and more."""

    id: str
    model: ModelClient
    cwd: Path
    store: SessionStore | None
    history: History
    usage: UsageLedger
    title: str
    sandbox: Sandbox | None
    plan: PlanMode
    todos: TodoList
    extensions: SessionExtensions
    permission_level: PermissionLevelChoice
    restored: int
    resumed_from: ResumePlan | None
    # bookkeeping folded from the events (agent/session/fold.py)
    _mode: Mode
    _model_calls: int
    _turns: int
    _tool_calls: int
    _open_turn: str | None
    _first_prompt: str
    _outcome: str
    # the log: its writer and lock, and what the metadata file keeps
    _writer: SessionWriter | None
    _lock: SessionLock | None
    _last_persisted_id: str | None
    fanout: EventFanout
    # what closing needs (agent/session/closing.py)
    mcp: McpServers | None
    context: ContextKeeper
    discard_unused: bool
    _sent: bool
    _start_error: SessionErrorData | None
    _created_here: bool
    _forked_from: dict[str, Any] | None
    _started_at: str

    @property
    def mode(self) -> Mode: ...

    @property
    def _runner(self) -> Stoppable: ...

    @property
    def halted(self) -> SessionErrorData | None: ...

    def emit(self, data: EventData, *, at: str | None = None) -> Event: ...

    async def persist(self) -> None: ...

    def tools(self) -> ToolRegistry: ...

    def tool_context(self, report_progress: Callable[[str], None]) -> ToolContext: ...

    async def authorize(self, request: ToolRequest) -> ToolResult | None: ...

    def _attach(self, writer: SessionWriter) -> None: ...

    def _fold(self, event: Event) -> None: ...

    def _save_meta(self) -> None: ...

    def _hold_opening(self) -> None: ...
