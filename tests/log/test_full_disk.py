"""A full disk under ``LOOPDECK_HOME``: a small tmpfs in a private mount namespace.

The run stops at the write that fails: its turn ends, ``session.error`` (storage,
with the path and the OS error) and ``session.idle`` are printed, exit 1, and what
was written stays whole; with space freed, ``--resume`` goes on. Starting on a full
disk is one line. Needs root and ``unshare -m`` (skipped otherwise); the same
checks with ``RLIMIT_FSIZE`` in place of the tmpfs run anywhere.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from copilot.generated.session_events import session_event_from_dict

from tests.support.full_disk import can_mount_tmpfs, folders, run_driver

BIG = "".join(f"line {i} of a big file\n" for i in range(15_000))  # ~330 KB

DRIVER = r"""
set -u
mount -t tmpfs -o size=2m tmpfs "$HOME_DIR" || exit 97
# Leave ~128 KiB: the first turns fit, the message that creates the big file does not.
head -c $((2048 * 1024 - 128 * 1024)) /dev/zero > "$HOME_DIR/filler"
run() { "$PYTHON" -m app.cli --autopilot --allow-all-tools --model "scripted:$SCRIPT" "$@"; }
cd "$WS"
run -p "build it" --output-format json > "$OUT/full.out" 2> "$OUT/full.err"
echo $? > "$OUT/full.rc"
cp -a "$HOME_DIR/session-state" "$OUT/state-full"
rm "$HOME_DIR/filler"
id=$(ls "$HOME_DIR/session-state")
run -p "go on" --resume "$id" --output-format json > "$OUT/resume.out" 2> "$OUT/resume.err"
echo $? > "$OUT/resume.rc"
cp -a "$HOME_DIR/session-state" "$OUT/state-resumed"
head -c $((4 * 1024 * 1024)) /dev/zero > "$HOME_DIR/filler" 2> /dev/null
run -p "start anew" > "$OUT/start.out" 2> "$OUT/start.err"
echo $? > "$OUT/start.rc"
ls "$HOME_DIR/session-state" > "$OUT/start.sessions"
"""


def lines_of(raw: bytes) -> list[dict[str, Any]]:
    """Every line, each through the official parser; the file ends with a whole line."""
    assert raw.endswith(b"\n")
    events = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    for event in events:
        session_event_from_dict(event)
    return events


def test_full_disk_stops_the_run_cleanly_and_resumes_once_freed(tmp_path: Path) -> None:
    reason = can_mount_tmpfs()
    if reason is not None:
        pytest.skip(reason)
    home, workspace, out = folders(tmp_path)
    script = write_script(tmp_path / "script.json")
    run_driver(DRIVER, home, workspace, out, script)

    # The full disk: exit 1, the storage error then idle, last; no traceback.
    assert (out / "full.rc").read_text().strip() == "1"
    printed = [json.loads(line) for line in (out / "full.out").read_text().splitlines()]
    assert [e["type"] for e in printed[-2:]] == ["session.error", "session.idle"]
    error = printed[-2]["data"]
    assert error["errorType"] == "storage"
    session_id = printed[0]["data"]["sessionId"]
    log_name = f"{home}/session-state/{session_id}/events.jsonl"
    assert error["message"] == f"cannot write {log_name}: No space left on device"
    assert "assistant.turn_end" in [e["type"] for e in printed[-5:-2]]
    assert "Traceback" not in (out / "full.err").read_text()
    # Stopped at once: the big file's request is not on disk, so it was not created.
    assert (workspace / "ok.txt").read_text() == "ok"
    assert not (workspace / "big.txt").exists()
    written = (out / "state-full" / session_id / "events.jsonl").read_bytes()
    on_disk = lines_of(written)
    assert "session.error" not in [e["type"] for e in on_disk]

    # Space freed: the session resumes in the same log and finishes the work.
    assert (out / "resume.rc").read_text().strip() in ("0", "3"), (out / "resume.err").read_text()
    resumed_out = [json.loads(line) for line in (out / "resume.out").read_text().splitlines()]
    assert resumed_out[-1]["type"] == "session.idle"
    assert "session.error" not in [e["type"] for e in resumed_out]
    resumed = (out / "state-resumed" / session_id / "events.jsonl").read_bytes()
    assert resumed.startswith(written)
    events = lines_of(resumed)
    started = {e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_start"}
    completed = {e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_complete"}
    assert started <= completed

    # Starting on a full disk: one line, nothing left behind.
    assert (out / "start.rc").read_text().strip() == "2"
    message = (out / "start.err").read_text()
    assert message.count("\n") == 1 and message.startswith("loopdeck: "), message
    assert "No space left on device" in message
    assert (out / "start.sessions").read_text().split() == [session_id]


def write_script(path: Path) -> Path:
    """A small step, then a create whose request alone is larger than the room left."""
    task_complete = {"name": "task_complete", "arguments": {"summary": "built"}}
    bash = {"name": "bash", "arguments": {"command": "printf ok > ok.txt"}}
    create = {"name": "create", "arguments": {"path": "big.txt", "file_text": BIG}}
    turns = [
        {"text": "A small step first.", "tool_calls": [bash]},
        {"text": "Now the big file.", "tool_calls": [create]},
        {"text": "Done.", "tool_calls": [task_complete]},
        {"text": "Done.", "tool_calls": [task_complete]},
    ]
    path.write_text(json.dumps({"turns": turns, "when_exhausted": "stop"}))
    return path


def test_file_size_limit_stops_the_run_cleanly(tmp_path: Path) -> None:
    """The same without a mount: RLIMIT_FSIZE makes the log's write fail (EFBIG)."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    script = write_script(tmp_path / "script.json")

    def run(*argv: str, limit: int | None) -> subprocess.CompletedProcess[str]:
        def limited() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a kill
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        return subprocess.run(
            [
                sys.executable,
                "-m",
                "app.cli",
                "--autopilot",
                "--allow-all-tools",
                "--model",
                f"scripted:{script}",
                *argv,
            ],
            cwd=workspace,
            env={**os.environ, "LOOPDECK_HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=limited,
        )

    full = run("-p", "build it", "--output-format", "json", limit=256 * 1024)
    assert full.returncode == 1, full.stderr
    printed = [json.loads(line) for line in full.stdout.splitlines()]
    assert [e["type"] for e in printed[-2:]] == ["session.error", "session.idle"]
    session_id = printed[0]["data"]["sessionId"]
    log = home / "session-state" / session_id / "events.jsonl"
    assert printed[-2]["data"]["errorType"] == "storage"
    assert printed[-2]["data"]["message"] == f"cannot write {log}: File too large"
    assert "Traceback" not in full.stderr
    assert (workspace / "ok.txt").exists() and not (workspace / "big.txt").exists()
    written = log.read_bytes()
    lines_of(written)

    resumed = run("-p", "go on", "--resume", session_id, "--output-format", "json", limit=None)
    assert resumed.returncode in (0, 3), resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["type"] == "session.idle"
    after = log.read_bytes()
    assert after.startswith(written)
    lines_of(after)

    start = run("-p", "start anew", limit=0)
    assert start.returncode == 2
    assert start.stderr.count("\n") == 1 and start.stderr.startswith("loopdeck: "), start.stderr
    assert "File too large" in start.stderr
    assert sorted(p.name for p in (home / "session-state").iterdir()) == [session_id]
