"""The fault matrix in real processes: ``loopdeck -p`` as a terminal runs it.

``test_provider_faults.py`` plays every fault through the CLI in-process; this file
starts ``python -m app.cli`` for the few where a real process matters (a key that a
library might print straight to stderr, a time bound, a real Ctrl+C), side by side
(litellm's import costs seconds of CPU per process), each with its own fake server,
home and config, and checks what a terminal gets: exit code, stdout, stderr, files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.config import write_config
from tests.support.fake_openai_server import (
    Behaviour,
    FakeOpenAIServer,
    hang,
    stall,
    status,
    text,
)
from tests.support.paths import ROOT
from tests.support.provider_faults import (
    FAST,
    IDLE_TIMEOUT,
    KEY,
    LEAK_MARK,
    MODEL,
    NOTES,
    PLAIN_KEY,
    PROMPT,
    SERVER_MAX_BLOCK,
    SLACK,
    TIMING_OUT,
    nothing_left_running,
    run_cli,
    wall_time,
)

session_events = pytest.importorskip("copilot.generated.session_events")

# litellm's own use of deprecated pydantic attributes, not ours.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

__all__ = ["nothing_left_running"]  # an autouse fixture, imported to apply here too

# Process start-up (Python, then litellm's import: ~4 s of CPU each) on a loaded
# two-core machine. Only a bound on failure: nothing waits for it to pass.
STARTUP = 90.0
# From session.idle to the process gone, on a loaded machine.
TEARDOWN = 10.0


@dataclass
class Proc:
    """One ``loopdeck`` process: its server, its home/config/workspace (``root``)."""

    name: str
    server: FakeOpenAIServer
    root: Path
    key: str
    popen: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    ended: float = 0.0
    code: int | None = None
    out: str = ""
    err: str = ""

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    def _file(self, stream: str) -> Path:
        return self.root / f"{self.name}.{stream}"

    def start(self, *argv: str) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)
        (self.workspace / "notes.txt").write_text(NOTES, encoding="utf-8")
        env = {
            **os.environ,
            "LOOPDECK_HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "OPENAI_API_KEY": self.key,
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("LOOPDECK_MODEL", None)
        self.started = time.monotonic()
        with self._file("out").open("wb") as out, self._file("err").open("wb") as err:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "app.cli", *argv],
                cwd=self.workspace,
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )

    def wait(self, timeout: float) -> None:
        """Wait (never raises: a process still running is killed, ``code`` stays None)."""
        assert self.popen is not None
        try:
            self.code = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self.ended = time.monotonic()
        self.out = self._file("out").read_text("utf-8")
        self.err = self._file("err").read_text("utf-8")

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def session_id(self) -> str:
        [folder] = [p for p in (self.home / "session-state").iterdir() if p.is_dir()]
        return folder.name

    def check_common(self) -> None:
        """No traceback, the key nowhere, a log the official parser reads whole."""
        assert "Traceback" not in self.err, self.err
        for where, content in (("stdout", self.out), ("stderr", self.err)):
            assert self.key not in content and LEAK_MARK not in content, where
        for path in self.home.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert self.key.encode() not in data and LEAK_MARK.encode() not in data, path
        for log in self.home.glob("session-state/*/events.jsonl"):
            for line in log.read_text("utf-8").splitlines():
                parsed = session_events.session_event_from_dict(json.loads(line))
                assert parsed.type != session_events.SessionEventType.UNKNOWN, line
        for request in self.server.requests:
            assert request.header("authorization") == f"Bearer {self.key}"


class Lab:
    """Makes :class:`Proc` s, each with a fresh server; kills and closes them all."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.procs: list[Proc] = []

    def make(self, name: str, key: str, config: dict[str, Any], *script: Behaviour) -> Proc:
        server = FakeOpenAIServer(max_block=SERVER_MAX_BLOCK).start()
        server.script(*script)
        root = self.tmp_path / name
        root.mkdir()
        write_config(root, config)
        proc = Proc(name, server, root, key)
        self.procs.append(proc)
        return proc

    def again(self, proc: Proc, name: str) -> Proc:
        """A second process on the same server, home, config and workspace."""
        second = Proc(name, proc.server, proc.root, proc.key)
        self.procs.append(second)
        return second

    def close(self) -> None:
        for proc in self.procs:
            if proc.popen is not None and proc.popen.poll() is None:
                proc.popen.kill()
                proc.popen.wait()
        for proc in self.procs:
            proc.server.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    made = Lab(tmp_path)
    try:
        yield made
    finally:
        made.close()


def wait_all(procs: list[Proc], timeout: float) -> None:
    """Wait for every process at once, so each exit is timed when it happens."""
    waiters = [threading.Thread(target=p.wait, args=(timeout,)) for p in procs]
    for waiter in waiters:
        waiter.start()
    for waiter in waiters:
        waiter.join()


def args_for(proc: Proc, *extra: str, prompt: str = PROMPT) -> list[str]:
    return ["-p", prompt, "--model", MODEL, "--api-base", proc.server.base_url, *extra]


def assert_idle_once_and_last(events: list[dict[str, Any]]) -> None:
    types = [e["type"] for e in events]
    assert types.count("session.idle") == 1, types
    assert types[-1] == "session.idle", types


def test_faults_in_real_processes(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Exit codes 1, 2 and 130 as a terminal sees them; then a resume after the abort.

    (0 and 3, and every other fault, are played in-process by test_provider_faults.py.)
    """
    auth = lab.make("auth", PLAIN_KEY, FAST, status(401, echo_key=True))
    hung = lab.make("hang", KEY, TIMING_OUT, hang(), hang())
    usage = lab.make("usage", KEY, FAST)
    aborted = lab.make("abort", KEY, FAST, stall())

    auth.start(*args_for(auth))
    hung.start(*args_for(hung, "--output-format", "json"))
    # The api base as people type it for a local server: no scheme.
    usage.start("-p", PROMPT, "--model", MODEL, "--api-base", f"127.0.0.1:{usage.server.port}")
    aborted.start(*args_for(aborted, "--output-format", "json"))

    # Ctrl+C once the reply has started and the server has gone quiet.
    [stalled] = aborted.server.wait_for_requests(1, timeout=STARTUP)
    assert stalled.blocked.wait(STARTUP)
    assert aborted.popen is not None
    interrupted = time.monotonic()
    interrupted_wall = time.time()
    aborted.popen.send_signal(signal.SIGINT)

    wait_all(lab.procs, STARTUP + SERVER_MAX_BLOCK)
    for proc in lab.procs:
        proc.check_common()

    # 1: the provider refused the key (and quoted it back). Said once, naming the
    # variable to set; never retried; the key shown nowhere.
    assert auth.code == 1, auth.err
    assert "error (auth)" in auth.err and "OPENAI_API_KEY" in auth.err, auth.err
    assert len(auth.server.requests) == 1

    # 1: a server that never answers ends within the configured timeouts.
    assert hung.code == 1, hung.err
    hung_events = hung.events()
    assert_idle_once_and_last(hung_events)
    errors = [e["data"]["errorType"] for e in hung_events if e["type"] == "session.error"]
    assert errors == ["timeout"]
    assert len(hung.server.requests) == 2
    # Bounded by the timeouts: two attempts of IDLE_TIMEOUT each, then idle.
    idle_at = wall_time(hung_events[-1])
    assert idle_at - hung.server.requests[0].received_wall < 2 * IDLE_TIMEOUT + SLACK
    assert hung.ended - hung.server.requests[0].received_at < 2 * IDLE_TIMEOUT + TEARDOWN

    # 2: a usage error, said before any model is called.
    assert usage.code == 2, usage.err
    assert f"http://127.0.0.1:{usage.server.port}" in usage.err, usage.err
    assert usage.server.requests == []

    # 130: aborted promptly, idle last and marked aborted.
    assert aborted.code == 130, aborted.err
    abort_events = aborted.events()
    assert_idle_once_and_last(abort_events)
    assert abort_events[-1]["data"].get("aborted") is True
    assert wall_time(abort_events[-1]) - interrupted_wall < 3
    assert aborted.ended - interrupted < TEARDOWN

    # The aborted session goes on, against a server that now answers (in this process:
    # a third litellm import would cost more than it shows).
    monkeypatch.setenv("LOOPDECK_HOME", str(aborted.home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(aborted.root / "config"))
    monkeypatch.setenv("OPENAI_API_KEY", aborted.key)
    monkeypatch.chdir(aborted.workspace)
    aborted.server.script(text("Resumed fine."))
    again = run_cli(capfd, *args_for(aborted, "--resume", aborted.session_id(), prompt="and now?"))
    assert again.code == 0, again.err
    assert again.events[-1]["type"] == "session.idle"
    assert again.of("assistant.message")[-1]["data"]["content"] == "Resumed fine."
    users = [
        m["content"] for m in aborted.server.requests[-1].json["messages"] if m["role"] == "user"
    ]
    assert users[0] == PROMPT and users[-1] == "and now?"
    aborted.out, aborted.err = again.out, again.err
    aborted.check_common()
