"""LiteLLMModel, fully offline: litellm's mock_response, or a fake acompletion."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from agent.models.base import (
    ModelReply,
    ProviderError,
    ReasoningDelta,
    RetryPolicy,
    StreamItem,
    TextDelta,
    Usage,
)
from agent.models.litellm_client import LiteLLMModel
from agent.models.litellm_import import import_litellm
from tests.support.paths import ROOT

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any attempt to open a connection fails the test, even if litellm swallows it."""
    attempts: list[tuple[Any, ...]] = []

    def refuse(*args: Any, **_kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield
    assert not attempts, f"a test tried to use the network: {attempts}"


async def collect(
    model: LiteLLMModel, tools: list[dict[str, Any]] | None = None, call_index: int = 0
) -> tuple[list[StreamItem], ModelReply]:
    items = [item async for item in model.stream(MESSAGES, tools or [], call_index=call_index)]
    assert isinstance(items[-1], ModelReply)
    assert not any(isinstance(item, ModelReply) for item in items[:-1])
    return items[:-1], items[-1]


# --- fakes -------------------------------------------------------------------


def chunk(litellm: Any, delta: dict[str, Any] | None = None, **extra: Any) -> Any:
    """A litellm ModelResponseStream chunk with one choice (or none)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, **extra}]
    return litellm.types.utils.ModelResponseStream(choices=choices)


def usage_chunk(litellm: Any, prompt: int, completion: int) -> Any:
    usage = litellm.types.utils.Usage(prompt_tokens=prompt, completion_tokens=completion)
    return litellm.types.utils.ModelResponseStream(choices=[], usage=usage)


def tool_delta(
    index: int, *, id: str | None = None, name: str | None = None, args: str = ""
) -> Any:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    return {"index": index, "id": id, "type": "function", "function": function}


class FakeStream:
    """Async-iterates chunks; optionally fails after them; records aclose."""

    def __init__(self, chunks: list[Any], error: Exception | None = None) -> None:
        self._chunks: Iterator[Any] = iter(chunks)
        self._error = error
        self.closed = False

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        for item in self._chunks:
            return item
        if self._error is not None:
            raise self._error
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.closed = True


class FakeAcompletion:
    """Stands in for litellm.acompletion; keeps the kwargs it was called with."""

    def __init__(self, stream: FakeStream) -> None:
        self.stream = stream
        self.kwargs: dict[str, Any] = {}

    async def __call__(self, **kwargs: Any) -> FakeStream:
        self.kwargs = kwargs
        return self.stream


def install_fake(
    monkeypatch: pytest.MonkeyPatch, litellm: Any, chunks: list[Any], error: Exception | None = None
) -> FakeAcompletion:
    fake = FakeAcompletion(FakeStream(chunks, error))
    monkeypatch.setattr(litellm, "acompletion", fake)
    return fake


# --- streaming -----------------------------------------------------------------


def test_interface_basics() -> None:
    model = LiteLLMModel("openai/gpt-4o")
    assert model.name == "openai/gpt-4o"
    assert model.retry_policy == RetryPolicy()


async def test_text_streams_as_deltas_and_final_reply() -> None:
    text = "Hello there, this is a streamed reply."
    model = LiteLLMModel("openai/gpt-4o", extra={"mock_response": text})
    deltas, reply = await collect(model)
    assert len(deltas) > 3
    assert all(isinstance(d, TextDelta) for d in deltas)
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == text
    assert reply.text == text
    assert reply.tool_calls == []
    assert reply.reasoning is None
    assert reply.finish_reason == "stop"


async def test_usage_and_cost_reported_for_known_model() -> None:
    model = LiteLLMModel("openai/gpt-4o", extra={"mock_response": "hi there"})
    _, reply = await collect(model)
    assert reply.usage is not None
    assert reply.usage.input_tokens and reply.usage.input_tokens > 0
    assert reply.usage.output_tokens and reply.usage.output_tokens > 0
    assert reply.usage.cost is not None and reply.usage.cost > 0


async def test_unknown_model_gives_no_cost(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    for name in ("openai/not-a-real-model", "openrouter/some/unpriced-model", "nonsense"):
        chunks = [chunk(litellm, {"content": "x"}), usage_chunk(litellm, 7, 3)]
        install_fake(monkeypatch, litellm, chunks)
        _, reply = await collect(LiteLLMModel(name))
        assert reply.usage is not None
        assert (reply.usage.input_tokens, reply.usage.output_tokens) == (7, 3)
        assert reply.usage.cost is None


async def test_known_local_model_costs_zero(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    install_fake(
        monkeypatch, litellm, [chunk(litellm, {"content": "x"}), usage_chunk(litellm, 7, 3)]
    )
    _, reply = await collect(LiteLLMModel("ollama/llama3", api_base="http://127.0.0.1:9"))
    assert reply.usage == Usage(input_tokens=7, output_tokens=3, cost=0.0)


async def test_copilot_cost_does_not_start_a_login(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    # Resolving github_copilot/… without naming the provider makes litellm
    # start its device-login flow over the network; no_network would catch it.
    install_fake(
        monkeypatch, litellm, [chunk(litellm, {"content": "x"}), usage_chunk(litellm, 7, 3)]
    )
    _, reply = await collect(LiteLLMModel("github_copilot/gpt-4o"))
    assert reply.usage is not None and reply.usage.input_tokens == 7


async def test_no_usage_chunk_means_no_usage(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    install_fake(monkeypatch, litellm, [chunk(litellm, {"content": "x"})])
    _, reply = await collect(LiteLLMModel("openai/gpt-4o"))
    assert reply.usage is None


async def test_request_arguments(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    fake = install_fake(monkeypatch, litellm, [chunk(litellm, {"content": "ok"})])
    model = LiteLLMModel(
        "ollama/qwen", api_base="http://localhost:11434", extra={"temperature": 0.2}
    )
    await collect(model)
    assert fake.kwargs["model"] == "ollama/qwen"
    assert fake.kwargs["messages"] == MESSAGES
    assert fake.kwargs["tools"] is None  # an empty tools list is not sent
    assert fake.kwargs["stream"] is True
    assert fake.kwargs["stream_options"] == {"include_usage": True}
    assert fake.kwargs["api_base"] == "http://localhost:11434"
    assert fake.kwargs["temperature"] == 0.2

    tools = [{"type": "function", "function": {"name": "view", "parameters": {}}}]
    fake = install_fake(monkeypatch, litellm, [chunk(litellm, {"content": "ok"})])
    await collect(LiteLLMModel("openai/gpt-4o"), tools=tools)
    assert fake.kwargs["tools"] == tools
    assert "api_base" not in fake.kwargs


async def test_reasoning_streams_separately(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    install_fake(
        monkeypatch,
        litellm,
        [
            chunk(litellm, {"reasoning_content": "Let me "}),
            chunk(litellm, {"reasoning_content": "think."}),
            chunk(litellm, {"content": "Answer."}),
        ],
    )
    items, reply = await collect(LiteLLMModel("anthropic/claude-sonnet-4-5"))
    assert items == [ReasoningDelta("Let me "), ReasoningDelta("think."), TextDelta("Answer.")]
    assert reply.reasoning == "Let me think."
    assert reply.text == "Answer."


# --- tool calls ----------------------------------------------------------------


async def test_parallel_tool_calls_assembled_by_index(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    install_fake(
        monkeypatch,
        litellm,
        [
            chunk(litellm, {"content": "Looking."}),
            chunk(litellm, {"tool_calls": [tool_delta(0, id="call_a", name="view", args="")]}),
            chunk(litellm, {"tool_calls": [tool_delta(0, args='{"pa')]}),
            chunk(litellm, {"tool_calls": [tool_delta(1, id="call_b", name="grep", args='{"pat')]}),
            chunk(litellm, {"tool_calls": [tool_delta(0, args='th": "a.py"}')]}),
            chunk(litellm, {"tool_calls": [tool_delta(1, args='tern": "TODO"}')]}),
            chunk(litellm, {}, finish_reason="tool_calls"),
            usage_chunk(litellm, 120, 30),
        ],
    )
    _, reply = await collect(LiteLLMModel("openai/gpt-4o"))
    assert reply.text == "Looking."
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_a", "view", '{"path": "a.py"}'),
        ("call_b", "grep", '{"pattern": "TODO"}'),
    ]
    assert reply.finish_reason == "tool_calls"
    assert reply.usage is not None and reply.usage.input_tokens == 120


async def test_missing_ids_are_generated_and_bad_json_kept(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    install_fake(
        monkeypatch,
        litellm,
        [
            chunk(litellm, {"tool_calls": [tool_delta(0, name="bash", args='{"command": ')]}),
            chunk(litellm, {"tool_calls": [tool_delta(0, args="ls -la")]}),  # not JSON
            chunk(litellm, {"tool_calls": [tool_delta(1, name="view", args="{}")]}),
        ],
    )
    _, reply = await collect(LiteLLMModel("ollama/qwen"), call_index=4)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_4_0", "bash", '{"command": ls -la'),
        ("call_4_1", "view", "{}"),
    ]


async def test_same_index_with_new_id_is_a_new_call(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    # Some providers number every parallel call 0 and tell them apart by id.
    install_fake(
        monkeypatch,
        litellm,
        [
            chunk(litellm, {"tool_calls": [tool_delta(0, id="x1", name="view", args='{"a": 1}')]}),
            chunk(litellm, {"tool_calls": [tool_delta(0, id="x2", name="view", args='{"a": 2}')]}),
        ],
    )
    _, reply = await collect(LiteLLMModel("gemini/gemini-2.5-pro"))
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [
        ("x1", '{"a": 1}'),
        ("x2", '{"a": 2}'),
    ]


async def test_stream_closed_when_consumer_stops_early(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    fake = install_fake(monkeypatch, litellm, [chunk(litellm, {"content": c}) for c in "abc"])
    stream = LiteLLMModel("openai/gpt-4o").stream(MESSAGES, [], call_index=0)
    assert isinstance(stream, AsyncIterator)
    first = await anext(stream)
    assert first == TextDelta("a")
    await stream.aclose()  # type: ignore[attr-defined]
    assert fake.stream.closed


# --- errors ----------------------------------------------------------------------


def _response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("POST", "http://test"))


def _errors(litellm: Any) -> list[tuple[Exception, str]]:
    return [
        (litellm.RateLimitError("slow down", "openai", "gpt-4o"), "rate_limit"),
        (litellm.InternalServerError("boom", "openai", "gpt-4o"), "server"),
        (litellm.ServiceUnavailableError("down", "openai", "gpt-4o"), "server"),
        (litellm.BadGatewayError("gateway", "openai", "gpt-4o"), "server"),
        (litellm.APIConnectionError("Connection refused", "openai", "gpt-4o"), "connection"),
        (litellm.APIConnectionError("unexpected", "openai", "gpt-4o"), "server"),
        (litellm.Timeout("too slow", "openai", "gpt-4o"), "timeout"),
        (litellm.AuthenticationError("bad key", "openai", "gpt-4o"), "auth"),
        (
            litellm.PermissionDeniedError("nope", "openai", "gpt-4o", response=_response(403)),
            "auth",
        ),
        (litellm.ContextWindowExceededError("too long", "gpt-4o", "openai"), "context_limit"),
        (litellm.BadRequestError("bad", "gpt-4o", "openai"), "bad_request"),
        (litellm.NotFoundError("no such model", "gpt-4o", "openai"), "bad_request"),
        (litellm.APIError(529, "overloaded", "anthropic", "claude"), "server"),
    ]


async def test_each_litellm_error_maps_to_its_type(litellm: Any) -> None:
    for error, expected in _errors(litellm):
        model = LiteLLMModel("openai/gpt-4o", extra={"mock_response": error})
        with pytest.raises(ProviderError) as caught:
            await collect(model)
        assert caught.value.error_type == expected, type(error).__name__
        assert "openai/gpt-4o" in caught.value.message
        assert not caught.value.message.startswith("litellm.")
        retryable = {"rate_limit", "server", "timeout", "connection"}
        assert caught.value.retryable == (expected in retryable)


async def test_plain_exception_mock_is_a_server_error() -> None:
    # litellm wraps a non-litellm exception as a 500 InternalServerError.
    model = LiteLLMModel("openai/gpt-4o", extra={"mock_response": ValueError("kaput")})
    with pytest.raises(ProviderError) as caught:
        await collect(model)
    assert caught.value.error_type == "server"
    assert "kaput" in caught.value.message


async def test_rate_limit_retry_after_header(litellm: Any) -> None:
    for headers, expected in (({"retry-after": "7"}, 7.0), ({"retry-after-ms": "1500"}, 1.5)):
        error = litellm.RateLimitError("slow", "openai", "gpt-4o", response=_response(429, headers))
        model = LiteLLMModel("openai/gpt-4o", extra={"mock_response": error})
        with pytest.raises(ProviderError) as caught:
            await collect(model)
        assert caught.value.error_type == "rate_limit"
        assert caught.value.status_code == 429
        assert caught.value.retry_after == expected


async def test_error_mid_stream_is_mapped(monkeypatch: pytest.MonkeyPatch, litellm: Any) -> None:
    error = litellm.ServiceUnavailableError("went away", "openai", "gpt-4o")
    fake = install_fake(monkeypatch, litellm, [chunk(litellm, {"content": "par"})], error=error)
    seen: list[StreamItem] = []
    with pytest.raises(ProviderError) as caught:
        async for item in LiteLLMModel("openai/gpt-4o").stream(MESSAGES, [], call_index=0):
            seen.append(item)
    assert seen == [TextDelta("par")]
    assert caught.value.error_type == "server"
    assert fake.stream.closed


async def test_error_messages_never_contain_the_key(
    monkeypatch: pytest.MonkeyPatch, litellm: Any
) -> None:
    secret = "sk-test-abcdefghijklmnopqrstuvwxyz0123"
    env_secret = "zz-env-secret-value-42"
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", env_secret)
    error = litellm.AuthenticationError(
        f"Incorrect API key provided: {secret} / {env_secret}", "openai", "gpt-4o"
    )
    model = LiteLLMModel("openai/gpt-4o", extra={"mock_response": error, "api_key": secret})
    with pytest.raises(ProviderError) as caught:
        await collect(model)
    assert caught.value.error_type == "auth"
    assert secret not in caught.value.message
    assert env_secret not in caught.value.message
    assert "Incorrect API key provided" in caught.value.message


# --- lazy import -------------------------------------------------------------------


def test_litellm_import_is_configured(litellm: Any) -> None:
    import os

    assert litellm.suppress_debug_info is True
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"]
    assert os.environ["LITELLM_OFFLINE_MODE"]
    assert import_litellm() is litellm  # cached


def test_importing_the_client_does_not_import_litellm() -> None:
    code = (
        "import sys, agent.models.litellm_client, agent.models.select, agent.loop.system_prompt; "
        "assert 'litellm' not in sys.modules, 'litellm imported eagerly'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_a_long_output_limit_is_capped_so_a_full_prompt_and_its_reply_fit() -> None:
    # gpt-5-mini: 272k in, 128k out in litellm's map. The prompt may fill the window
    # less a third; litellm would otherwise ask for all 128k, passing the window.
    import_litellm()
    long_output = LiteLLMModel("openai/gpt-5-mini")._request([], [])
    assert long_output["max_tokens"] == 272_000 // 3
    # gpt-4o's 16k fit in the room kept for them: nothing is added.
    assert "max_tokens" not in LiteLLMModel("gpt-4o")._request([], [])
    # The user's own setting wins, and a local server's model is not the map's.
    mine = LiteLLMModel("openai/gpt-5-mini", extra={"max_tokens": 500})._request([], [])
    assert mine["max_tokens"] == 500
    local = LiteLLMModel("openai/gpt-5-mini", api_base="http://127.0.0.1:9")._request([], [])
    assert "max_tokens" not in local
