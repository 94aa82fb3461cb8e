"""Provider failures are classified by what happened, and say what to do.

These use litellm's own exceptions, raised by litellm itself where that needs
no network (a missing key, a refused connection to a closed local port).
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.events.schema import SessionErrorData
from agent.log.store import SessionStore
from agent.models.base import ModelReply, ProviderError, RetryPolicy, StreamItem
from agent.models.litellm_client import LiteLLMModel
from agent.models.provider_errors import provider_error_from, strip_credentials
from agent.models.select import provider_key_vars
from agent.session.session import Session
from tests.support.fake_openai_server import (
    FakeOpenAIServer,
    cut_stream,
    drop_mid_text,
    empty_body,
    empty_choices,
    openai_server,
    status,
)
from tests.support.scripting import FakeRecorder

MESSAGES = [{"role": "user", "content": "hi"}]
__all__ = ["openai_server"]  # the fixture
RETRYABLE = {"rate_limit", "server", "timeout", "connection"}


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_AUTH_TOKEN")):
            monkeypatch.delenv(name)
    yield


def closed_port() -> int:
    """A local port nothing listens on (connecting is refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def fail(model: LiteLLMModel) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        async for _ in model.stream(MESSAGES, [], call_index=0):
            pass
    return caught.value


def _response(status: int) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("POST", "http://test"))


def mapped(exc: Exception, litellm: Any, *, api_base: str | None = None) -> ProviderError:
    return provider_error_from(exc, litellm=litellm, model="openai/gpt-4o", api_base=api_base)


# --- missing and invalid keys ------------------------------------------------------


async def test_missing_openai_key_is_auth_naming_the_variable() -> None:
    # The openai SDK refuses before any request; litellm reports it as a 500.
    error = await fail(LiteLLMModel("openai/gpt-4o"))
    assert error.error_type == "auth"
    assert not error.retryable
    assert "OPENAI_API_KEY" in error.message
    assert error.status_code is None  # no server answered: no made-up 500


async def test_missing_anthropic_key_names_its_variable() -> None:
    error = await fail(LiteLLMModel("anthropic/claude-sonnet-4-5"))
    assert error.error_type == "auth"
    assert "set ANTHROPIC_API_KEY" in error.message


async def test_missing_key_for_a_bare_model_name_names_its_providers_variable() -> None:
    """LiteLLM sends a bare ``gpt-4o`` to OpenAI: the advice names OPENAI_API_KEY."""
    error = await fail(LiteLLMModel("gpt-4o"))
    assert error.error_type == "auth"
    assert "set OPENAI_API_KEY" in error.message
    assert provider_key_vars("claude-sonnet-4-5") == ("ANTHROPIC_API_KEY",)
    assert provider_key_vars("o3-mini") == ("OPENAI_API_KEY",)
    assert provider_key_vars("my-local-model") == ()


def test_old_openai_sdk_wording_is_a_missing_key_too(litellm: Any) -> None:
    exc = litellm.InternalServerError(
        "OpenAIException - The api_key client option must be set either by passing api_key "
        "to the client or by setting the OPENAI_API_KEY environment variable",
        "openai",
        "gpt-4o",
    )
    error = mapped(exc, litellm)
    assert (error.error_type, error.status_code) == ("auth", None)
    assert "set OPENAI_API_KEY" in error.message


def test_invalid_key_is_auth(litellm: Any) -> None:
    exc = litellm.AuthenticationError("Incorrect API key provided", "openai", "gpt-4o")
    error = mapped(exc, litellm)
    assert error.error_type == "auth" and not error.retryable
    assert "OPENAI_API_KEY" in error.message
    # A 401 that litellm did not map to AuthenticationError is still auth.
    generic = litellm.APIError(401, "Unauthorized", "openai", "gpt-4o")
    assert mapped(generic, litellm).error_type == "auth"


async def test_missing_key_is_not_retried_by_the_loop(tmp_path: Path) -> None:
    model = LiteLLMModel("openai/gpt-4o", retry_policy=RetryPolicy(base_delay=0.0))
    session = await Session.create(model=model, cwd=tmp_path, store=SessionStore(tmp_path / "home"))
    recorder = FakeRecorder()
    session.subscribe(recorder)
    outcome = await session.send_and_wait("hi")
    await session.close()
    types = recorder.types()
    assert "assistant.turn_retry" not in types
    assert types.count("assistant.turn_start") == 1
    assert types[-1] == "session.idle"
    assert outcome.error is not None and outcome.error.error_type == "auth"
    assert "OPENAI_API_KEY" in outcome.error.message


# --- requests a retry cannot fix ---------------------------------------------------


def test_context_window_exceeded_is_not_retried(litellm: Any) -> None:
    exc = litellm.ContextWindowExceededError("too long", "gpt-4o", "openai")
    assert mapped(exc, litellm).error_type == "context_limit"
    # llama.cpp's wording, arriving as a plain 400.
    llama = litellm.BadRequestError(
        "the request exceeds the available context size, try increasing it", "x", "openai"
    )
    error = mapped(llama, litellm, api_base="http://127.0.0.1:8080/v1")
    assert error.error_type == "context_limit" and not error.retryable


def test_unknown_model_says_so_and_is_not_retried(litellm: Any) -> None:
    exc = litellm.NotFoundError("The model `gpt-9` does not exist", "gpt-9", "openai")
    error = mapped(exc, litellm, api_base="http://127.0.0.1:8080/v1")
    assert error.error_type == "bad_request" and not error.retryable
    assert "does not know the model openai/gpt-4o" in error.message
    assert "/v1" in error.message  # the other usual cause: the path of --api-base
    # Ollama answers an unknown model with a message, not always a 404.
    ollama = litellm.APIConnectionError("model 'qwen9' not found, try pulling it", "ollama", "q")
    assert mapped(ollama, litellm).error_type == "bad_request"


def test_bad_request_is_not_retried(litellm: Any) -> None:
    exc = litellm.BadRequestError("Invalid 'messages[0].role'", "gpt-4o", "openai")
    error = mapped(exc, litellm)
    assert error.error_type == "bad_request" and not error.retryable
    assert "Invalid 'messages[0].role'" in error.message


# --- what a retry can fix ----------------------------------------------------------


def test_only_rate_limits_5xx_timeouts_and_connections_are_retried(litellm: Any) -> None:
    cases = [
        (litellm.RateLimitError("slow down", "openai", "gpt-4o"), "rate_limit"),
        (litellm.APIError(429, "Too Many Requests", "openai", "gpt-4o"), "rate_limit"),
        (litellm.InternalServerError("boom", "openai", "gpt-4o"), "server"),
        (litellm.ServiceUnavailableError("down", "openai", "gpt-4o"), "server"),
        (litellm.BadGatewayError("gateway", "openai", "gpt-4o"), "server"),
        (litellm.APIError(529, "overloaded", "anthropic", "claude"), "server"),
        (litellm.Timeout("Read timed out", "openai", "gpt-4o"), "timeout"),
        (litellm.APIConnectionError("Connection error.", "openai", "gpt-4o"), "connection"),
        (
            litellm.InternalServerError(
                "peer closed connection without sending complete message body", "openai", "x"
            ),
            "connection",
        ),
    ]
    for exc, expected in cases:
        error = mapped(exc, litellm)
        assert error.error_type == expected, (type(exc).__name__, str(exc))
        assert error.retryable


# --- connection errors -------------------------------------------------------------


async def test_refused_connection_names_the_url_and_what_to_check() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model = LiteLLMModel("openai/local", api_base=url)
    error = await fail(model)
    assert error.error_type == "connection" and error.retryable
    assert error.status_code is None  # litellm says 500; nothing answered
    assert url in error.message
    assert "Is the server running" in error.message and "--api-base" in error.message
    assert 'Connection error."' not in error.message and not error.message.startswith(
        "Connection error"
    )


def test_connection_error_message_strips_credentials(litellm: Any) -> None:
    exc = litellm.APIConnectionError("Connection error.", "openai", "gpt-4o")
    error = mapped(exc, litellm, api_base="https://bob:hunter2secret@llm.example:8443/v1?key=k")
    assert "https://llm.example:8443/v1" in error.message
    assert "hunter2" not in error.message and "bob" not in error.message
    assert "key=k" not in error.message


def test_strip_credentials() -> None:
    assert strip_credentials("http://u:p@[::1]:8080/v1?token=x#f") == "http://[::1]:8080/v1"
    assert strip_credentials("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"


def test_dropped_stream_says_it_dropped(litellm: Any) -> None:
    exc = litellm.APIConnectionError("peer closed connection", "openai", "gpt-4o")
    error = provider_error_from(
        exc, litellm=litellm, model="openai/x", api_base="http://h:1/v1", phase="stream"
    )
    assert error.error_type == "connection"
    assert "dropped in the middle of the reply" in error.message


# --- a 200 with nothing in it --------------------------------------------------------


class FakeEmptyStream:
    def __init__(self, chunks: list[Any]) -> None:
        self._chunks = iter(chunks)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        for item in self._chunks:
            return item
        raise StopAsyncIteration


def install_chunks(monkeypatch: pytest.MonkeyPatch, litellm: Any, chunks: list[Any]) -> None:
    async def fake_acompletion(**_kwargs: Any) -> FakeEmptyStream:
        return FakeEmptyStream(chunks)

    monkeypatch.setattr(litellm, "acompletion", fake_acompletion)


async def test_empty_reply_is_an_error(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    stream_types = litellm.types.utils
    usage = stream_types.Usage(prompt_tokens=5, completion_tokens=0)
    for chunks in (
        [],  # no chunks at all
        [stream_types.ModelResponseStream(choices=[], usage=usage)],  # choices: []
        [stream_types.ModelResponseStream(choices=[{"index": 0, "delta": {"content": ""}}])],
    ):
        install_chunks(monkeypatch, litellm, chunks)
        error = await fail(LiteLLMModel("openai/gpt-4o"))
        assert error.error_type == "empty_response" and not error.retryable
        assert "empty reply" in error.message


async def test_empty_reply_ends_the_send_with_session_error(
    monkeypatch: pytest.MonkeyPatch, litellm: Any, tmp_path: Path
) -> None:
    install_chunks(monkeypatch, litellm, [])
    session = await Session.create(
        model=LiteLLMModel("openai/gpt-4o"), cwd=tmp_path, store=SessionStore(tmp_path / "h")
    )
    recorder = FakeRecorder()
    session.subscribe(recorder)
    outcome = await session.send_and_wait("hi")
    await session.close()
    errors = [e.data for e in recorder.events if isinstance(e.data, SessionErrorData)]
    assert [e.error_type for e in errors] == ["empty_response"]
    assert outcome.error is not None
    assert recorder.types()[-1] == "session.idle"


async def test_a_reply_with_only_tool_calls_is_not_empty(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "view"}}
    chunk = litellm.types.utils.ModelResponseStream(
        choices=[{"index": 0, "delta": {"tool_calls": [call]}}]
    )
    install_chunks(monkeypatch, litellm, [chunk])
    items: list[StreamItem] = [
        item async for item in LiteLLMModel("openai/gpt-4o").stream(MESSAGES, [], call_index=0)
    ]
    assert isinstance(items[-1], ModelReply) and items[-1].tool_calls


# --- the same, from a real HTTP server ------------------------------------------------


async def test_faults_from_a_real_server_are_classified(openai_server: FakeOpenAIServer) -> None:
    model = LiteLLMModel("openai/test-model", api_base=openai_server.base_url, idle_timeout=30)
    cases = [
        (status(401), "auth", 401, "OPENAI_API_KEY"),
        (status(404), "bad_request", 404, "does not know the model"),
        (status(429), "rate_limit", 429, "Rate limited"),
        (status(503), "server", 503, "server error (503)"),
        (drop_mid_text(), "connection", None, "dropped in the middle of the reply"),
        (cut_stream(), "connection", None, "ended before it was complete"),
        (empty_choices(), "empty_response", None, "empty reply"),
        (empty_body(), "empty_response", None, "empty reply"),
    ]
    for behaviour, error_type, status_code, words in cases:
        openai_server.script(behaviour)
        error = await fail(model)
        assert (error.error_type, error.status_code) == (error_type, status_code), behaviour.name
        assert words in error.message, (behaviour.name, error.message)
        assert "Original exception" not in error.message
        assert error.retryable == (error_type in RETRYABLE)


async def test_a_model_without_provider_prefix_says_how_to_write_it() -> None:
    # litellm refuses before any request: it cannot tell which API to speak.
    error = await fail(LiteLLMModel("qwen2.5-coder", api_base="http://127.0.0.1:8080/v1"))
    assert error.error_type == "bad_request" and not error.retryable
    assert "openai/qwen2.5-coder" in error.message
    assert error.status_code is None
