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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import platform
import shutil
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import __version__
from agent.blocks import parse_timestamp
from agent.compaction import CompactionSettings, ContextKeeper
from agent.context_window import (
    ContextLimits,
    Counter,
    TokenMeter,
    estimate_tokens,
    limits_for,
    litellm_counter,
    uncalibrated_ratio,
)
from agent.events import (
    AbortData,
    AssistantTurnEndData,
    AssistantTurnRetryData,
    AssistantTurnStartData,
    AssistantUsageData,
    CompactionTokensUsed,
    Event,
    EventData,
    Mode,
    SessionCompactionCompleteData,
    SessionCompactionStartData,
    SessionContextClearedData,
    SessionErrorData,
    SessionIdleData,
    SessionModeChangedData,
    SessionModelChangeData,
    SessionResumeData,
    SessionStartData,
    SessionTitleChangedData,
    SessionUsageCheckpointData,
    SessionWarningData,
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolRequest,
    UserMessageData,
    WorkingDirectoryContext,
)
from agent.events_base import is_event_id, now_iso
from agent.history import History
from agent.hooks import LoopHooks
from agent.log_writer import LogWriteError, SessionWriter
from agent.loop import DEFAULT_MAX_CONTINUES, LoopOutcome, TurnLoop
from agent.models.base import ModelClient
from agent.permission_gate import PermissionGate
from agent.permission_level import PermissionLevelChoice
from agent.permissions import PermissionPolicy
from agent.plan_mode import PlanMode, plan_registry
from agent.prompt import build_system_prompt, git_branch
from agent.replay import EventIndex
from agent.sandbox.policy import Sandbox
from agent.secrets import EnvFilter, SecretMasker
from agent.session_lock import SessionLock
from agent.shell_escape import run_user_command
from agent.store import SessionStore
from agent.tail_resume import ResumePlan, plan_resume, unreadable_reason
from agent.todos import TodoList
from agent.tools.base import ToolContext, ToolResult
from agent.tools.exit_plan_mode import ExitPlanModeTool
from agent.tools.registry import ToolRegistry, default_tools
from agent.usage import UsageLedger
from agent.user_input import UserQuestions

log = logging.getLogger(__name__)

Subscriber = Callable[[Event], None]
INTERRUPTED_BY_EXIT = "Interrupted: the session stopped before this tool call finished."


@dataclass(slots=True)
class _Prompt:
    text: str
    message_id: str | None
    future: asyncio.Future[LoopOutcome]
    attachments: list[dict[str, Any]] | None = None


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
        self.cwd = cwd.resolve()
        self.extra_dirs = [d.resolve() for d in extra_dirs or []]
        self.store = store
        self.history = History()
        self._mode: Mode = mode
        self._max_continues = max_autopilot_continues
        self._writer: SessionWriter | None = None
        self._lock: SessionLock | None = None  # one writer per session (agent.session_lock)
        self._subscribers: list[Subscriber] = []
        self._last_persisted_id: str | None = None
        # Set when the log can no longer be written: the loop stops, sends fail.
        self._storage_error: SessionErrorData | None = None
        self._model_calls = 0
        self._turns = 0
        self._tool_calls = 0
        self.usage = UsageLedger()  # cumulative, restored on resume from the checkpoints
        self._outcome = "in progress"
        self._open_turn: str | None = None
        self._first_prompt = ""
        self.title = ""  # /rename
        self._created_here = False  # by create(), not resume(): ours to discard if empty
        # A fork opened by this process (agent/fork.py): discarded too if nothing is sent.
        self.discard_unused = False
        self._sent = False
        self._forked_from: dict[str, Any] | None = None  # kept in the metadata file
        self._started_at = now_iso()
        self._queue: collections.deque[_Prompt] = collections.deque()
        # Sent with send(..., immediate=True) while a loop runs: it picks them up at
        # its next turn; they resolve with the run that took them.
        self._steering: list[_Prompt] = []
        self._steered: list[_Prompt] = []
        self._runner: asyncio.Task[None] | None = None
        self._current: asyncio.Task[LoopOutcome] | None = None
        self._abort_requested = False
        self._abort_before_start = False
        self._prompts: dict[Mode, str] = {}
        self._registries: dict[Mode, ToolRegistry] = {}
        self._registry_factory = registry_factory or _default_registry
        self.permissions = PermissionGate(self, policy)
        # Autopilot's permission level, asked once by the app (see agent.permission_level).
        self.permission_level = PermissionLevelChoice(self)
        # The plan, and the question that leaves plan mode (agent.plan_mode).
        self.plan = PlanMode(self)
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
        self._window_override: int | None = None
        self._max_output_override: int | None = None
        self.context = ContextKeeper(self, self._new_meter())
        # Events from before anyone could subscribe (a resumed log, resume notices),
        # handed to the first ``subscribe(..., replay=True)``; dropped at first send.
        self._backlog: list[Event] | None = []
        # Resumed: how many backlog events came from the log (the rest are this run's),
        # and what was read of it (its index, for the timeline's earlier turns).
        self.restored = 0
        self.resumed_from: ResumePlan | None = None

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
        session._created_here = True
        if store is not None:
            store.check_owned(session.id)  # a chosen id may name a link out of the store
            session._lock = SessionLock.acquire(
                store.session_dir(session.id), session.id, create=True
            )
            try:
                session._attach(await store.open_writer(session.id))
            except BaseException:
                session._lock.release()
                raise
        session.emit(
            SessionStartData(
                session_id=session.id,
                copilot_version=__version__,
                start_time=session._started_at,
                selected_model=model.name,
                context=session._context(),
            )
        )
        await session._check_written()
        session._sandbox_notice()
        session._save_meta()
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

        Raises :class:`~agent.session_lock.SessionInUse` when another process writes it.
        """
        # A folder that leads out of the store is not ours to write (agent.fork copies it).
        store.check_owned(session_id)
        # Locked before reading: the log read must be the one this process appends to.
        lock = SessionLock.acquire(store.session_dir(session_id), session_id)
        try:
            return await cls._resume_locked(
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

    @classmethod
    async def _resume_locked(
        cls,
        lock: SessionLock,
        *,
        store: SessionStore,
        session_id: str,
        model: ModelClient,
        cwd: Path | None,
        max_autopilot_continues: int,
        extra_dirs: list[Path] | None,
        registry_factory: Callable[[Mode], ToolRegistry] | None,
        policy: PermissionPolicy | None,
        sandbox: Sandbox | None,
        env_filter: EnvFilter | None,
    ) -> Session:
        meta = store.read_meta(session_id)
        recorded = meta.get("cwd")
        recorded_cwd = (
            Path(recorded)
            if isinstance(recorded, str) and recorded and "\0" not in recorded
            else None
        )
        session = cls(
            session_id=session_id,
            model=model,
            cwd=cwd or recorded_cwd or Path.cwd(),
            mode="interactive",
            store=store,
            max_autopilot_continues=max_autopilot_continues,
            extra_dirs=extra_dirs,
            registry_factory=registry_factory,
            policy=policy,
            sandbox=sandbox,
            env_filter=env_filter,
        )
        started = meta.get("startedAt")
        session._started_at = started if isinstance(started, str) and started else now_iso()
        origin = meta.get("forkedFrom")
        session._forked_from = origin if isinstance(origin, dict) else None
        session._lock = lock
        # The writer first: it sets a torn last line aside (or terminates a whole one)
        # before the log is indexed, so the index is the file this session appends to.
        events_path = store.events_path(session_id)
        if not events_path.is_file():
            # As reading it would: the writer must not create a log for no session.
            raise FileNotFoundError(f"no such session log: {events_path}")
        writer = await store.open_writer(session_id)
        try:
            # Tail first, off the event loop: index the log, parse only what resume
            # needs (agent.tail_resume), never the whole of a long session.
            plan = await asyncio.to_thread(plan_resume, events_path)
        except BaseException:
            await writer.close()
            raise
        session._restore(plan)
        session._attach(writer)
        if writer.torn_tail_moved_to is not None:
            where = writer.torn_tail_moved_to
            session.emit(
                SessionWarningData(
                    warning_type="log_repair",
                    message=(
                        f"events.jsonl line {len(plan.index) + 1}: torn last line (writer "
                        f"stopped mid-line); its bytes were kept in {where.name}"
                    ),
                )
            )
        for position, slot in enumerate(plan.events, start=plan.parse_start):
            if slot is None:
                session.emit(
                    SessionWarningData(
                        warning_type="log_repair",
                        message=(
                            f"events.jsonl line {position + 1}: "
                            f"{unreadable_reason(plan.index, position)}"
                        ),
                    )
                )
        # Closed as of the log's last event: that is when its process stopped (a fork's
        # origin may have stopped months ago; its turn did not last until now).
        stopped = next(
            (
                e.timestamp
                for e in reversed(plan.events)
                if e is not None and parse_timestamp(e.timestamp)
            ),
            None,
        )
        session._close_dangling(stopped)
        session._close_dangling_compaction(plan.index, stopped)
        session.emit(
            SessionResumeData(
                event_count=len(plan.index),
                resume_time=now_iso(),
                selected_model=model.name,
                context=session._context(),
            )
        )
        await session._check_written()
        session._sandbox_notice()
        session._save_meta()
        return session

    def _restore(self, plan: ResumePlan) -> None:
        """Fold what :func:`plan_resume` read: the state events from before the
        history's start (state only), then everything from there (whole). The
        history opens with the last checkpoint's summary."""
        for event in plan.state:
            self._fold_state(event, count=False)
        counted = plan.counted
        self._turns, self._model_calls, self._tool_calls = (
            counted.turns,
            counted.model_calls,
            counted.tool_calls,
        )
        if plan.first_prompt:
            self._first_prompt = plan.first_prompt
        if plan.summary is not None:
            self.history.restore_summary(plan.summary)
        for position in range(plan.parse_start, len(plan.index)):
            read = plan.slot(position)
            if read is None:
                continue
            if position >= plan.fold_start:
                if position == plan.summary_at:
                    self._fold_state(read)  # its summary already opens the history
                else:
                    self._fold(read)
            # New events chain to the last one the official parser can name: a
            # damaged id would make every line written after it unparseable.
            if not read.ephemeral and is_event_id(read.id):
                self._last_persisted_id = read.id
        if self._last_persisted_id is None and plan.parse_start > 0:
            # Nothing parsed was nameable: the last event before it that is.
            for event in reversed(plan.index.read(0, plan.parse_start)):
                if not event.ephemeral and is_event_id(event.id):
                    self._last_persisted_id = event.id
                    break
        shown = [event for event in plan.shown if event is not None]
        self._backlog = shown
        self.restored = len(shown)
        self.resumed_from = plan

    def _sandbox_notice(self) -> None:
        """Once per run: the sandbox was asked for and this kernel cannot provide it."""
        notice = self.sandbox.notice() if self.sandbox is not None else None
        if notice is not None:
            self.emit(SessionWarningData(warning_type="sandbox_unavailable", message=notice))

    def _attach(self, writer: SessionWriter) -> None:
        writer.deliver = self._deliver
        writer.on_failure = self._on_write_failure
        self._writer = writer

    async def _check_written(self) -> None:
        """Start-up: wait for the first events to be written, so that a full or
        unwritable disk is one clear error (:class:`LogWriteError`), not a run that
        loses its log."""
        if self._writer is None:
            return
        await self._writer.drain()
        if self._writer.error is not None:
            error = self._writer.error
            await self._writer.close()
            self._writer = None
            if self._created_here and self.store is not None:
                shutil.rmtree(self.store.session_dir(self.id), ignore_errors=True)
            if self._lock is not None:
                self._lock.release()
                self._lock = None
            raise error

    def _close_dangling_compaction(self, index: EventIndex, stopped: str | None) -> None:
        """A crash can leave a summary unfinished (a ``session.compaction_start`` with
        no complete after it): record it as failed, as closing the session would have."""
        types = index.types
        for i in range(len(types) - 1, -1, -1):
            if types[i] == "session.compaction_complete":
                return
            if types[i] == "session.compaction_start":
                break
        else:
            return
        found = index.read_slots(i, i + 1)
        start = found[0].data if found and found[0] is not None else None
        if not isinstance(start, SessionCompactionStartData):
            return
        self.emit(
            SessionCompactionCompleteData(
                success=False,
                error="interrupted: the session stopped before the summary was made",
                pre_compaction_tokens=start.current_tokens,
                token_limit=start.token_limit,
                trigger=start.trigger,
                compaction_attempt_id=start.compaction_attempt_id,
            ),
            at=stopped,
        )

    def _close_dangling(self, stopped: str | None = None) -> None:
        """A crash can leave tool calls and a turn open: close them as interrupted,
        at ``stopped`` (the time of the log's last event) when known."""
        self.plan.settle_unanswered()
        for call_id in list(self.history.open_calls):
            self.emit(
                ToolExecutionCompleteData(
                    tool_call_id=call_id,
                    success=False,
                    error=ToolErrorPayload(message=INTERRUPTED_BY_EXIT, code="interrupted"),
                    turn_id=self._open_turn,
                ),
                at=stopped,
            )
        if self._open_turn is not None:
            self.emit(AssistantTurnEndData(turn_id=self._open_turn), at=stopped)
        for call_id in list(self.history.user_commands):  # a !command cut short
            self.emit(
                ToolExecutionCompleteData(
                    tool_call_id=call_id,
                    success=False,
                    is_user_requested=True,
                    error=ToolErrorPayload(message=INTERRUPTED_BY_EXIT, code="interrupted"),
                ),
                at=stopped,
            )

    # --- the event stream ----------------------------------------------------

    def emit(self, data: EventData, *, at: str | None = None) -> Event:
        """Record ``data`` as a new event (timestamped now, or ``at``)."""
        data = self.secrets.event_data(data)
        event = Event.new(data, self._last_persisted_id)
        if at is not None:
            event.timestamp = at
        self._fold(event)
        if not event.ephemeral:
            # Ephemeral events hang off the chain; they are never on disk to point at.
            self._last_persisted_id = event.id
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
        return event

    def _deliver(self, events: list[Event]) -> None:
        """Hand written events (and the ephemeral ones between them) to subscribers."""
        for event in events:
            if self._backlog is not None and not event.ephemeral:
                self._backlog.append(event)
            for subscriber in list(self._subscribers):
                try:
                    subscriber(event)
                except Exception:  # one broken renderer must not stop the loop
                    log.exception("event subscriber failed")

    def _on_write_failure(self, error: LogWriteError) -> None:
        """The log cannot be written: stop the running loop now (it ends with this
        error, see :attr:`halted`); later sends fail with it at once."""
        if self._storage_error is None:
            self._storage_error = SessionErrorData(error_type="storage", message=str(error))
        if self._current is not None and not self._current.done():
            self._current.cancel()

    @property
    def halted(self) -> SessionErrorData | None:
        """Why the session stopped the loop itself (the log cannot be written)."""
        return self._storage_error

    async def persist(self) -> None:
        """Make every event so far durable (written and fsynced); see
        :meth:`agent.loop.TurnLoop._authorized_run`. Raises :class:`LogWriteError`."""
        if self._writer is not None:
            await self._writer.sync()

    def _fold(self, event: Event) -> None:
        self.history.apply(event)
        self._fold_state(event)

    def _fold_state(self, event: Event, *, count: bool = True) -> None:
        """Everything but the model's history (``count``: the counters too)."""
        self.permission_level.fold(event)
        self.plan.fold(event)
        self.todos.fold(event)
        match event.data:
            case AssistantTurnStartData(turn_id=turn_id):
                self._model_calls += count
                self._turns += count
                self._open_turn = turn_id
            case AssistantTurnRetryData():
                self._model_calls += count
            case AssistantTurnEndData():
                self._open_turn = None
            case ToolExecutionCompleteData():
                self._tool_calls += count
            case AssistantUsageData() as usage:
                self.usage.add(usage)
            case SessionCompactionCompleteData(
                compaction_tokens_used=CompactionTokensUsed() as used
            ):
                # The summary call is billed like any other.
                self.usage.add(
                    AssistantUsageData(
                        model=used.model or self.model.name,
                        input_tokens=used.input_tokens,
                        output_tokens=used.output_tokens,
                        cost=used.cost,
                    )
                )
            case SessionUsageCheckpointData() as checkpoint:
                self.usage.restore(checkpoint)
            case UserMessageData(content=content, agent_mode=mode, is_autopilot_continuation=nudge):
                if mode in ("interactive", "autopilot", "plan"):
                    self._mode = mode
                if not self._first_prompt and not nudge:
                    self._first_prompt = content
            case SessionModeChangedData(new_mode=mode):
                self._mode = mode
            case SessionTitleChangedData(title=title):
                self.title = title
            case _:
                pass

    def subscribe(self, callback: Subscriber, *, replay: bool = False) -> Callable[[], None]:
        """Call ``callback`` with every event from now on. Returns an unsubscribe.

        With ``replay``, first hand it what happened before it subscribed: the
        restored log of a resumed session and the events of start-up.
        """
        if replay and self._backlog:
            for event in self._backlog:
                callback(event)
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    async def events(self) -> AsyncIterator[Event]:
        """Every event from now on, as an async iterator (break out to stop)."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        unsubscribe = self.subscribe(queue.put_nowait)
        try:
            while True:
                yield await queue.get()
        finally:
            unsubscribe()

    # --- what the loop reads ---------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._mode

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
        return list(self._backlog or [])

    @property
    def queued(self) -> int:
        """Prompts waiting behind the running one."""
        return len(self._queue)

    @property
    def busy(self) -> bool:
        return self._runner is not None and not self._runner.done()

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
        if window is not None:
            self._window_override = window
            self._max_output_override = max_output
            self.context.meter = self._new_meter()
        if settings is not None:
            self.context.settings = settings

    def _context_limits(self) -> ContextLimits:
        if self._window_override is not None:
            return ContextLimits(self._window_override, self._max_output_override, "config")
        scripted = getattr(self.model, "context_window", None)
        if isinstance(scripted, int) and scripted > 0:
            return ContextLimits(scripted, None, "script")
        return limits_for(self.model.name)

    def _new_meter(self) -> TokenMeter:
        return TokenMeter(self._context_limits, self._token_counter, self._first_ratio)

    def _first_ratio(self) -> float:
        # A scripted model's counts are the estimate's own: nothing to allow for.
        if self.model.name.startswith("scripted:"):
            return 1.0
        return uncalibrated_ratio(self.model.name)

    def _token_counter(self) -> Counter:
        # A scripted model has no tokenizer, and must not pull in litellm (seconds).
        if self.model.name.startswith("scripted:"):
            return estimate_tokens
        return litellm_counter(self.model.name)

    def tools_for(self, mode: Mode) -> ToolRegistry:
        registry = self._registries.get(mode)
        if registry is None:
            registry = self._registry_factory(mode)
            if mode == "plan":  # read-only, whatever the factory offers
                registry = plan_registry(registry, ExitPlanModeTool(self.plan))
            self._registries[mode] = registry
        return registry

    def tool_context(self, report_progress: Callable[[str], None]) -> ToolContext:
        return ToolContext(
            cwd=self.cwd,
            extra_dirs=list(self.extra_dirs),
            report_progress=report_progress,
            sandbox=self.sandbox.confinement(self._mode) if self.sandbox else None,
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
        prompt = self._prompts.get(self._mode)
        if prompt is None:
            prompt = self._prompts[self._mode] = build_system_prompt(
                cwd=self.cwd,
                mode=self._mode,
                tool_names=self.tools().names(),
                model=self.model.name,
                sandbox=self.sandbox.prompt_section(self._mode) if self.sandbox else None,
            )
        return prompt

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
        item = _Prompt(prompt, message_id, future, attachments or None)
        self._sent = True
        if immediate and self._current is not None and not self._current.done():
            self._steering.append(item)
            return future
        self._backlog = None
        self._queue.append(item)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run_queue(), name=f"session:{self.id[:8]}")
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
        if self._current is not None and not self._current.done():
            self._abort_requested = True
            self._current.cancel()
        elif self.busy:
            self._abort_before_start = True  # sent, but its loop has not started yet

    def set_mode(self, mode: Mode) -> None:
        if mode != self._mode:
            self.emit(SessionModeChangedData(previous_mode=self._mode, new_mode=mode))
            self._save_meta()

    def set_model(self, model: ModelClient) -> None:
        if model.name != self.model.name:
            previous = self.model.name
            self.model = model
            self._prompts.clear()
            # Its window, output limit and tokenizer, and no correction learnt from
            # another provider's counts.
            self.context.meter = self._new_meter()
            self.emit(SessionModelChangeData(new_model=model.name, previous_model=previous))

    def add_dir(self, folder: Path) -> None:
        """Let the tools, and the sandbox's shell, work in ``folder`` too (``/add-dir``)."""
        folder = folder.resolve()
        if folder not in self.extra_dirs:
            self.extra_dirs.append(folder)
        if self.sandbox is not None and folder not in self.sandbox.add_dirs:
            self.sandbox.add_dirs.append(folder)
        self._prompts.clear()  # the prompt names the writable folders

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
        """Run ``!command`` for the user, without the model (see agent.shell_escape)."""
        if not self._first_prompt:
            self._first_prompt = f"!{command}"  # worth keeping and listing
        return await run_user_command(self, command)

    def take_steering(self) -> list[tuple[str, str | None, list[dict[str, Any]] | None]]:
        taken, self._steering = self._steering, []
        self._steered.extend(taken)
        return [(item.text, item.message_id, item.attachments) for item in taken]

    async def _run_queue(self) -> None:
        while self._queue:
            item = self._queue.popleft()
            future = item.future
            self._abort_requested = False
            self._outcome = "in progress"
            self._save_meta()  # "in progress" on disk, for listings and watchers
            if self._abort_before_start:
                self._abort_before_start = False
                self.emit(AbortData(reason="user_initiated"))
                await self._finish(LoopOutcome(aborted=True), future)
                continue
            if self._storage_error is not None:
                # Nothing more can be recorded: no model call, no tool, no change.
                self.emit(self._storage_error)
                await self._finish(LoopOutcome(error=self._storage_error), future)
                continue
            self._current = asyncio.create_task(
                TurnLoop(self).run(item.text, item.message_id, item.attachments)
            )
            try:
                outcome = await self._current
            except asyncio.CancelledError:
                # Cancelled before the loop could catch it (an abort or a failed
                # write right at the start), or the runner itself is being torn down.
                if self._storage_error is not None and not self._abort_requested:
                    self.emit(self._storage_error)
                    await self._finish(LoopOutcome(error=self._storage_error), future)
                    continue
                outcome = LoopOutcome(aborted=True)
                self.emit(AbortData(reason="user_initiated"))
                if not self._abort_requested:
                    await self._finish(outcome, future)
                    raise
            await self._finish(outcome, future)

    async def _finish(self, outcome: LoopOutcome, future: asyncio.Future[LoopOutcome]) -> None:
        self._current = None
        self._outcome = _outcome_label(outcome)
        # Steering that came too late for this run goes first in the queue.
        self._queue.extendleft(reversed(self._steering))
        self._steering = []
        if self._writer is not None:
            await self._writer.drain()
        self._save_meta()
        # Idle is always the last event of a send, after the log is on disk.
        self.emit(SessionIdleData(aborted=True if outcome.aborted else None, mode=self._mode))
        steered, self._steered = self._steered, []
        for done in (future, *(item.future for item in steered)):
            if not done.done():
                done.set_result(outcome)

    async def close(self) -> None:
        """Finish writing and release the log. Aborts a loop still running."""
        self.abort()
        if self._runner is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        try:
            # A summary still being made ends now, recorded as failed, before the log closes.
            await self.context.close()
            if self._writer is not None:
                await self._writer.close()
                self._writer = None
            if self.sandbox is not None:
                self.sandbox.close()
            unused = (self._created_here and not self._first_prompt) or (
                self.discard_unused and not self._sent
            )
            if self.store is not None and unused:
                # Opened and left without a word: nothing worth keeping or listing.
                shutil.rmtree(self.store.session_dir(self.id), ignore_errors=True)
        finally:
            if self._lock is not None:
                self._lock.release()  # last: the folder is left as this writer meant it
                self._lock = None

    # --- bookkeeping ---------------------------------------------------------

    def _context(self) -> WorkingDirectoryContext:
        return WorkingDirectoryContext(cwd=str(self.cwd), branch=git_branch(self.cwd))

    def _save_meta(self) -> None:
        if self.store is None:
            return
        totals = self.usage.totals()
        meta: dict[str, Any] = {
            "id": self.id,
            "cwd": str(self.cwd),
            "model": self.model.name,
            "mode": self._mode,
            "startedAt": self._started_at,
            "updatedAt": now_iso(),
            "turns": self._turns,
            "firstPrompt": self._first_prompt,
            "title": self.title,
            "toolCalls": self._tool_calls,
            "inputTokens": totals.input_tokens,
            "outputTokens": totals.output_tokens,
            "cost": totals.cost,
            "outcome": self._outcome,
            "producer": "loopdeck",
            "pid": os.getpid(),  # lets a listing tell "in progress" from "crashed"
            "platform": platform.system(),
        }
        if self._forked_from is not None:
            meta["forkedFrom"] = self._forked_from
        try:
            self.store.write_meta(self.id, meta)
        except OSError as exc:
            log.warning("could not write session metadata: %s", exc)


def _default_registry(mode: Mode) -> ToolRegistry:
    return default_tools(autopilot=mode == "autopilot")


def _outcome_label(outcome: LoopOutcome) -> str:
    if outcome.aborted:
        return "aborted"
    if outcome.error is not None:
        return "error"
    if outcome.stopped_at_cap:
        return "stopped"
    return "completed"
