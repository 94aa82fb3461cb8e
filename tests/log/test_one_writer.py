"""One writer per session: a second process that resumes a session in use is refused.

Real ``loopdeck -p … --resume`` processes race here. The turn that holds the session
runs a bash command that waits for a file the test creates, so the overlap is
certain; the test synchronises on processes ending and on files they write, never
on how long anything takes.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from copilot.generated.session_events import session_event_from_dict

from agent.log import lock as session_lock
from agent.log.lock import (
    LOCK_FILE,
    SessionInUse,
    SessionLock,
    in_use_by,
    read_holder,
)
from agent.log.store import SessionStore
from agent.session.session import Session
from app.sessions_table import outcome_cell
from tests.support.scripting import scripted

TIMEOUT = 60.0  # generous for a loaded machine; a hang still fails

# Turn 1 holds the session until the test creates ``go``; ``started.*`` tells the
# test that a process got as far as running it (two of them: both were let in).
WAIT_FOR_GO = "mktemp started.XXXXXX >/dev/null; while [ ! -e go ]; do sleep 0.02; done; echo went"
TURNS: list[dict[str, Any]] = [
    {"text": "Ready."},
    {
        "text": "Working on it.",
        "tool_calls": [{"name": "bash", "arguments": {"command": WAIT_FOR_GO, "timeout": 120}}],
    },
    {"text": "Done."},
    {"text": "Done again."},
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def reap(workspace: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts; any still running at the end are killed, and the
    commands their turns left waiting (own process groups) are let go."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    (workspace / "go").touch()
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(TIMEOUT)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def start(home: Path, cwd: Path, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LOOPDECK_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def first_session(home: Path, workspace: Path, tmp_path: Path) -> str:
    """A session made by one ``-p`` run (turn 0 of the script); returns its id."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": TURNS}), encoding="utf-8")
    proc = start(home, workspace, "-p", "start", "--model", f"scripted:{script}")
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    (folder,) = (home / "session-state").iterdir()
    return folder.name


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def assert_one_chain(log: Path) -> list[dict[str, Any]]:
    """Every line parses with the official parser and points at the line before it."""
    lines = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    for line in lines:
        session_event_from_dict(line)
    assert lines[0]["parentId"] is None
    for before, after in itertools.pairwise(lines):
        assert after["parentId"] == before["id"], f"forked at {after['type']} {after['id']}"
    assert len({line["id"] for line in lines}) == len(lines)
    return lines


# --- two processes ---------------------------------------------------------------------


def test_two_resumes_at_once_one_runs_the_other_exits_2_naming_it(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, reap: list[subprocess.Popen[str]]
) -> None:
    session_id = first_session(loopdeck_home, workspace, tmp_path)
    argv = ("-p", "go on", "--resume", session_id[:8], "--allow-all-tools")
    reap += [start(loopdeck_home, workspace, *argv), start(loopdeck_home, workspace, *argv)]

    def decided() -> bool:
        both_ran = len(list(workspace.glob("started.*"))) > 1
        assert not both_ran, "both processes resumed the session and ran its turn"
        return any(proc.poll() is not None for proc in reap)

    wait_until(decided, "one of the two resumes to be refused")
    (loser,) = [proc for proc in reap if proc.poll() is not None]
    (winner,) = [proc for proc in reap if proc is not loser]
    out, err = loser.communicate(timeout=TIMEOUT)
    assert loser.returncode == 2, err
    assert out == ""
    assert f"session {session_id[:8]} is in use by another loopdeck process" in err
    assert f"pid {winner.pid}" in err
    assert "--resume" in err  # the holder's command line
    assert err.count("\n") == 1, err  # one line, no traceback

    (workspace / "go").touch()
    out, err = winner.communicate(timeout=TIMEOUT)
    assert winner.returncode == 0, err
    assert out == "Done.\n"

    lines = assert_one_chain(loopdeck_home / "session-state" / session_id / "events.jsonl")
    types = [line["type"] for line in lines]
    assert types.count("session.resume") == 1
    assert types.count("tool.execution_complete") == 1
    prompts = [line["data"]["content"] for line in lines if line["type"] == "user.message"]
    assert prompts == ["start", "go on"]
    # Let go at exit: nobody is named any more, and the next resume is welcome.
    assert read_holder(loopdeck_home / "session-state" / session_id) is None


def test_a_lock_left_by_a_killed_writer_is_taken_over(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, reap: list[subprocess.Popen[str]]
) -> None:
    """SIGKILL: the OS drops the lock with the process. The bash command it left
    running (its own process group, still waiting) does not keep the lock."""
    session_id = first_session(loopdeck_home, workspace, tmp_path)
    folder = loopdeck_home / "session-state" / session_id
    holder = start(
        loopdeck_home, workspace, "-p", "go on", "--resume", session_id[:8], "--allow-all-tools"
    )
    reap.append(holder)
    try:

        def running() -> bool:
            assert holder.poll() is None, holder.communicate()
            return any(workspace.glob("started.*"))

        wait_until(running, "the first resume's tool call")
        named = read_holder(folder)
        assert named is not None and named.pid == holder.pid
        assert in_use_by(folder) == named
        assert stat.S_IMODE((folder / LOCK_FILE).stat().st_mode) == 0o600
        # The listing (which never takes the lock) says who has it open.
        listing = start(loopdeck_home, workspace, "sessions")
        reap.append(listing)
        out, err = listing.communicate(timeout=TIMEOUT)
        assert listing.returncode == 0, err
        assert f"in progress (in use, pid {holder.pid})" in out

        holder.send_signal(signal.SIGKILL)
        holder.wait(TIMEOUT)
        stale = read_holder(folder)
        assert stale is not None and stale.pid == holder.pid  # the file still names it…
        assert in_use_by(folder) is None  # …but a listing knows it is gone
        assert outcome_cell(SessionStore(loopdeck_home).summary(session_id)) == "interrupted"

        again = start(loopdeck_home, workspace, "-p", "finish", "--resume", session_id[:8])
        reap.append(again)
        out, err = again.communicate(timeout=TIMEOUT)
    finally:
        (workspace / "go").touch()  # the orphaned bash loop ends
    assert again.returncode == 0, err
    assert "in use" not in err
    assert out == "Done.\n"
    lines = assert_one_chain(folder / "events.jsonl")
    interrupted = [
        line
        for line in lines
        if line["type"] == "tool.execution_complete" and not line["data"]["success"]
    ]
    assert len(interrupted) == 1  # the killed run's call, closed by the resume


# --- in one process ---------------------------------------------------------------------


async def test_a_new_session_is_locked_from_its_creation(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    model = scripted([{"text": "one"}, {"text": "two"}])
    first = await Session.create(model=model, cwd=tmp_path, store=store)
    await first.send_and_wait("hello")
    log = store.events_path(first.id)
    before = log.read_bytes()

    with pytest.raises(SessionInUse) as refused:
        await Session.resume(store=store, session_id=first.id, model=model)
    assert refused.value.holder is not None and refused.value.holder.pid == os.getpid()
    assert f"pid {os.getpid()}" in str(refused.value)
    assert log.read_bytes() == before  # the refused writer wrote nothing

    await first.close()
    second = await Session.resume(store=store, session_id=first.id, model=model)
    try:
        assert (await second.send_and_wait("again")).error is None
    finally:
        await second.close()
    assert_one_chain(log)


async def test_a_session_being_created_cannot_be_created_again(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    model = scripted([{"text": "one"}])
    first = await Session.create(model=model, cwd=tmp_path, store=store, session_id="chosen-id")
    try:
        with pytest.raises(SessionInUse):
            await Session.create(model=model, cwd=tmp_path, store=store, session_id="chosen-id")
    finally:
        await first.close()


def test_the_flock_decides_not_the_details_in_the_file(tmp_path: Path) -> None:
    """Stale details (a dead pid, or a live pid that now belongs to another process)
    neither block a writer nor show the session as in use."""
    folder = tmp_path / "sid"
    folder.mkdir()
    host = socket.gethostname()
    stale = [
        {"pid": 2**22 + 12345, "host": host, "command": "loopdeck -p x", "since": ""},
        # This process's pid, as if reused: its start time is not the recorded one.
        {"pid": os.getpid(), "host": host, "command": "loopdeck -p x", "started": "1"},
    ]
    for details in stale:
        (folder / LOCK_FILE).write_text(json.dumps(details), encoding="utf-8")
        assert read_holder(folder) is not None
        assert in_use_by(folder) is None
        lock = SessionLock.acquire(folder, "sid")
        try:
            holder = in_use_by(folder)
            assert holder is not None and holder.pid == os.getpid()
        finally:
            lock.release()
        assert read_holder(folder) is None
        lock.release()  # again: nothing happens


@pytest.mark.parametrize("content", ["", "{", "[1]", '{"pid": "7", "host": 1}', "\0\xff"])
def test_damaged_details_are_nobody(tmp_path: Path, content: str) -> None:
    (tmp_path / LOCK_FILE).write_text(content, encoding="utf-8", errors="surrogateescape")
    assert read_holder(tmp_path) is None
    assert in_use_by(tmp_path) is None


def test_a_holder_whose_details_are_stale_is_not_misnamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flock is held but the file names a process that is gone (the holder has
    not written its own details yet): the refusal names nobody rather than a stranger."""
    monkeypatch.setattr(session_lock, "_DETAILS_WAIT", 0.05)
    folder = tmp_path / "sid"
    lock = SessionLock.acquire(folder, "sid", create=True)
    try:
        gone = {"pid": 2**22 + 12345, "host": socket.gethostname(), "command": "old"}
        (folder / LOCK_FILE).write_text(json.dumps(gone), encoding="utf-8")
        with pytest.raises(SessionInUse) as refused:
            SessionLock.acquire(folder, "sid")
        assert refused.value.holder is None
        assert "in use by another loopdeck process (its details are not known)" in str(
            refused.value
        )
    finally:
        lock.release()
    SessionLock.acquire(folder, "sid").release()  # free again
