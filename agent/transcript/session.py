"""The session's course in the transcript: how it starts, resumes, goes idle, is
aborted, fails, completes its task and ends.

An abort or an error interrupts what is still running; a new start, a resume or a
shutdown means the process that wrote the session is gone, so everything it left
open (turn, tool calls, permission requests, the user's commands) is closed.

Pure Python: no UI imports.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from agent.events.schema import (
    AbortData,
    SessionErrorData,
    SessionHandoffData,
    SessionIdleData,
    SessionResumeData,
    SessionShutdownData,
    SessionStartData,
    SessionTaskCompleteData,
)
from agent.transcript.blocks import (
    AbortBlock,
    Change,
    ErrorBlock,
    NoticeBlock,
    TaskCompleteBlock,
    ToolCallBlock,
    TurnStatus,
)
from agent.transcript.error_hints import error_hint
from agent.transcript.tools import mark_interrupted

if TYPE_CHECKING:
    from agent.transcript.state import TranscriptState


def interrupt(
    t: TranscriptState, ts: datetime | None, turn_status: TurnStatus, *, recent: bool = True
) -> list[Change]:
    """Close what is still open after an abort or error.

    Open tool calls become interrupted. The turn takes ``turn_status``: the
    open one, else (``recent``) the last turn of this send, since the loop ends
    a turn (``assistant.turn_end``) before it reports the abort or error.
    """
    changes: list[Change] = []
    for tool in t._open_tools.values():
        mark_interrupted(t, tool)
        if tool.ended_at is None and tool.started_at is not None:
            tool.ended_at = ts
        changes.append(t._tool_change(tool))
    t._open_tools.clear()
    turn = t._open_turn or (t._recent_turn if recent else None)
    t._open_turn = None
    if turn is not None and turn.status in ("running", "done"):
        if not turn.speed.settled:
            turn.speed.attempt(None)  # the reply never came: nothing was measured
        turn.status = turn_status
        if turn.ended_at is None:
            turn.ended_at = ts
        changes.append(Change("updated", turn))
    return changes


def close_open(t: TranscriptState, ts: datetime | None) -> list[Change]:
    """The process writing the session is gone (shutdown, a new start, a finished
    file): the open turn, tool calls, permission requests and shell commands are
    closed as interrupted."""
    changes = interrupt(t, ts, "aborted", recent=False)
    for target in t._permissions.values():
        match target:
            case ToolCallBlock(permission="requested"):
                target.permission = "unanswered"
                changes.append(t._tool_change(target))
            case NoticeBlock():
                target.message = f"{target.subtype or 'permission'}: never answered"
                changes.append(Change("updated", target))
    t._permissions.clear()
    changes += [Change("updated", shell) for shell in t._shell.interrupt(ts)]
    return changes


def idle(t: TranscriptState, d: SessionIdleData, ts: datetime | None) -> list[Change]:
    t.busy = False
    if d.mode is not None:
        t.mode = d.mode
    if d.aborted:
        t.aborted = True
        return interrupt(t, ts, "aborted")
    return []


def task_complete(
    t: TranscriptState, d: SessionTaskCompleteData, ts: datetime | None
) -> list[Change]:
    t.task_completed = True
    t.task_summary = d.summary
    return [t._add(TaskCompleteBlock(t._new_id(), d.summary, d.success, ts))]


def error(t: TranscriptState, d: SessionErrorData, ts: datetime | None) -> list[Change]:
    block = ErrorBlock(
        t._new_id(),
        d.error_type,
        d.message,
        error_hint(d.error_type, d.status_code),
        status_code=d.status_code,
        timestamp=ts,
    )
    t.last_error = block
    return [*interrupt(t, ts, "error"), t._add(block)]


def abort(t: TranscriptState, d: AbortData, ts: datetime | None) -> list[Change]:
    t.aborted = True
    return [
        *interrupt(t, ts, "aborted"),
        t._add(AbortBlock(t._new_id(), d.reason, ts)),
    ]


def session_start(t: TranscriptState, d: SessionStartData, ts: datetime | None) -> list[Change]:
    # Another session starts in the same file: what the last one left open is over.
    changes = close_open(t, ts)
    t.busy = False
    # The first start names the session: a fork holds its origin's start too.
    t.session_id = t.session_id or d.session_id
    if d.selected_model:
        t.model = t.selected_model = d.selected_model
    if d.context is not None:
        t.cwd, t.branch = d.context.cwd, d.context.branch
    return changes


def resume(t: TranscriptState, d: SessionResumeData, ts: datetime | None) -> list[Change]:
    # Whatever the previous process left open will never finish; a turn it
    # closed on restart without any reply was cut short too.
    changes = close_open(t, ts)
    turn = t._recent_turn
    if turn is not None and turn.status == "done" and not turn._text.finals:
        turn.status = "aborted"
        changes.append(Change("updated", turn))
    t.busy = False
    if d.selected_model:
        t.model = t.selected_model = d.selected_model
    if d.context is not None:
        t.cwd, t.branch = d.context.cwd, d.context.branch
    msg = f"session resumed ({d.event_count} events)"
    changes.append(t._add(NoticeBlock(t._new_id(), "resume", msg, timestamp=ts)))
    return changes


def shutdown(t: TranscriptState, d: SessionShutdownData, ts: datetime | None) -> list[Change]:
    changes = close_open(t, ts)  # shut down mid-turn: nothing open will finish
    t.busy = False
    msg = f"session ended ({d.shutdown_type})"
    changed = d.code_changes
    if changed.files_modified:
        msg += (
            f": {len(changed.files_modified)} file(s) changed,"
            f" +{changed.lines_added} -{changed.lines_removed}"
        )
    return [*changes, t._add(NoticeBlock(t._new_id(), "shutdown", msg, timestamp=ts))]


def handoff_notice(block_id: int, d: SessionHandoffData, ts: datetime | None) -> NoticeBlock:
    """The row that says which session this one continues (a fork's origin)."""
    origin = d.remote_session_id or "another session"
    message = d.summary or f"continues {origin}"
    return NoticeBlock(block_id, "info", message, subtype="handoff", tip=d.context, timestamp=ts)
