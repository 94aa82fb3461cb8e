"""Session: send / send_and_wait / abort / set_mode / subscribe. Owns the history.

Every event goes through :meth:`Session.emit`: it is folded into the session's own
state and history, appended to ``events.jsonl`` when persisted, and handed to the
subscribers once the batch that holds it is written, so that no subscriber (the UI,
the headless printer, an SDK client) ever sees an event a crash could still lose.
Resume reads the log back through the same fold, so live and resumed sessions
cannot drift apart.

A failed write of the log (a full disk) stops the running loop at once: it ends
with ``session.error`` (``storage``) and ``session.idle``, which are shown but can no
longer be written, and every later send fails the same way.

Its parts: opening and resuming (:mod:`agent.session.opening`), the prompts' runner
(:mod:`agent.session.runner`), the fold of its own state (:mod:`agent.session.fold`)
and its model's context limits (:mod:`agent.session.limits`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.events.base import now_iso
from agent.events.schema import (
    AssistantTurnEndData,
    AssistantUsageData,
    Event,
    EventData,
    Mode,
    SessionCompactionCompleteData,
    SessionContextClearedData,
    SessionErrorData,
    SessionModeChangedData,
    SessionModelChangeData,
    SessionResumeData,
    SessionTitleChangedData,
    SessionWarningData,
    ToolExecutionCompleteData,
    ToolRequest,
    WorkingDirectoryContext,
)
from agent.events.usage_ledger import UsageLedger
from agent.log.lock import SessionLock
from agent.log.store import SessionStore
from agent.log.writer import LogWriteError, SessionWriter
from agent.loop.compact_prompt import wants_compact
from agent.loop.compaction import ContextKeeper
from agent.loop.compaction_settings import CompactionSettings
from agent.loop.history import History
from agent.loop.hooks import LoopHooks
from agent.loop.system_prompt import build_system_prompt
from agent.loop.turn_loop import DEFAULT_MAX_CONTINUES, LoopOutcome
from agent.models.base import ModelClient
from agent.permissions.gate import PermissionGate
from agent.permissions.level import PermissionLevelChoice
from agent.permissions.rules import PermissionPolicy
from agent.sandbox.policy import Sandbox
from agent.sandbox.secrets import EnvFilter, SecretMasker
from agent.session.closing import close_session
from agent.session.extensions import SessionExtensions
from agent.session.fanout import EventFanout, Subscriber
from agent.session.fold import fold_state
from agent.session.limits import SessionLimits
from agent.session.opening import (
    resume_locked,
    save_meta,
    start_new,
    working_context,
)
from agent.session.plan_mode import PlanMode
from agent.session.runner import Prompt, PromptRunner
from agent.session.shell_escape import run_user_command
from agent.session.subagents import SubagentRunner
from agent.session.tail_resume import ResumePlan
from agent.session.todos import TodoList
from agent.session.toolbox import ModeToolbox
from agent.session.user_input import UserQuestions
from agent.tools.base import ToolContext, ToolResult
from agent.tools.exit_plan_mode import ExitPlanModeTool
from agent.tools.registry import ToolRegistry, default_tools
from agent.tools.task import TaskTool

if TYPE_CHECKING:  # the MCP SDK loads only when a session has servers
    from agent.extensions.agents.definition import CustomAgent
    from agent.extensions.mcp.config import McpConfig
    from agent.extensions.mcp.servers import McpServers

log = logging.getLogger(__name__)


# What opening a resumed session records (agent.session_open) and what the app changes
# on open (the mode it starts in, the model picked): held until the session is used.
OPENING_TYPES = (
    SessionResumeData,
    SessionModeChangedData,
    SessionModelChangeData,
    SessionWarningData,
)


class Session:
    def __init__(
        self,
        *,
        session_id: str,
        model: ModelClient,
        cwd: Path,
        mode: Mode = "interactive",
        store: SessionStore | None = None,
        max_autopilot_continues: int = DEFAULT_MAX_CONTINUES,
        extra_dirs: list[Path] | None = None,
        registry_factory: Callable[[Mode], ToolRegistry] | None = None,
        policy: PermissionPolicy | None = None,
        sandbox: Sandbox | None = None,
        env_filter: EnvFilter | None = None,
    ) -> None:
        self.id = session_id
        self.model = model
        # Tool calls the model writes in its text are read (see agent/loop/text_tool_calls.py).
        self.text_tool_calls = False
        self._prompt_style = "auto"  # "full", "compact" or "auto" (use_system_prompt)
        self.cwd = cwd.resolve()
        self.extra_dirs = [d.resolve() for d in extra_dirs or []]
        self.store = store
        self.history = History()
        self._mode: Mode = mode
        self._max_continues = max_autopilot_continues
        self._writer: SessionWriter | None = None
        self._lock: SessionLock | None = None  # one writer per session (agent.log.lock)
        self.fanout = EventFanout()  # who hears the events, and the backlog for late ones
        self._last_persisted_id: str | None = None
        # Set when the log can no longer be written: the loop stops, sends fail.
        self._storage_error: SessionErrorData | None = None
        self._model_calls = 0
        self._turns = 0
        self._tool_calls = 0
        self.usage = UsageLedger()  # cumulative, restored on resume from the checkpoints
        self._outcome = "in progress"
        # While a resumed session is only looked at: the events of opening it, shown but
        # not yet written (see _hold_opening). None once it is used, or never held.
        self._held: list[Event] | None = None
        self._open_turn: str | None = None
        self._first_prompt = ""
        self.title = ""  # /rename
        self._created_here = False  # by create(), not resume(): ours to discard if empty
        self._start_error: SessionErrorData | None = None  # its first error
        # A fork opened by this process (agent/log/fork.py): discarded too if nothing is sent.
        self.discard_unused = False
        self._sent = False
        self._forked_from: dict[str, Any] | None = None  # kept in the metadata file
        self._started_at = now_iso()
        self._runner = PromptRunner(self)  # the prompts, one loop at a time
        self.permissions = PermissionGate(self, policy)
        # Autopilot's permission level, asked once by the app (see agent.permissions.level).
        self.permission_level = PermissionLevelChoice(self)
        # The plan, and the question that leaves plan mode (agent.session.plan_mode).
        self.plan = PlanMode(self)
        # The tools and the system prompt of each mode.
        # Sub-agents (the task tool): each its own loop, inside this session.
        self.subagents = SubagentRunner(
            self,
            model=lambda: self.model,
            offered=lambda: self.tools_for("interactive" if self._mode == "plan" else self._mode),
            prompt_for=self._subagent_prompt,
            custom_agents=self._custom_agents,
        )
        self.toolbox = ModeToolbox(
            registry_factory or _default_registry,
            ExitPlanModeTool(self.plan),
            self._build_prompt,
            TaskTool(self.subagents),
        )
        # Custom agents and skills (found and loaded by the app: extensions.load).
        self.extensions = SessionExtensions(self, self.toolbox.refresh)
        self.toolbox.add_joining(self.extensions.tools)
        self.toolbox.narrow = self.extensions.narrow
        # The model's questions to the user (ask_user) and its checklist (update_todos).
        self.questions = UserQuestions(self)
        self.todos = TodoList(self)
        # Awaited by the loop at the prompt, around tools and at the stop; no-ops here.
        self.hooks = LoopHooks()
        # None: shell commands run unconfined (a library user that did not ask for one).
        self.sandbox = sandbox
        if sandbox is not None:
            sandbox.cwd = self.cwd
        self.env_filter = env_filter or EnvFilter()
        # Tool output passes through here before it becomes an event: nothing that
        # reads events (log, screen, -p, exports, the model) sees these values.
        self.secrets = SecretMasker.from_env(os.environ, self.env_filter)
        # The model's context window: measured before each call, compacted when full.
        self._limits = SessionLimits(lambda: self.model)
        self.context = ContextKeeper(self, self._limits.new_meter())
        self._choose_prompt()  # a scripted model may claim a small window
        # Resumed: how many backlog events came from the log (the rest are this run's),
        # and what was read of it (its index, for the timeline's earlier turns).
        self.restored = 0
        self.resumed_from: ResumePlan | None = None
        self.mcp: McpServers | None = None  # started by start_mcp

    # --- construction --------------------------------------------------------

    @classmethod
    async def create(
        cls,
        *,
        model: ModelClient,
        cwd: Path,
        mode: Mode = "interactive",
        store: SessionStore | None = None,
        max_autopilot_continues: int = DEFAULT_MAX_CONTINUES,
        extra_dirs: list[Path] | None = None,
        registry_factory: Callable[[Mode], ToolRegistry] | None = None,
        policy: PermissionPolicy | None = None,
        session_id: str | None = None,
        sandbox: Sandbox | None = None,
        env_filter: EnvFilter | None = None,
    ) -> Session:
        """A new session (and log). ``session_id`` lets a client choose the id."""
        session = cls(
            session_id=session_id or str(uuid.uuid4()),
            model=model,
            cwd=cwd,
            mode=mode,
            store=store,
            max_autopilot_continues=max_autopilot_continues,
            extra_dirs=extra_dirs,
            registry_factory=registry_factory,
            policy=policy,
            sandbox=sandbox,
            env_filter=env_filter,
        )
        await start_new(session, store)
        return session

    @classmethod
    async def resume(
        cls,
        *,
        store: SessionStore,
        session_id: str,
        model: ModelClient,
        cwd: Path | None = None,
        max_autopilot_continues: int = DEFAULT_MAX_CONTINUES,
        extra_dirs: list[Path] | None = None,
        registry_factory: Callable[[Mode], ToolRegistry] | None = None,
        policy: PermissionPolicy | None = None,
        sandbox: Sandbox | None = None,
        env_filter: EnvFilter | None = None,
    ) -> Session:
        """Rebuild a session from its log and continue it in the same file and mode.

        Raises :class:`~agent.log.lock.SessionInUse` when another process writes it.
        """
        # A folder that leads out of the store is not ours to write (agent.log.fork copies it).
        store.check_owned(session_id)
        # Locked before reading: the log read must be the one this process appends to.
        lock = SessionLock.acquire(store.session_dir(session_id), session_id)
        try:
            return await resume_locked(
                cls,
                lock,
                store=store,
                session_id=session_id,
                model=model,
                cwd=cwd,
                max_autopilot_continues=max_autopilot_continues,
                extra_dirs=extra_dirs,
                registry_factory=registry_factory,
                policy=policy,
                sandbox=sandbox,
                env_filter=env_filter,
            )
        except BaseException:
            lock.release()
            raise

    def _attach(self, writer: SessionWriter) -> None:
        writer.deliver = self._deliver
        writer.on_failure = self._on_write_failure
        self._writer = writer

    # --- the event stream ----------------------------------------------------

    def emit(self, data: EventData, *, at: str | None = None, agent_id: str | None = None) -> Event:
        """Record ``data`` as a new event (timestamped now, or ``at``); ``agent_id``:
        an event of the sub-agent run by that id (agent/session/subagents.py)."""
        data = self.secrets.event_data(data)
        if isinstance(data, SessionErrorData) and self._start_error is None and agent_id is None:
            self._start_error = data  # the first one (see _never_started)
        event = Event.new(data, self._last_persisted_id)
        if at is not None:
            event.timestamp = at
        if agent_id is not None:
            event.__dict__["agent_id"] = agent_id
        self._fold(event)
        if not event.ephemeral:
            # Ephemeral events hang off the chain; they are never on disk to point at.
            self._last_persisted_id = event.id
            if self._held is not None:
                if isinstance(data, OPENING_TYPES):
                    self._held.append(event)  # shown now, written if the session is used
                    self._deliver([event])
                    return event
                self._write_held()
        if self._writer is not None:
            # Subscribers get it from the writer, once its batch is written.
            self._writer.append(event, durable=isinstance(data, AssistantTurnEndData))
        else:
            self._deliver([event])
        if isinstance(data, AssistantUsageData) or (
            isinstance(data, SessionCompactionCompleteData) and data.compaction_tokens_used
        ):
            # Usage is ephemeral: what replay, export and resume read is this record.
            self.emit(self.usage.checkpoint())
        if isinstance(data, ToolExecutionCompleteData):
            self.extensions.after_tool(data.tool_call_id, data.success)  # a skill's text
        return event

    def _hold_opening(self) -> None:
        """From now until the session is used (a prompt, a rename, a compaction: any
        event but those of opening it), write nothing: opening a finished session to
        look at it and leaving must not change what its listing says it was."""
        self._held = []

    def _write_held(self) -> None:
        held, self._held = self._held or [], None
        if self._writer is not None:
            for event in held:
                self.fanout.shown_already(event)
                self._writer.append(event)
        self._save_meta()

    def _deliver(self, events: list[Event]) -> None:
        self.fanout.deliver(events)

    def _on_write_failure(self, error: LogWriteError) -> None:
        """The log cannot be written: stop the running loop now (it ends with this
        error, see :attr:`halted`); later sends fail with it at once."""
        if self._storage_error is None:
            self._storage_error = SessionErrorData(error_type="storage", message=str(error))
        self._runner.halt()

    @property
    def halted(self) -> SessionErrorData | None:
        """Why the session stopped the loop itself (the log cannot be written)."""
        return self._storage_error

    async def persist(self) -> None:
        """Make every event so far durable (written and fsynced); see
        :func:`agent.loop.tool_round.authorized_run`. Raises :class:`LogWriteError`."""
        if self._writer is not None:
            await self._writer.sync()

    async def recorded(self) -> None:
        """Wait until every event so far is written (not fsynced); see
        :class:`agent.loop_host.LoopHost`. Raises :class:`LogWriteError`."""
        if self._writer is not None:
            await self._writer.written()

    def _fold(self, event: Event) -> None:
        self.history.apply(event)
        fold_state(self, event)

    def subscribe(self, callback: Subscriber, *, replay: bool = False) -> Callable[[], None]:
        """Call ``callback`` with every event from now on. Returns an unsubscribe.

        With ``replay``, first hand it what happened before it subscribed: the
        restored log of a resumed session and the events of start-up.
        """
        return self.fanout.subscribe(callback, replay=replay)

    def events(self) -> AsyncIterator[Event]:
        """Every event from now on, as an async iterator (break out to stop)."""
        return self.fanout.events()

    # --- what the loop reads ---------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def started_at(self) -> str:
        return self._started_at

    @property
    def model_calls(self) -> int:
        return self._model_calls

    @property
    def max_autopilot_continues(self) -> int:
        return self._max_continues

    def earlier_events(self) -> list[Event]:
        """A resumed session's log before the part it read back (its backlog's first
        event); read from the log now. Empty when the whole log was read."""
        plan = self.resumed_from
        if plan is None or plan.tail_start == 0:
            return []
        return plan.index.read(0, plan.tail_start)

    @property
    def backlog(self) -> list[Event]:
        """Events from before the first send (see :meth:`subscribe`)."""
        return list(self.fanout.backlog or [])

    @property
    def queued(self) -> int:
        """Prompts waiting behind the running one."""
        return len(self._runner.queue)

    @property
    def busy(self) -> bool:
        return self._runner.busy

    def tools(self) -> ToolRegistry:
        return self.tools_for(self._mode)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.tools().schemas()

    # --- the context window ------------------------------------------------------

    def configure_context(
        self,
        *,
        window: int | None = None,
        settings: CompactionSettings | None = None,
        max_output: int | None = None,
    ) -> None:
        """Override the model's context window and output limit (config, flag, SDK)
        and the compaction thresholds (the SDK's ``infinite_sessions``)."""
        if window is not None or max_output is not None:
            if window is not None:
                self._limits.window = window
            self._limits.max_output = max_output
            self.context.meter = self._limits.new_meter()
        if settings is not None:
            self.context.settings = settings
        self._choose_prompt()
        if window is not None:
            # A window the user gave is known without litellm: say now if it is too small.
            self.context.check_fit()

    def tools_for(self, mode: Mode) -> ToolRegistry:
        return self.toolbox.registry(mode)

    def tool_context(self, report_progress: Callable[[str], None]) -> ToolContext:
        return ToolContext(
            cwd=self.cwd,
            extra_dirs=list(self.extra_dirs),
            report_progress=report_progress,
            sandbox=self.sandbox.confinement(self._mode) if self.sandbox else None,
            hidden=self.sandbox.hidden() if self.sandbox else (),
            env_filter=self.env_filter,
            questions=self.questions,
            todos=self.todos,
        )

    async def authorize(self, request: ToolRequest) -> ToolResult | None:
        # In plan mode a known tool that is not offered (a write, the shell) is refused
        # with the reason; an unknown name fails in the loop like in any mode.
        if (
            self._mode == "plan"
            and request.name not in self.tools()
            and request.name in self.tools_for("autopilot")
        ):
            return self.plan.refusal(request.name)
        return await self.permissions.check(request)

    def system_prompt(self) -> str:
        return self.toolbox.system_prompt(self._mode)

    def use_system_prompt(self, style: str) -> None:
        """"full", "compact" (a short prompt and tools' definitions, for small models
        and windows) or "auto" (compact for a small context window)."""
        self._prompt_style = style
        self._choose_prompt()

    def _choose_prompt(self) -> None:
        self.toolbox.set_compact(wants_compact(self._prompt_style, self._limits.known_window()))

    def _build_prompt(self, mode: Mode, tool_names: list[str]) -> str:
        prompt = build_system_prompt(
            cwd=self.cwd,
            mode=mode,
            tool_names=tool_names,
            model=self.model.name,
            sandbox=self.sandbox.prompt_section(mode) if self.sandbox else None,
            compact=self.toolbox.compact,
        )
        extra = self.extensions.prompt_sections(tool_names)  # a custom agent, skills
        return f"{prompt}\n{extra}\n" if extra else prompt

    def _custom_agents(self) -> tuple[CustomAgent, ...]:
        """The custom agents (``*.agent.md``) the task tool offers, read when first asked."""
        from agent.extensions.agents.catalog import load_agents

        return load_agents(self.cwd, os.environ).agents

    def _subagent_prompt(self, model: ModelClient, tool_names: list[str]) -> str:
        # A sub-agent's loop is interactive: it is never nudged on (agent/session/subagent_host.py).
        return build_system_prompt(
            cwd=self.cwd,
            mode="interactive",
            tool_names=tool_names,
            model=model.name,
            sandbox=self.sandbox.prompt_section("interactive") if self.sandbox else None,
            compact=self.toolbox.compact,
        )

    # --- control -------------------------------------------------------------

    def send(
        self,
        prompt: str,
        *,
        message_id: str | None = None,
        immediate: bool = False,
        attachments: list[dict[str, Any]] | None = None,
    ) -> asyncio.Future[LoopOutcome]:
        """Queue ``prompt``; the future resolves when its loop has gone idle.

        ``immediate`` sends it into the running loop instead, at its next turn (when
        nothing runs, it is queued as usual). ``message_id`` is recorded on its
        ``user.message``; so are ``attachments`` (the SDK's shapes), whose text the
        model receives with the prompt.
        """
        future: asyncio.Future[LoopOutcome] = asyncio.get_running_loop().create_future()
        self._sent = True
        self._runner.send(
            Prompt(prompt, message_id, future, attachments or None), immediate=immediate
        )
        return future

    async def send_and_wait(self, prompt: str, timeout: float | None = None) -> LoopOutcome:
        future = self.send(prompt)
        if timeout is None:
            return await future
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            self.abort()
            return await future

    def abort(self) -> None:
        """Cancel the running turn (model call or tool). Idle follows promptly."""
        self._runner.abort()

    def set_mode(self, mode: Mode) -> None:
        if mode != self._mode:
            self.emit(SessionModeChangedData(previous_mode=self._mode, new_mode=mode))
            self._save_meta()

    def set_model(self, model: ModelClient) -> None:
        if model.name != self.model.name:
            previous = self.model.name
            self.model = model
            self.toolbox.forget_prompts()
            self._choose_prompt()  # a scripted model's window is its own
            # Its window, output limit and tokenizer, and no correction learnt from
            # another provider's counts.
            self.context.meter = self._limits.new_meter()
            self.emit(SessionModelChangeData(new_model=model.name, previous_model=previous))

    def add_dir(self, folder: Path) -> None:
        """Let the tools, and the sandbox's shell, work in ``folder`` too (``/add-dir``)."""
        folder = folder.resolve()
        if folder not in self.extra_dirs:
            self.extra_dirs.append(folder)
        if self.sandbox is not None and folder not in self.sandbox.add_dirs:
            self.sandbox.add_dirs.append(folder)
        self.toolbox.forget_prompts()  # the prompt names the writable folders

    def clear_context(self) -> None:
        """Start the model's conversation afresh (``/clear``); the log keeps it all."""
        self.context.abandon()
        self.emit(SessionContextClearedData(messages_cleared=len(self.history.messages)))
        self.context.refresh()

    def rename(self, title: str) -> None:
        self.title = title
        self.emit(SessionTitleChangedData(title=title))
        self._save_meta()

    async def run_user_command(self, command: str) -> ToolResult:
        """Run ``!command`` for the user, without the model (see agent.session.shell_escape)."""
        if not self._first_prompt:
            self._first_prompt = f"!{command}"  # worth keeping and listing
        return await run_user_command(self, command)

    def take_steering(self) -> list[tuple[str, str | None, list[dict[str, Any]] | None]]:
        return self._runner.take_steering()

    def start_mcp(self, config: McpConfig) -> None:
        """Start the configured MCP servers in the background; their tools join the
        offered ones as each is ready (see agent.extensions.mcp.servers)."""
        from agent.extensions.mcp.servers import McpServers

        # The servers' tokens (env, headers) are masked like the environment's.
        self._add_secrets(config.secret_values())
        self.mcp = McpServers(
            config,
            self.emit,
            self.toolbox.refresh,
            lambda text: self.secrets.text(text),
            self._add_secrets,
            # Local servers run in the bash tool's OS sandbox (agent.sandbox.policy).
            lambda: self.sandbox.server_confinement() if self.sandbox else None,
        )
        self.toolbox.add_joining(self.mcp.tools, self.mcp.gone)
        self.mcp.start()

    def _add_secrets(self, secrets: list[str]) -> None:
        self.secrets = SecretMasker([*self.secrets.secrets, *secrets])

    async def close(self) -> None:
        """Finish writing and release the log. Aborts a loop still running."""
        await close_session(self)

    # --- bookkeeping ---------------------------------------------------------

    def _save_meta(self) -> None:
        if self._held is None:  # a session only looked at keeps the metadata it had
            save_meta(self)

    def _context(self) -> WorkingDirectoryContext:
        return working_context(self)


def _default_registry(mode: Mode) -> ToolRegistry:
    return default_tools(autopilot=mode == "autopilot")
