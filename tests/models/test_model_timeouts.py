"""Every wait on a model server is bounded, and headless -p ends within the bound.

A "hanging server" here is a listening socket that nobody accepts from: the
kernel completes the TCP handshake and takes the request, and no byte ever comes
back, which is what a wedged server looks like from the client.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent.models.base import ProviderError, RetryPolicy, StreamItem, TextDelta
from agent.models.litellm_client import PLACEHOLDER_API_KEY, LiteLLMModel
from agent.models.settings import worst_case_seconds

MESSAGES = [{"role": "user", "content": "hi"}]
# A test that the timeouts do not hold fails here instead of hanging the suite.
GUARD_SECONDS = 60.0


@pytest.fixture
def hanging_server() -> Iterator[str]:
    """The base URL of a server that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


@pytest.fixture
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_AUTH_TOKEN")):
            monkeypatch.delenv(name)


async def drain(model: LiteLLMModel, seen: list[StreamItem] | None = None) -> ProviderError:
    async def run() -> None:
        async for item in model.stream(MESSAGES, [], call_index=0):
            if seen is not None:
                seen.append(item)

    with pytest.raises(ProviderError) as caught:
        await asyncio.wait_for(run(), GUARD_SECONDS)
    return caught.value


class FakeStallingStream:
    """Yields its chunks, then waits forever for the next one."""

    def __init__(self, chunks: list[Any]) -> None:
        self._chunks = iter(chunks)
        self.closed = False

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        for item in self._chunks:
            return item
        await asyncio.Event().wait()

    async def aclose(self) -> None:
        self.closed = True


# --- the client bounds each wait itself --------------------------------------------


async def test_no_response_at_all_times_out(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    # A provider path that ignores the timeouts passed to it still cannot hang.
    async def never_answers(**_kwargs: Any) -> Any:
        await asyncio.Event().wait()

    monkeypatch.setattr(litellm, "acompletion", never_answers)
    model = LiteLLMModel("openai/gpt-4o", connect_timeout=0.05, idle_timeout=0.1)
    error = await drain(model)
    assert error.error_type == "timeout" and error.retryable
    assert "No response" in error.message and "--idle-timeout" in error.message


async def test_a_stream_that_stalls_times_out(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    chunk = litellm.types.utils.ModelResponseStream(
        choices=[{"index": 0, "delta": {"content": "par"}}]
    )
    stream = FakeStallingStream([chunk])

    async def acompletion(**_kwargs: Any) -> FakeStallingStream:
        return stream

    monkeypatch.setattr(litellm, "acompletion", acompletion)
    seen: list[StreamItem] = []
    error = await drain(LiteLLMModel("openai/gpt-4o", idle_timeout=0.1), seen)
    assert seen == [TextDelta("par")]
    assert error.error_type == "timeout"
    assert "stalled" in error.message and "no data for 0.1 s" in error.message
    assert stream.closed


async def test_timeouts_are_passed_to_litellm(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    seen: dict[str, Any] = {}
    chunk = litellm.types.utils.ModelResponseStream(
        choices=[{"index": 0, "delta": {"content": "ok"}}]
    )

    async def acompletion(**kwargs: Any) -> FakeStallingStream:
        seen.update(kwargs)
        return FakeStallingStream([chunk])

    monkeypatch.setattr(litellm, "acompletion", acompletion)
    await drain(LiteLLMModel("openai/gpt-4o", connect_timeout=3.0, idle_timeout=0.1))
    timeout = seen["timeout"]
    assert (timeout.connect, timeout.read) == (3.0, 0.1)


async def test_hanging_server_times_out_through_litellm(
    hanging_server: str, no_provider_keys: None
) -> None:
    model = LiteLLMModel(
        "openai/local", api_base=hanging_server, connect_timeout=1, idle_timeout=0.5
    )
    error = await drain(model)
    assert error.error_type == "timeout"
    assert hanging_server in error.message
    assert error.status_code is None


# --- the placeholder key for local servers -------------------------------------------


async def _kwargs_of(monkeypatch: pytest.MonkeyPatch, litellm: Any, model: LiteLLMModel) -> Any:
    seen: dict[str, Any] = {}
    chunk = litellm.types.utils.ModelResponseStream(
        choices=[{"index": 0, "delta": {"content": "ok"}}]
    )

    async def acompletion(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return FakeStallingStream([chunk])

    monkeypatch.setattr(litellm, "acompletion", acompletion)
    with pytest.raises(ProviderError):  # the fake stalls after its chunk
        async for _ in model.stream(MESSAGES, [], call_index=0):
            pass
    return seen


async def test_local_server_without_a_key_gets_a_placeholder(
    monkeypatch: pytest.MonkeyPatch, litellm: Any, no_provider_keys: None
) -> None:
    base = "http://127.0.0.1:8080/v1"
    kwargs = await _kwargs_of(
        monkeypatch, litellm, LiteLLMModel("openai/local", api_base=base, idle_timeout=0.05)
    )
    assert kwargs["api_key"] == PLACEHOLDER_API_KEY


async def test_placeholder_never_replaces_a_real_key(
    monkeypatch: pytest.MonkeyPatch, litellm: Any, no_provider_keys: None
) -> None:
    base = "http://127.0.0.1:8080/v1"
    # No api_base: a hosted provider, whose missing key must be reported, not faked.
    kwargs = await _kwargs_of(monkeypatch, litellm, LiteLLMModel("openai/x", idle_timeout=0.05))
    assert "api_key" not in kwargs
    # A key given to the client wins.
    model = LiteLLMModel("openai/x", api_base=base, idle_timeout=0.05, extra={"api_key": "real"})
    assert (await _kwargs_of(monkeypatch, litellm, model))["api_key"] == "real"
    # A key in the provider's variable is left for litellm to read.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-from-env")
    model = LiteLLMModel("openai/x", api_base=base, idle_timeout=0.05)
    assert "api_key" not in await _kwargs_of(monkeypatch, litellm, model)


# --- headless -p against a hanging server ---------------------------------------------


def test_headless_run_against_a_hanging_server_ends_within_the_bound(
    hanging_server: str, tmp_path: Path
) -> None:
    connect, idle = 0.5, 1.0
    config = tmp_path / "config" / "loopdeck"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("max_retries = 1\nretry_base_delay = 0.2\n", "utf-8")
    bound = worst_case_seconds(connect, idle, RetryPolicy(max_retries=1, base_delay=0.2))
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_AUTH_TOKEN"))}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"))
    argv = [
        "-p",
        "hello",
        "--model",
        "openai/local",
        "--api-base",
        hanging_server,
        "--connect-timeout",
        str(connect),
        "--idle-timeout",
        str(idle),
        "--output-format",
        "json",
    ]
    # litellm is imported first so the measured turn holds no import time; then the
    # command runs as the installed one does (app.cli.entry).
    code = (
        "import sys; from agent.models.litellm_import import import_litellm; import_litellm(); "
        f"sys.argv = ['loopdeck', *{argv!r}]; from app.cli import entry; entry()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS + bound,
    )
    exited = datetime.now(UTC)
    assert proc.returncode == 1, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    types = [e["type"] for e in events]
    assert types[-1] == "session.idle" and types.count("session.idle") == 1
    assert types.count("assistant.turn_retry") == 1  # max_retries from config.toml
    error = next(e["data"] for e in events if e["type"] == "session.error")
    assert error["errorType"] == "timeout"
    assert "statusCode" not in error or error["statusCode"] is None

    def at(event_type: str) -> datetime:
        stamp = next(e["timestamp"] for e in events if e["type"] == event_type)
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    took = (at("session.error") - at("assistant.turn_start")).total_seconds()
    # Each attempt waited for the idle timeout (the connection itself succeeds).
    assert 2 * idle <= took <= bound + 1.0, (took, bound)
    # And the process is gone soon after: no seconds-long interpreter teardown.
    assert (exited - at("session.error")).total_seconds() < 3.0


def test_a_headless_run_leaves_without_the_interpreter_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.cli
    import app.headless

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "done"}]}), "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(app.headless, "session_closed", False)
    exits: list[int] = []

    class FakeExit(BaseException):
        pass

    def fake_exit(code: int) -> None:
        exits.append(code)
        raise FakeExit

    monkeypatch.setattr(app.cli.os, "_exit", fake_exit)
    monkeypatch.setattr(sys, "argv", ["loopdeck", "-p", "hi", "--model", f"scripted:{script}"])
    with pytest.raises(FakeExit):
        app.cli.entry()
    assert exits == [0]  # after the session was closed
    # Anything else (here: a usage error) leaves the ordinary way.
    monkeypatch.setattr(app.headless, "session_closed", False)
    monkeypatch.setattr(sys, "argv", ["loopdeck", "--idle-timeout", "0"])
    with pytest.raises(SystemExit):
        app.cli.entry()
    assert exits == [0]
