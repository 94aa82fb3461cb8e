"""SIGKILL of ``loopdeck -p … --autopilot`` at random points, then ``--resume``.

A scripted model creates files, edits one and runs shell commands. Each trial kills
the process after a seeded-random number of events on its ``--output-format json``
stdout (an event is printed only once it is written, so the kill lands at a random
moment after that event is on disk), then checks what the kill left and what the
resume made of it:

- every whole line of the log parses with the official parser, and the pre-kill
  whole lines are a prefix of the resumed log (a torn tail is kept beside it);
- no change to the workspace exists without its request (the assistant.message
  naming the call and its tool.execution_start) in the log, before and after resume;
- no partial files: a created file is whole or absent, the edited file is one of
  its legal states, nothing else (no temporary file) is left;
- the resume closes every interrupted call and turn.

Trials: ``LOOPDECK_KILL_TRIALS`` (20 by default; 50 by hand), seed ``LOOPDECK_KILL_SEED``.
By hand, 50 trials each with seeds 1212, 7 and 99: all pass (~30 s a run). Before
events were made durable ahead of their effects, 4 of 50 (seed 1212) found a created
file or a shell command's output without its request on disk.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from copilot.generated.session_events import session_event_from_dict

TRIALS = int(os.environ.get("LOOPDECK_KILL_TRIALS", "20"))
SEED = int(os.environ.get("LOOPDECK_KILL_SEED", "1212"))
BIG = {name: "".join(f"{name} line {i}\n" for i in range(4000)) for name in ("a1", "a2")}
NOTES = "# notes\nTODO-1 first\nTODO-2 second\n"
TIMEOUT = 120


def create(name: str, text: str) -> dict[str, Any]:
    return {"name": "create", "arguments": {"path": f"{name}.txt", "file_text": text}}


def edit(n: int) -> dict[str, Any]:
    return {
        "name": "edit",
        "arguments": {"path": "notes.txt", "old_str": f"TODO-{n}", "new_str": f"DONE-{n}"},
    }


def bash(name: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": f"printf {name} > {name}.txt"}}


SCRIPT = {
    "turns": [
        {"text": "Creating the first file.", "tool_calls": [create("a1", BIG["a1"])]},
        {"text": "Marking one done and recording it.", "tool_calls": [edit(1), bash("b1")]},
        {
            "text": "The second file, and the second note.",
            "tool_calls": [create("a2", BIG["a2"]), edit(2)],
        },
        {"text": "One more record.", "tool_calls": [bash("b2"), create("a3", "small\n")]},
        {
            "text": "All done.",
            "tool_calls": [{"name": "task_complete", "arguments": {"summary": "done"}}],
        },
    ],
    "when_exhausted": "stop",
}
# What each effect must look like when present, and how to find its request.
EXPECTED_FILES = {
    "a1.txt": BIG["a1"],
    "a2.txt": BIG["a2"],
    "a3.txt": "small\n",
    "b1.txt": "b1",
    "b2.txt": "b2",
}


def loopdeck(home: Path, workspace: Path, script: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LOOPDECK_HOME": str(home)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "-p",
            "do the work",
            "--autopilot",
            "--allow-all-tools",
            "--output-format",
            "json",
            "--model",
            f"scripted:{script}",
            *extra,
        ],
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@dataclass
class Setup:
    script: Path
    events: int  # stdout lines of a whole run


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    root = tmp_path_factory.mktemp("kill")
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT))
    workspace = fresh_workspace(root / "calibrate")
    proc = loopdeck(root / "calibrate-home", workspace, script)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert json.loads(lines[-1])["type"] == "session.idle"
    assert sorted(p.name for p in workspace.iterdir()) == sorted(["notes.txt", *EXPECTED_FILES])
    return Setup(script, len(lines))


def fresh_workspace(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "notes.txt").write_text(NOTES)
    return path


def kill_points() -> Iterator[tuple[int, float]]:
    rng = random.Random(SEED)
    for _ in range(TRIALS):
        yield rng.random(), rng.random()


@pytest.mark.parametrize(("trial", "point"), list(enumerate(kill_points())))
def test_sigkill_then_resume_loses_nothing(
    setup: Setup, tmp_path: Path, trial: int, point: tuple[float, float]
) -> None:
    home = tmp_path / "home"
    workspace = fresh_workspace(tmp_path / "ws")
    after = 1 + int(point[0] * (setup.events - 1))  # 1 .. events-1 lines seen
    proc = loopdeck(home, workspace, setup.script)
    watchdog = threading.Timer(TIMEOUT, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        seen = [proc.stdout.readline() for _ in range(after)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
    finally:
        watchdog.cancel()
    assert proc.returncode == -signal.SIGKILL, f"ended on its own after {len(seen)} events"
    session_id = json.loads(seen[0])["data"]["sessionId"]
    log = home / "session-state" / session_id / "events.jsonl"
    wait_for_tools_to_finish(workspace)

    before = log.read_bytes()
    whole = before[: before.rfind(b"\n") + 1]
    tail = before[len(whole) :]
    pre_kill = parse_whole(whole)
    check_workspace(workspace, pre_kill)

    resume = loopdeck(
        home, workspace, setup.script, "--resume", session_id, "--max-autopilot-continues", "1"
    )
    out, err = resume.communicate(timeout=TIMEOUT)
    assert resume.returncode in (0, 3), err.decode()
    assert json.loads(out.decode().splitlines()[-1])["type"] == "session.idle"
    wait_for_tools_to_finish(workspace)

    after_resume = log.read_bytes()
    assert after_resume.startswith(whole)
    assert after_resume.endswith(b"\n")
    events = parse_whole(after_resume)
    if tail:
        kept = [p.read_bytes() for p in log.parent.glob("events.torn-*.jsonl")]
        assert kept == [tail] or after_resume.startswith(whole + tail + b"\n")
    started = {e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_start"}
    completed = {e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_complete"}
    assert started <= completed, "an interrupted call was left open"
    turns = [e["type"] for e in events if e["type"].startswith("assistant.turn_")]
    assert turns.count("assistant.turn_start") == turns.count("assistant.turn_end")
    check_workspace(workspace, events)


def parse_whole(raw: bytes) -> list[dict[str, Any]]:
    """Every whole line, each through the official parser."""
    events = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    for event in events:
        session_event_from_dict(event)
    return events


def check_workspace(workspace: Path, events: list[dict[str, Any]]) -> None:
    """Every change has its request in ``events``; no file is partial or unknown."""
    requested: dict[str, dict[str, Any]] = {}
    for event in events:
        if event["type"] == "assistant.message":
            for request in event["data"].get("toolRequests") or []:
                requested[request["toolCallId"]] = request
    calls = [
        requested[e["data"]["toolCallId"]]
        for e in events
        if e["type"] == "tool.execution_start" and e["data"]["toolCallId"] in requested
    ]

    def asked(name: str, **arguments: str) -> bool:
        return any(
            call["name"] == name
            and all(call["arguments"].get(k) == v for k, v in arguments.items())
            for call in calls
        )

    names = sorted(p.name for p in workspace.iterdir())
    assert set(names) <= {"notes.txt", *EXPECTED_FILES}, f"unexpected files: {names}"
    for name in names:
        if name == "notes.txt":
            continue
        assert (workspace / name).read_text() == EXPECTED_FILES[name], f"{name} is partial"
        if name.startswith("a"):
            assert asked("create", path=name), f"{name} created without its request on disk"
        else:
            assert asked("bash", command=f"printf {name[:2]} > {name}"), f"{name} without request"
    notes = (workspace / "notes.txt").read_text()
    legal = [
        NOTES.replace("TODO-1", one).replace("TODO-2", two)
        for one, two in itertools.product(("TODO-1", "DONE-1"), ("TODO-2", "DONE-2"))
    ]
    assert notes in legal, "notes.txt is partial"
    for n in (1, 2):
        if f"DONE-{n}" in notes:
            assert asked("edit", new_str=f"DONE-{n}"), f"edit {n} without its request on disk"


def wait_for_tools_to_finish(workspace: Path) -> None:
    """A shell command of the killed process runs on in its own session: wait (on the
    condition, not a clock) until no process works in the workspace any more."""
    target = str(workspace.resolve())
    deadline = 10_000
    for _ in range(deadline):
        busy = False
        for cwd in Path("/proc").glob("[0-9]*/cwd"):
            try:
                if os.readlink(cwd) == target:
                    busy = True
                    break
            except OSError:
                continue
        if not busy:
            return
        threading.Event().wait(0.001)
    raise AssertionError("a tool process is still running in the workspace")
