"""The provider fault matrix's settings and runner, shared by its in-process and its
real-process halves: the secrets a run must never show, retries and timeouts short
enough for the matrix, ``loopdeck -p … --output-format json`` run in-process, and a
check that no thread a case started outlives it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from app.cli import main

# Distinctive, so a leak of even part of it is found; "sk-" shaped like a real key.
KEY = "sk-fake-DO-NOT-LEAK-5f0c2e9a7b1d4c3e"
# No well-known key shape: only knowing the value can keep it out of messages.
PLAIN_KEY = "local-DO-NOT-LEAK-83be61f0a2c9"
LEAK_MARK = "DO-NOT-LEAK"
MODEL = "openai/fake-model"
PROMPT = "find the needle"
NOTES = "a needle in a haystack\n"

# Retries are fast so the matrix takes seconds; timeouts are short only where a case
# waits for one (a loaded machine must not turn a healthy reply into a timeout).
MAX_RETRIES = 2
FAST = {
    "connect_timeout": 5,
    "idle_timeout": 30,
    "max_retries": MAX_RETRIES,
    "retry_base_delay": 0.01,
}
IDLE_TIMEOUT = 1.5
TIMING_OUT = {**FAST, "idle_timeout": IDLE_TIMEOUT, "max_retries": 1}
# A hang or stall is released by the server after this long, so that a client
# without a working timeout fails the time bound instead of hanging the suite.
SERVER_MAX_BLOCK = 25.0
# Added to each case's computed worst case: process start-up work and a loaded machine.
SLACK = 6.0


@pytest.fixture(autouse=True)
def nothing_left_running() -> Iterator[None]:
    """No thread a case started (server handlers, the client's workers) outlives it.
    Autouse: import it into each module of the matrix."""
    before = set(threading.enumerate())
    yield
    left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not left, left


@dataclass
class Run:
    code: int
    out: str
    err: str
    seconds: float
    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, etype: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == etype]

    @property
    def session_id(self) -> str:
        for etype in ("session.start", "session.resume"):
            for event in self.of(etype):
                if "sessionId" in event["data"]:
                    return str(event["data"]["sessionId"])
        raise AssertionError("no session id in the output")


def run_cli(capfd: pytest.CaptureFixture[str], *argv: str) -> Run:
    """``loopdeck -p … --output-format json`` in this process; fd-level capture, so
    whatever any library prints to the real stdout/stderr is seen too."""
    capfd.readouterr()
    started = time.monotonic()
    try:
        code = main([*argv, "--output-format", "json"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    seconds = time.monotonic() - started
    out, err = capfd.readouterr()
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    return Run(code, out, err, seconds, events)


def wall_time(event: dict[str, Any]) -> float:
    """An event's timestamp as seconds since the epoch (like time.time())."""
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
