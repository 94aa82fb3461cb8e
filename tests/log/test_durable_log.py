"""The log is written before anything depends on it: subscribers see only written
events, a tool that changes the workspace starts only once its request is fsynced,
and a failed write stops the loop with a storage error."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from copilot.generated.session_events import session_event_from_dict

import agent.log.writer
from agent.events.schema import Event
from agent.log.store import SessionStore
from agent.permissions.rules import PermissionPolicy
from agent.session.session import Session
from agent.tools.base import ToolContext
from tests.support.fake_effect_tool import FakeEffectTool, with_effect_tool
from tests.support.paths import ROOT
from tests.support.scripting import FakeRecorder, new_session, scripted

GREP = {"name": "grep", "arguments": {"pattern": "x"}}


def effect(path: str) -> dict[str, Any]:
    return {"name": "fake_effect", "arguments": {"path": path, "text": path}}


def official_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the log, each checked with the official parser."""
    raw = path.read_bytes()
    assert raw.endswith(b"\n"), "the log ends with a whole line"
    lines = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    for line in lines:
        session_event_from_dict(line)
    return lines


async def test_subscribers_see_an_event_only_once_it_is_written(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = SessionStore(loopdeck_home)
    seen_before_written: list[str] = []
    log_path: list[Path] = []

    def check(event: Event) -> None:
        if event.ephemeral or not log_path:
            return
        if event.id not in log_path[0].read_text("utf-8"):
            seen_before_written.append(event.type)

    model = scripted([{"text": "a b c", "tool_calls": [GREP]}, {"text": "done"}])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = await Session.create(model=model, cwd=workspace, store=store)
    log_path.append(store.events_path(session.id))
    recorder = FakeRecorder()
    session.subscribe(check, replay=True)
    session.subscribe(recorder)
    session.set_mode("plan")  # between sends, too
    await session.send_and_wait("hi")
    await session.close()
    assert seen_before_written == []
    # Ephemeral events keep their place in the stream: deltas after their turn start.
    types = recorder.types()
    assert types.index("assistant.turn_start") < types.index("assistant.message_delta")
    assert types.index("assistant.message_delta") < types.index("assistant.message")
    assert types[-1] == "session.idle"


@pytest.mark.parametrize("group_interval", [None, 3600.0])
async def test_a_write_tool_starts_only_once_its_request_is_fsynced(
    tmp_path: Path,
    loopdeck_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    group_interval: float | None,
) -> None:
    """Record before effect: the assistant.message and tool.execution_start of a call
    are fsynced before the tool runs (a read tool is not waited for) — also while a
    turn end's fsync waits for its group (``group_interval``)."""
    if group_interval is not None:
        monkeypatch.setattr(agent.log.writer, "TURN_END_SYNC_INTERVAL", group_interval)
    fsynced: dict[int, int] = {}  # inode -> size of the file at its last fsync
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        real_fsync(fd)
        st = os.fstat(fd)
        fsynced[st.st_ino] = st.st_size

    monkeypatch.setattr(os, "fsync", recording_fsync)
    store = SessionStore(loopdeck_home)
    problems: list[str] = []
    runs: list[str] = []

    def check(ctx: ToolContext, path: str) -> None:
        runs.append(path)
        log = next(store.root.iterdir()) / "events.jsonl"
        raw = log.read_bytes()
        call = ctx.tool_call_id
        needed, requested = 0, False
        for line in raw.splitlines(keepends=True):
            needed += len(line)
            event = json.loads(line)
            if event["type"] == "assistant.message":
                ids = [r["toolCallId"] for r in event["data"].get("toolRequests") or []]
                requested = requested or call in ids
            if event["type"] == "tool.execution_start" and event["data"]["toolCallId"] == call:
                break
        else:
            problems.append(f"{path}: its start is not written")
            return
        if not requested:
            problems.append(f"{path}: its request is not written")
        if fsynced.get(os.stat(log).st_ino, 0) < needed:
            problems.append(f"{path}: tool ran before its request was fsynced")

    tool = FakeEffectTool(after=check)
    model = scripted(
        [
            {"text": "one", "tool_calls": [GREP, effect("a.txt")]},
            {"text": "two", "tool_calls": [effect("b.txt")]},
            {"text": "done"},
        ]
    )
    session, _ = await new_session(
        model,
        tmp_path,
        store=store,
        registry_factory=with_effect_tool(tool),
        policy=PermissionPolicy(allow_all=True),
    )
    outcome = await session.send_and_wait("go")
    await session.close()
    assert outcome.error is None
    assert runs == ["a.txt", "b.txt"]
    assert problems == []


def test_a_process_killed_right_after_a_side_effect_has_its_request_on_disk(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.fake_effect_tool",
            str(loopdeck_home),
            str(workspace),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr  # killed by the tool, right after its write
    assert (workspace / "effect.txt").read_text() == "done"
    session_id = proc.stdout.split()[0]
    lines = official_lines(SessionStore(loopdeck_home).events_path(session_id))
    requested = [
        request["toolCallId"]
        for line in lines
        if line["type"] == "assistant.message"
        for request in line["data"].get("toolRequests") or []
        if request["name"] == "fake_effect"
    ]
    started = [
        line["data"]["toolCallId"] for line in lines if line["type"] == "tool.execution_start"
    ]
    assert len(requested) == 1 and started == requested


class FakeFullDisk:
    """Stands in for the log's write call: fails with ENOSPC, after writing half, from
    the first batch that holds ``marker`` on."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.real = agent.log.writer._write_all
        self.full = False

    def __call__(self, fd: int, data: bytes) -> int:
        if self.full or self.marker in data:
            self.full = True
            half = os.write(fd, data[: len(data) // 2])
            no_space = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            raise agent.log.writer._PartialWrite(half, no_space)
        return self.real(fd, data)


async def test_a_failed_write_stops_the_loop_with_a_storage_error(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = FakeFullDisk(b"b.txt")
    monkeypatch.setattr(agent.log.writer, "_write_all", disk)
    store = SessionStore(loopdeck_home)
    model = scripted(
        [
            {"text": "one", "tool_calls": [effect("a.txt")]},
            {"text": "two", "tool_calls": [effect("b.txt")]},
            {"text": "three", "tool_calls": [effect("c.txt")]},
            {"text": "done"},
        ]
    )
    session, rec = await new_session(
        model,
        tmp_path,
        store=store,
        registry_factory=with_effect_tool(FakeEffectTool()),
        policy=PermissionPolicy(allow_all=True),
    )
    log = store.events_path(session.id)
    outcome = await session.send_and_wait("go")
    workspace = tmp_path / "ws"
    assert outcome.error is not None and outcome.error.error_type == "storage"
    assert str(log) in outcome.error.message
    assert "No space left on device" in outcome.error.message
    # Stopped at once: the call whose request could not be written never ran.
    assert (workspace / "a.txt").exists()
    assert not (workspace / "b.txt").exists()
    assert model.calls == 2
    types = rec.types()
    assert types[-2:] == ["session.error", "session.idle"]
    stopped = rec.of("tool.execution_complete")[-1].data
    assert stopped.error is not None and "log could not be written" in stopped.error.message
    assert types.count("session.idle") == 1
    assert types.index("assistant.turn_end", types.index("session.error") - 1)
    # What was written is whole lines (the torn half-batch was cut back).
    written = official_lines(log)
    assert "session.error" not in [line["type"] for line in written]
    # A later send fails at once, without calling the model.
    again = await session.send_and_wait("more")
    assert again.error is not None and again.error.error_type == "storage"
    assert model.calls == 2
    await session.close()

    # Space again: the session resumes and goes on.
    monkeypatch.setattr(agent.log.writer, "_write_all", disk.real)
    resumed = await Session.resume(
        store=store,
        session_id=session.id,
        model=scripted([{"text": "back"}], when_exhausted="stop"),
        registry_factory=with_effect_tool(FakeEffectTool()),
    )
    final = await resumed.send_and_wait("and now?")
    await resumed.close()
    assert final.error is None and final.turns == 1
    lines = official_lines(log)
    assert lines[: len(written)] == written
    assert lines[-1]["type"] == "assistant.turn_end"


def test_create_leaves_nothing_partial_and_a_retry_works(tmp_path: Path) -> None:
    """A write cut off (here by RLIMIT_FSIZE) leaves no file; the same create then works."""
    code = """
import asyncio, resource, signal, sys
from pathlib import Path
from agent.tools.base import ToolContext
from agent.tools.registry import default_tools, execute

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
ws = Path(sys.argv[1])
ctx = ToolContext(cwd=ws)
args = {"path": "big.txt", "file_text": "x" * 200_000}
tools = default_tools(autopilot=True)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.RLIM_INFINITY))
first = asyncio.run(execute(tools, "create", args, ctx))
print(first.success, sorted(p.name for p in ws.iterdir()))
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
second = asyncio.run(execute(tools, "create", args, ctx))
print(second.success, (ws / "big.txt").stat().st_size)
"""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(workspace)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False []", "True 200000"]


async def test_waiting_on_a_writer_ends_when_its_task_is_gone(tmp_path: Path) -> None:
    # An event loop torn down without closing the session cancels the writer task;
    # whoever drains it (the turn ending as it is cancelled) must not wait for ever.
    import asyncio

    from agent.events.schema import SessionInfoData

    store = SessionStore(tmp_path / "home")
    writer = await store.open_writer("s-1")
    task = writer._task
    assert task is not None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    writer.append(Event.new(SessionInfoData(info_type="note", message="late"), None))
    await asyncio.wait_for(writer.drain(), 5)
    await asyncio.wait_for(writer.sync(), 5)
