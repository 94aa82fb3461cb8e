"""Real runs for the board's tests: ``loopdeck -p --autopilot`` processes over scripts
(held in a shell command until the test releases them, or failing), the app in a
pseudo-terminal waiting on a permission prompt, and each log's truth read with the
event parser, apart from the board's own fold."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.log.store import read_events
from tests.support.pty_app import AppInPty

WAIT = 90.0  # seconds a run may take to reach a point (processes start slowly when loaded)
# A shell command that waits for the test: until the file `go` appears in its workspace.
HOLD = "while [ ! -f go ]; do sleep 0.05; done; echo released"

HOLD_TURNS: list[dict[str, Any]] = [
    {
        "text": "Running the tests first.",
        "tool_calls": [{"name": "bash", "arguments": {"command": HOLD}}],
    },
    {
        "text": "Done.",
        "tool_calls": [{"name": "task_complete", "arguments": {"summary": "All tests pass."}}],
    },
]
FAIL_TURNS: list[dict[str, Any]] = [{"error": {"type": "auth", "message": "invalid API key"}}]
ASK_TURNS: list[dict[str, Any]] = [
    {
        "text": "The build folder has to go.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "rm -rf build"}}],
    },
    {"text": "Removed."},
]


@dataclass
class Run:
    name: str
    workspace: Path
    process: subprocess.Popen[bytes] | None = None
    app: AppInPty | None = None
    log: Path | None = None

    def release(self) -> None:
        (self.workspace / "go").touch()

    @property
    def pid(self) -> int:
        if self.process is not None:
            return self.process.pid
        assert self.app is not None
        return self.app.pid


@dataclass
class Runs:
    """The runs of one test, under ``home``; :meth:`close` releases and ends them all."""

    home: Path
    root: Path
    runs: dict[str, Run] = field(default_factory=dict)
    _drains: list[threading.Thread] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "LOOPDECK_HOME": str(self.home),
            "PYTHONUNBUFFERED": "1",
            "TERM": "xterm-256color",
        }

    def _workspace(self, name: str, turns: list[dict[str, Any]]) -> Path:
        ws = self.root / name
        ws.mkdir(parents=True)
        (ws / "script.json").write_text(json.dumps({"turns": turns}), "utf-8")
        return ws

    def autopilot(self, name: str, prompt: str, turns: list[dict[str, Any]]) -> Run:
        """``loopdeck -p PROMPT --autopilot`` (every tool allowed) in its own workspace."""
        ws = self._workspace(name, turns)
        argv = [sys.executable, "-m", "app.cli", "-p", prompt, "--autopilot"]
        argv += ["--allow-all-tools", "--model", f"scripted:{ws / 'script.json'}"]
        process = subprocess.Popen(
            argv,
            cwd=ws,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        run = self.runs[name] = Run(name, ws, process=process)
        return run

    def interactive(self, name: str, prompt: str, turns: list[dict[str, Any]]) -> Run:
        """The app (``loopdeck PROMPT``) on a pseudo-terminal of 120×36, its output drained."""
        ws = self._workspace(name, turns)
        argv = ["-m", "app.cli", "--model", f"scripted:{ws / 'script.json'}", prompt]
        app = AppInPty(argv, self.env(), ws)
        with contextlib.suppress(OSError):
            fcntl.ioctl(app.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
        drain = threading.Thread(target=self._drain, args=(app,), daemon=True)
        drain.start()
        self._drains.append(drain)
        run = self.runs[name] = Run(name, ws, app=app)
        return run

    def _drain(self, app: AppInPty) -> None:
        while not self._stop.is_set() and app._read(0.1):
            app.seen = app.seen[-4096:]  # keep reading; what it drew is not needed

    def log_of(self, run: Run) -> Path | None:
        """The log of the session ``run`` writes (found by its workspace)."""
        if run.log is not None:
            return run.log
        root = self.home / "session-state"
        for folder in root.iterdir() if root.is_dir() else []:
            meta = folder / "session.json"
            with contextlib.suppress(OSError, ValueError):
                if json.loads(meta.read_text("utf-8")).get("cwd") == str(run.workspace):
                    run.log = folder / "events.jsonl"
                    return run.log
        return None

    def close(self) -> None:
        for run in self.runs.values():
            run.release()  # a held command a killed run left behind ends too
        for run in self.runs.values():
            if run.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    run.process.wait(timeout=WAIT)
                if run.process.poll() is None:
                    run.process.kill()
                    run.process.wait()
        self._stop.set()
        for run in self.runs.values():
            if run.app is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(run.app.pid, signal.SIGTERM)
                if run.app.wait_exit(WAIT) is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(run.app.pid, signal.SIGKILL)
        for drain in self._drains:
            drain.join(timeout=5)
        for run in self.runs.values():
            if run.app is not None:
                run.app.__exit__(None, None, None)


async def until(check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Until ``check()`` holds (it reads logs or the board), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@dataclass(frozen=True)
class LogTruth:
    """What a log says, read with the event parser (not the board's fold)."""

    turns: int
    open_tools: tuple[str, ...]  # names of tools started and not completed
    pending_permissions: int
    error: bool
    task_complete: bool


def truth(log: Path) -> LogTruth:
    events = read_events(log).events
    turns = 0
    tools: dict[str, str] = {}
    permissions: set[str] = set()
    error = complete = False
    for event in events:
        wire = event.data.wire()
        match event.type:
            case "assistant.turn_start":
                turns += 1
            case "tool.execution_start":
                tools[wire["toolCallId"]] = wire["toolName"]
            case "tool.execution_complete":
                tools.pop(wire["toolCallId"], None)
            case "permission.requested":
                permissions.add(wire["requestId"])
            case "permission.completed":
                permissions.discard(wire["requestId"])
            case "session.error":
                error = True
            case "session.task_complete":
                complete = True
    return LogTruth(turns, tuple(tools.values()), len(permissions), error, complete)


def has_line(log: Path | None, etype: str) -> bool:
    """Whether the log holds a whole line of ``etype``."""
    if log is None or not log.is_file():
        return False
    head = f'{{"type":"{etype}"'
    return any(line.startswith(head) for line in log.read_text("utf-8").splitlines())
