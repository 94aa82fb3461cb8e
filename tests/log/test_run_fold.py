"""The board's rows (agent/log/run_fold.py, agent/log/runs.py): the small fold over
real Copilot CLI logs and loopdeck's, read whole or as they grow (the same row), the
state judged by the writer's lock, and only appended bytes read on each poll."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

import agent.log.runs as runs_module
from agent.log.lock import SessionLock
from agent.log.run_fold import (
    DONE,
    FAILED,
    IDLE,
    INTERRUPTED,
    THINKING,
    TOOL,
    WAITING,
    RunRow,
    fold_envelope,
    fold_line,
    row_state,
)
from agent.log.runs import COPILOT, LOOPDECK, RunBoard, RunTracker, copilot_alive
from tests.support.board_logs import START, LogBuilder, meta, sid
from tests.support.paths import FIXTURES

COPILOT_LOGS = sorted((FIXTURES / "copilot-real").glob("*/events.jsonl"))
LOGS = [*COPILOT_LOGS, FIXTURES / "loopdeck-session" / "events.jsonl"]


def _whole(log: Path) -> RunRow:
    row = RunRow()
    for line in log.read_text("utf-8").splitlines():
        fold_line(row, line)
    return row


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name[:40])
def test_a_log_read_as_it_grows_folds_as_read_whole(log: Path, tmp_path: Path) -> None:
    """Written a few hundred bytes at a time (lines torn across writes), followed:
    the row is the one the whole log gives."""
    data = log.read_bytes()
    grown = tmp_path / "s" / "events.jsonl"
    grown.parent.mkdir()
    grown.write_bytes(b"")
    tracker = RunTracker(grown, COPILOT)
    for at in range(0, len(data), 777):
        with grown.open("ab") as out:
            out.write(data[at : at + 777])
        tracker.poll()
    whole = _whole(log)
    whole.session_id = tracker.row.session_id or whole.session_id
    assert tracker.row == whole
    assert tracker.row.problems == 0


def test_a_copilot_permission_left_open_at_shutdown_is_not_waiting() -> None:
    log = (
        FIXTURES / "copilot-real" / "irrlicht-2-19_tool-gate-permission-prompt-2026-08-03-18-02-54"
    )
    row = _whole(log / "events.jsonl")
    assert row.ended and not row.permissions
    assert row_state(row, None) == INTERRUPTED  # it ended with the request unanswered
    assert row.model  # from session.start / the model change


def test_the_state_is_judged_by_the_writer() -> None:
    b = LogBuilder(sid(1), START).start("/w", "m").prompt("go")
    b.turn(1, "Running.", "bash", {"command": "make"})
    row = RunRow()
    for line in b.lines:
        fold_envelope(row, line)
    assert row_state(row, True) == TOOL
    assert row_state(row, False) == INTERRUPTED  # the lock says the writer is gone
    assert row_state(row, None) == TOOL  # nothing tells: the log decides
    fold_envelope(
        row, {"type": "permission.requested", "data": {"requestId": "p"}, "timestamp": ""}
    )
    assert row_state(row, True) == WAITING
    fold_envelope(
        row, {"type": "permission.completed", "data": {"requestId": "p"}, "timestamp": ""}
    )
    b2 = LogBuilder(sid(1), START)
    b2.tool_done(1).turn_end(1).add("assistant.turn_start", {"turnId": "2"})
    for line in b2.lines:
        fold_envelope(row, line)
    assert row_state(row, True) == THINKING
    b3 = LogBuilder(sid(1), START)
    b3.add("assistant.message", {"messageId": "x", "content": "Done."}).turn_end(2)
    for line in b3.lines:
        fold_envelope(row, line)
    assert row_state(row, True) == IDLE  # the app waits for its user
    assert row_state(row, False) == DONE
    fold_envelope(row, {"type": "session.error", "data": {"message": "boom"}, "timestamp": ""})
    assert row_state(row, True) == FAILED and row.last_text == "boom"


def test_nudges_context_and_usage(tmp_path: Path) -> None:
    b = LogBuilder(sid(4), START).start("/w", "m").prompt("fix it")
    b.turn(1, "a", "view", {"path": "x"}).tool_done(1).usage("m", 10_000, 100, 0.5).turn_end(1)
    b.prompt("Continue", nudge=True).prompt("Continue", nudge=True)
    b.turn(2, "b").usage("m", 35_600, 300, 1.25)
    log = b.write(tmp_path / sid(4), meta(cap=7, window=128_000))
    tracker = RunTracker(log, LOOPDECK)
    tracker.poll()
    row = tracker.row
    assert (row.nudges, row.nudge_cap) == (2, 7)
    assert (row.input_tokens, row.output_tokens, row.cost) == (35_600, 300, 1.25)
    assert row.last_call_input == 25_600 and row.context_percent == 20
    assert row.first_prompt == "fix it" and row.turns == 2


def test_a_poll_reads_only_what_was_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = LogBuilder(sid(1), START).start("/w", "m").prompt("go").turn(1, "x", "bash", {})
    log = b.write(tmp_path / sid(1))
    folded: list[str] = []
    real = runs_module.fold_line
    monkeypatch.setattr(
        runs_module, "fold_line", lambda row, line: (folded.append(line), real(row, line))
    )
    board = RunBoard([(tmp_path, LOOPDECK)])
    assert board.poll()
    assert len(folded) == len(b.lines)
    folded.clear()
    assert not board.poll(rescan=False)  # nothing appended: nothing read
    assert folded == []
    more = LogBuilder(sid(1), START)
    more.tool_done(1).turn_end(1)
    with log.open("a") as out:
        out.write("".join(json.dumps(line) + "\n" for line in more.lines))
    assert board.poll(rescan=False)
    assert len(folded) == 2


def test_old_runs_stay_off_the_board_unless_their_writer_lives(tmp_path: Path) -> None:
    old = LogBuilder(sid(1), START).start("/w", "m").prompt("old").write(tmp_path / sid(1))
    held = LogBuilder(sid(2), START).start("/w", "m").prompt("held").write(tmp_path / sid(2))
    for log in (old, held):
        os.utime(log, (1_000_000, 1_000_000))  # quiet for decades
    lock = SessionLock.acquire(held.parent, sid(2))
    try:
        board = RunBoard([(tmp_path, LOOPDECK)], recent=3600)
        board.poll()
        assert [v.row.first_prompt for v in board.views()] == ["held"]
    finally:
        lock.release()


def test_a_killed_writer_is_told_by_its_lock(tmp_path: Path) -> None:
    """A real process holds the session's lock, then is killed: the row turns
    interrupted at once, however recently the log was written."""
    b = LogBuilder(sid(3), START).start("/w", "m").prompt("go").turn(1, "x", "bash", {})
    log = b.write(tmp_path / sid(3))
    code = (
        "import sys; from agent.log.lock import SessionLock; from pathlib import Path;"
        f"SessionLock.acquire(Path({str(log.parent)!r}), 'x'); print('held', flush=True);"
        "sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        board = RunBoard([(tmp_path, LOOPDECK)])
        board.poll()
        assert board.views()[0].state == TOOL
        holder.kill()
        holder.wait()
        assert board.poll(rescan=False)
        assert board.views()[0].state == INTERRUPTED
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_copilot_liveness_from_a_lock_naming_a_pid(tmp_path: Path) -> None:
    assert copilot_alive(tmp_path) is None  # nothing to tell by
    (tmp_path / f"inuse.{os.getpid()}.lock").write_text("")
    assert copilot_alive(tmp_path) is True
    (tmp_path / f"inuse.{os.getpid()}.lock").unlink()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / f"inuse.{dead.pid}.lock").write_text("")
    assert copilot_alive(tmp_path) is False


@pytest.mark.parametrize("log", LOGS[:3], ids=lambda p: p.parent.name[:40])
def test_a_log_first_seen_is_read_a_chunk_at_a_time(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs_module, "FIRST_READ_CHUNK", 333)  # lines cross every seam
    copy = tmp_path / "s" / "events.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(log.read_bytes() + b'{"type":"abort","data":{}')  # and a torn tail
    tracker = RunTracker(copy, COPILOT)
    tracker.poll()
    whole = _whole(log)
    whole.session_id = tracker.row.session_id or whole.session_id
    assert tracker.row == whole
    with copy.open("ab") as out:
        out.write(b',"timestamp":""}\n')  # the tail completed: read once, whole
    assert tracker.poll()
    assert tracker.row.outcome == "interrupted" and tracker.row.problems == 0


def test_working_runs_keep_their_place_and_deleted_ones_leave(tmp_path: Path) -> None:
    logs = []
    for n in (1, 2):
        b = LogBuilder(sid(n), START + timedelta(minutes=n)).start("/w", "m").prompt(f"run {n}")
        logs.append(b.turn(1, "x", "bash", {}).write(tmp_path / sid(n)))
    locks = [SessionLock.acquire(log.parent, log.parent.name) for log in logs]
    try:
        board = RunBoard([(tmp_path, LOOPDECK)])
        board.poll()
        assert [v.row.first_prompt for v in board.views()] == ["run 2", "run 1"]
        later = LogBuilder(sid(1), START + timedelta(hours=1)).tool_done(1)
        with logs[0].open("a") as out:
            out.write(json.dumps(later.lines[0]) + "\n")  # run 1 is the latest to write
        board.poll()
        assert [v.row.first_prompt for v in board.views()] == ["run 2", "run 1"]
        locks[1].release()
        shutil.rmtree(logs[1].parent)
        board.poll(rescan=True)
        assert [v.row.first_prompt for v in board.views()] == ["run 1"]
    finally:
        for lock in locks:
            lock.release()
