"""Opening a session: a new one (:meth:`agent.session.session.Session.create`) or one again
from its log (:meth:`agent.session.session.Session.resume`), and the metadata file listings read.

A new session's folder is locked and its log written before it is handed out, so a
full disk is one clear error. Resume reads tail first: the log is indexed and only
what resume needs is parsed (:mod:`agent.session.tail_resume`); the history is folded from
the last checkpoint, the state from the events before it. What the process left open
when it stopped (a turn, tool calls, a ``!command``, a summary) is recorded as
interrupted, at the time of the log's last event.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agent import __version__
from agent.events.base import is_event_id, now_iso
from agent.events.schema import (
    AssistantTurnEndData,
    Mode,
    SessionCompactionCompleteData,
    SessionCompactionStartData,
    SessionResumeData,
    SessionStartData,
    SessionWarningData,
    ToolErrorPayload,
    ToolExecutionCompleteData,
    WorkingDirectoryContext,
)
from agent.log.lock import SessionLock
from agent.log.replay import EventIndex
from agent.log.store import SessionStore
from agent.loop.system_prompt import git_branch
from agent.models.base import ModelClient
from agent.permissions.rules import PermissionPolicy
from agent.sandbox.policy import Sandbox
from agent.sandbox.secrets import EnvFilter
from agent.session.fold import fold_state
from agent.session.tail_resume import ResumePlan, plan_resume, unreadable_reason
from agent.tools.registry import ToolRegistry
from agent.transcript.blocks import parse_timestamp

if TYPE_CHECKING:
    from agent.session.internals import SessionInternals

log = logging.getLogger("agent.session.session")

S = TypeVar("S", bound="SessionInternals")

INTERRUPTED_BY_EXIT = "Interrupted: the session stopped before this tool call finished."


async def resume_locked(
    cls: Callable[..., S],
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
) -> S:
    """:meth:`Session.resume`'s work, once the log's lock is held: a ``cls`` session
    rebuilt from the log, open for writing, its ``session.resume`` recorded."""
    meta = store.read_meta(session_id)
    recorded = meta.get("cwd")
    recorded_cwd = (
        Path(recorded) if isinstance(recorded, str) and recorded and "\0" not in recorded else None
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
        # needs (agent.session.tail_resume), never the whole of a long session.
        plan = await asyncio.to_thread(plan_resume, events_path)
    except BaseException:
        await writer.close()
        raise
    restore(session, plan)
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
    close_dangling(session, stopped)
    close_dangling_compaction(session, plan.index, stopped)
    # A repair of the log above is written now (and shown first); opening it is
    # written once it is used.
    await check_written(session)
    session._hold_opening()
    outcome = meta.get("outcome")
    if isinstance(outcome, str) and outcome:
        session._outcome = outcome  # what it was, until a new turn says otherwise
    session.emit(
        SessionResumeData(
            event_count=len(plan.index),
            resume_time=now_iso(),
            selected_model=model.name,
            context=working_context(session),
        )
    )
    await check_written(session)
    sandbox_notice(session)
    session._save_meta()
    return session


def restore(session: SessionInternals, plan: ResumePlan) -> None:
    """Fold what :func:`plan_resume` read: the state events from before the
    history's start (state only), then everything from there (whole). The
    history opens with the last checkpoint's summary."""
    for event in plan.state:
        fold_state(session, event, count=False)
    counted = plan.counted
    session._turns, session._model_calls, session._tool_calls = (
        counted.turns,
        counted.model_calls,
        counted.tool_calls,
    )
    if plan.first_prompt:
        session._first_prompt = plan.first_prompt
    if plan.summary is not None:
        session.history.restore_summary(plan.summary)
    for position in range(plan.parse_start, len(plan.index)):
        read = plan.slot(position)
        if read is None:
            continue
        if position >= plan.fold_start:
            if position == plan.summary_at:
                fold_state(session, read)  # its summary already opens the history
            else:
                session._fold(read)
        # New events chain to the last one the official parser can name: a
        # damaged id would make every line written after it unparseable.
        if not read.ephemeral and is_event_id(read.id):
            session._last_persisted_id = read.id
    if session._last_persisted_id is None and plan.parse_start > 0:
        # Nothing parsed was nameable: the last event before it that is.
        for event in reversed(plan.index.read(0, plan.parse_start)):
            if not event.ephemeral and is_event_id(event.id):
                session._last_persisted_id = event.id
                break
    shown = [event for event in plan.shown if event is not None]
    session.fanout.backlog = shown
    session.restored = len(shown)
    session.resumed_from = plan


def close_dangling_compaction(
    session: SessionInternals, index: EventIndex, stopped: str | None
) -> None:
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
    session.emit(
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


def close_dangling(session: SessionInternals, stopped: str | None = None) -> None:
    """A crash can leave tool calls and a turn open: close them as interrupted,
    at ``stopped`` (the time of the log's last event) when known."""
    session.plan.settle_unanswered()
    for call_id in list(session.history.open_calls):
        session.emit(
            ToolExecutionCompleteData(
                tool_call_id=call_id,
                success=False,
                error=ToolErrorPayload(message=INTERRUPTED_BY_EXIT, code="interrupted"),
                turn_id=session._open_turn,
            ),
            at=stopped,
        )
    if session._open_turn is not None:
        session.emit(AssistantTurnEndData(turn_id=session._open_turn), at=stopped)
    for call_id in list(session.history.user_commands):  # a !command cut short
        session.emit(
            ToolExecutionCompleteData(
                tool_call_id=call_id,
                success=False,
                is_user_requested=True,
                error=ToolErrorPayload(message=INTERRUPTED_BY_EXIT, code="interrupted"),
            ),
            at=stopped,
        )


async def start_new(session: SessionInternals, store: SessionStore | None) -> None:
    """:meth:`Session.create`'s work on the new ``session``: its folder locked, its log
    opened, ``session.start`` recorded and written."""
    session._created_here = True
    if store is not None:
        store.check_owned(session.id)  # a chosen id may name a link out of the store
        session._lock = SessionLock.acquire(store.session_dir(session.id), session.id, create=True)
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
            selected_model=session.model.name,
            context=working_context(session),
        )
    )
    await check_written(session)
    sandbox_notice(session)
    session._save_meta()


def sandbox_notice(session: SessionInternals) -> None:
    """Once per run: the sandbox was asked for and this kernel cannot provide it."""
    notice = session.sandbox.notice() if session.sandbox is not None else None
    if notice is not None:
        session.emit(SessionWarningData(warning_type="sandbox_unavailable", message=notice))


async def check_written(session: SessionInternals) -> None:
    """Start-up: wait for the first events to be written, so that a full or
    unwritable disk is one clear error (:class:`LogWriteError`), not a run that
    loses its log."""
    if session._writer is None:
        return
    await session._writer.drain()
    if session._writer.error is not None:
        error = session._writer.error
        await session._writer.close()
        session._writer = None
        if session._created_here and session.store is not None:
            shutil.rmtree(session.store.session_dir(session.id), ignore_errors=True)
        if session._lock is not None:
            session._lock.release()
            session._lock = None
        raise error


def working_context(session: SessionInternals) -> WorkingDirectoryContext:
    return WorkingDirectoryContext(cwd=str(session.cwd), branch=git_branch(session.cwd))


def save_meta(session: SessionInternals) -> None:
    """Write the metadata file listings read (``sessions``), when the session is stored."""
    if session.store is None:
        return
    totals = session.usage.totals()
    meta: dict[str, Any] = {
        "id": session.id,
        "cwd": str(session.cwd),
        "model": session.model.name,
        "mode": session._mode,
        "startedAt": session._started_at,
        "updatedAt": now_iso(),
        "turns": session._turns,
        "firstPrompt": session._first_prompt,
        "title": session.title,
        "toolCalls": session._tool_calls,
        "inputTokens": totals.input_tokens,
        "outputTokens": totals.output_tokens,
        "cost": totals.cost,
        "outcome": session._outcome,
        "producer": "loopdeck",
        "pid": os.getpid(),  # lets a listing tell "in progress" from "crashed"
        # What the board (loopdeck runs) shows beside the log's nudges and usage.
        "maxAutopilotContinues": session.max_autopilot_continues,
        "contextWindow": session.context.limits.window,
        "platform": platform.system(),
    }
    if session._forked_from is not None:
        meta["forkedFrom"] = session._forked_from
    try:
        session.store.write_meta(session.id, meta)
    except OSError as exc:
        log.warning("could not write session metadata: %s", exc)
