"""A log that fails while the loop runs ahead of it: read-only tools, which need no
fsync, let the loop outpace its writer. The failed batch and everything after it
is shown marked ``unsaved``, never as written; the loop starts no model call or tool
once the write failed; ``-p`` says so on stderr in every output format; with space
freed, ``--resume`` goes on."""

from __future__ import annotations

import errno
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import agent.log.writer
from agent.log.store import SessionStore
from agent.log.writer import SessionWriter
from app.cli import main
from tests.support.full_disk import can_mount_tmpfs, folders, run_driver
from tests.support.scripting import new_session, scripted

VIEW = "view"


def view(name: str) -> dict[str, Any]:
    return {"name": VIEW, "arguments": {"path": name}}


class FakeStalledDisk:
    """Stands in for the log's write call. The batch holding ``marker`` stalls, then
    fails with ENOSPC, once the loop either calls the model again or waits for the
    writer (whichever it does first): so a loop that runs ahead of its log is caught
    doing it, whatever the machine's speed."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.real = agent.log.writer._write_all
        self.go_on = threading.Event()
        self.failed = False

    def __call__(self, fd: int, data: bytes) -> int:
        if self.failed or self.marker in data:
            # A safety net only: either release comes at once in a correct run.
            assert self.go_on.wait(timeout=60), "the loop neither waited nor went on"
            self.failed = True
            raise agent.log.writer._PartialWrite(
                0, OSError(errno.ENOSPC, "No space left on device")
            )
        return self.real(fd, data)


def releasing(real: Any, disk: FakeStalledDisk) -> Any:
    """A writer's wait (``written``, ``sync``, ``drain``) that releases the stalled
    write first."""

    async def wait(*args: Any) -> None:
        disk.go_on.set()
        await real(*args)

    return wait


def release_on_wait(writer: SessionWriter, disk: FakeStalledDisk) -> None:
    for name in ("written", "sync", "drain"):
        real = getattr(writer, name, None)
        if real is not None:
            setattr(writer, name, releasing(real, disk))


async def test_the_loop_stops_at_a_failed_write_it_ran_ahead_of(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = FakeStalledDisk(b"Reading two.")
    monkeypatch.setattr(agent.log.writer, "_write_all", disk)
    store = SessionStore(loopdeck_home)
    inner = scripted(
        [
            {"text": "Reading one.", "tool_calls": [view("one.txt")]},
            {"text": "Reading two.", "tool_calls": [view("two.txt")]},
            {"text": "Reading three.", "tool_calls": [view("three.txt")]},
            {"text": "All read."},
        ]
    )

    class FakeGateModel:
        """The scripted model; a third call (one the loop should never make, its
        second reply's batch being the one that fails) releases the stalled write."""

        name = inner.name
        retry_policy = inner.retry_policy
        calls = 0

        def stream(self, messages: Any, tools: Any, *, call_index: int) -> Any:
            self.calls += 1
            if self.calls >= 3:
                disk.go_on.set()
            return inner.stream(messages, tools, call_index=call_index)

    model = FakeGateModel()
    session, rec = await new_session(model, tmp_path, store=store)
    for name in ("one", "two", "three"):
        (tmp_path / "ws" / f"{name}.txt").write_text(f"{name}\n")
    assert session._writer is not None
    release_on_wait(session._writer, disk)
    log = store.events_path(session.id)

    outcome = await session.send_and_wait("read them")

    assert outcome.error is not None and outcome.error.error_type == "storage"
    assert outcome.error.message == f"cannot write {log}: No space left on device"
    # No model call after the failed write: the third turn never asked the model.
    assert model.calls == 2
    on_disk = {json.loads(line)["id"] for line in log.read_text("utf-8").splitlines()}
    persisted = [e for e in rec.events if not e.ephemeral]
    # Shown as written only if written; everything else is marked, the batch that
    # failed first of all.
    assert [e.type for e in persisted if e.id not in on_disk and not e.unsaved] == []
    assert [e.type for e in persisted if e.id in on_disk and e.unsaved] == []
    unsaved = [e for e in persisted if e.unsaved]
    assert unsaved[0].type == "assistant.message" or unsaved[0].type == "assistant.turn_start"
    assert [e.type for e in unsaved].count("assistant.turn_start") <= 1
    assert unsaved[-1].type == "session.error"
    assert rec.types()[-1] == "session.idle"
    assert "unsaved" in unsaved[-1].wire() and "unsaved" not in persisted[0].wire()
    await session.close()


# --- the command line: a real full disk, and the file size limit anywhere ----------


def reading_script(path: Path, workspace: Path, files: int) -> Path:
    """Turns that each view a ~100 KB file (read-only: no fsync before them)."""
    turns = []
    for i in range(files):
        lines = "".join(f"line {j} of file {i} {'x' * 30}\n" for j in range(1900))
        (workspace / f"f{i}.txt").write_text(lines)
        turns.append({"text": f"Reading f{i}.", "tool_calls": [view(f"f{i}.txt")]})
    done = {"name": "task_complete", "arguments": {"summary": "all read"}}
    turns.append({"text": "Done.", "tool_calls": [done]})
    path.write_text(json.dumps({"turns": turns, "when_exhausted": "stop"}))
    return path


def check_printed_against_log(printed: list[dict[str, Any]], log: Path) -> list[dict[str, Any]]:
    """Every printed event that belongs in the log is in it, or says it is not.
    Returns the unsaved ones."""
    on_disk = {json.loads(line)["id"] for line in log.read_text("utf-8").splitlines()}
    persisted = [e for e in printed if not e.get("ephemeral")]
    assert [e["type"] for e in persisted if e["id"] not in on_disk and not e.get("unsaved")] == []
    assert [e["type"] for e in persisted if e["id"] in on_disk and e.get("unsaved")] == []
    return [e for e in persisted if e.get("unsaved")]


DRIVER = r"""
set -u
mount -t tmpfs -o size=1m tmpfs "$HOME_DIR" || exit 97
run() { "$PYTHON" -m app.cli --autopilot --allow-all-tools --model "scripted:$SCRIPT" "$@"; }
cd "$WS"
run -p "read them" --output-format json > "$OUT/full.out" 2> "$OUT/full.err"
echo $? > "$OUT/full.rc"
cp -a "$HOME_DIR/session-state" "$OUT/state-full"
mount -o remount,size=8m "$HOME_DIR"
id=$(ls "$HOME_DIR/session-state")
run -p "go on" --resume "$id" --output-format json > "$OUT/resume.out" 2> "$OUT/resume.err"
echo $? > "$OUT/resume.rc"
cp -a "$HOME_DIR/session-state" "$OUT/state-resumed"
"""


def test_json_on_a_full_tmpfs_marks_what_was_not_saved_and_says_so(tmp_path: Path) -> None:
    reason = can_mount_tmpfs()
    if reason is not None:
        pytest.skip(reason)
    home, workspace, out = folders(tmp_path)
    script = reading_script(tmp_path / "script.json", workspace, files=14)
    run_driver(DRIVER, home, workspace, out, script)

    assert (out / "full.rc").read_text().strip() == "1"
    printed = [json.loads(line) for line in (out / "full.out").read_text().splitlines()]
    session_id = printed[0]["data"]["sessionId"]
    log_name = f"{home}/session-state/{session_id}/events.jsonl"
    assert [e["type"] for e in printed[-2:]] == ["session.error", "session.idle"]
    message = f"cannot write {log_name}: No space left on device"
    assert printed[-2]["data"] == {"errorType": "storage", "message": message}
    # Said on stderr too, where a person reads it when stdout goes to a file.
    err = (out / "full.err").read_text()
    assert f"error (storage): {message}\n" in err
    assert '"unsaved": true' in err
    assert "Traceback" not in err
    unsaved = check_printed_against_log(printed, out / "state-full" / session_id / "events.jsonl")
    types = [e["type"] for e in unsaved]
    # The loop stopped within the turn it was in: no second reply, no second tool.
    assert types.count("assistant.message") <= 1, types
    assert types.count("tool.execution_start") <= 1, types
    assert types[-1] == "session.error"

    # Space freed: the session resumes in the same log, whole.
    assert (out / "resume.rc").read_text().strip() in ("0", "3"), (out / "resume.err").read_text()
    resumed = [json.loads(line) for line in (out / "resume.out").read_text().splitlines()]
    assert resumed[-1]["type"] == "session.idle"
    assert not any(e.get("unsaved") for e in resumed)
    before = (out / "state-full" / session_id / "events.jsonl").read_bytes()
    after = (out / "state-resumed" / session_id / "events.jsonl").read_bytes()
    assert after.startswith(before) and after.endswith(b"\n")


def test_text_output_names_the_failed_write_and_the_unsaved_answer(
    tmp_path: Path,
    loopdeck_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The last batch (the task_complete call and its summary) fails once the run is
    over and waits for its log: the summary is printed, and named as not saved."""
    disk = FakeStalledDisk(b"ANSWER-TEXT")
    monkeypatch.setattr(agent.log.writer, "_write_all", disk)
    for name in ("written", "sync", "drain"):
        real = getattr(SessionWriter, name, None)
        if real is not None:
            monkeypatch.setattr(SessionWriter, name, releasing(real, disk))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = {"name": "task_complete", "arguments": {"summary": "ANSWER-TEXT"}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "Done.", "tool_calls": [done]}]}))
    argv = ["-p", "go", "--autopilot", "--model", f"scripted:{script}", "--cwd", str(workspace)]

    code = main(argv)

    out, err = capsys.readouterr()
    assert code == 1, err
    (log,) = (loopdeck_home / "session-state").glob("*/events.jsonl")
    assert f"error (storage): cannot write {log}: No space left on device\n" in err
    assert "not in its log" in err
    assert out == "ANSWER-TEXT\n"
    assert "The answer above is not saved in the session log.\n" in err
    assert "ANSWER-TEXT" not in log.read_text("utf-8")


class FakeInlineFullDisk:
    """Fails (ENOSPC) every write made in the event loop's own thread: the turn
    barrier's inline write of a small batch."""

    def __init__(self) -> None:
        self.real = agent.log.writer._write_all
        self.failed = 0

    def __call__(self, fd: int, data: bytes) -> int:
        if threading.current_thread() is threading.main_thread():
            self.failed += 1
            raise agent.log.writer._PartialWrite(
                0, OSError(errno.ENOSPC, "No space left on device")
            )
        return self.real(fd, data)


async def test_a_write_failing_at_the_turn_barrier_stops_before_the_model_call(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(loopdeck_home)
    model = scripted([{"text": "never asked"}])
    session, rec = await new_session(model, tmp_path, store=store)
    disk = FakeInlineFullDisk()
    monkeypatch.setattr(agent.log.writer, "_write_all", disk)
    outcome = await session.send_and_wait("hello")
    assert disk.failed == 1
    assert outcome.error is not None and outcome.error.error_type == "storage"
    assert model.calls == 0
    types = rec.types()
    assert types.count("session.error") == 1, types
    assert types[-2:] == ["session.error", "session.idle"]
    assert "assistant.turn_start" not in types
    assert all(e.unsaved for e in rec.events if not e.ephemeral and e.type != "session.start")
    await session.close()
