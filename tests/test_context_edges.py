"""The context window's edges: the reply's room in a window the user gave, a request the
provider refuses as too long, /compact while a summary is being made, and a summarizer
that keeps failing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.context_window import ContextLimits
from agent.models.litellm_client import LiteLLMModel
from agent.models.litellm_import import import_litellm
from agent.models.select import read_config_file
from app.cli import build_parser
from app.model_setup import context_settings
from tests.scripting import new_session

WINDOW = 8_000


# --- the reply's room in a window the user gave --------------------------------------


def test_a_given_window_keeps_room_for_the_reply() -> None:
    # A window from config or flag, no output limit: 4096 kept, at most a quarter.
    assert ContextLimits(WINDOW, None, "config").reply_room == 2_000
    assert ContextLimits(WINDOW, None, "config").prompt_budget == 6_000
    assert ContextLimits(32_768, None, "config").reply_room == 4_096
    # The output limit given with it is the room (up to a third of the window).
    assert ContextLimits(WINDOW, 1_000, "config").reply_room == 1_000
    assert ContextLimits(WINDOW, 6_000, "config").reply_room == WINDOW // 3
    # A scripted window (tests) and an assumed one keep what they kept.
    assert ContextLimits(WINDOW, None, "script").reply_room == 0
    assert ContextLimits(128_000, None, "assumed").reply_room == 0


class FakeChunkStream:
    def __init__(self, chunks: list[Any]) -> None:
        self._chunks: Iterator[Any] = iter(chunks)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        for item in self._chunks:
            return item
        raise StopAsyncIteration


class FakeAcompletion:
    """Stands in for litellm.acompletion: answers "ok", keeps every call's kwargs."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, **kwargs: Any) -> FakeChunkStream:
        self.calls.append(kwargs)
        stream_types = import_litellm().types.utils
        chunk = stream_types.ModelResponseStream(
            choices=[{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]
        )
        return FakeChunkStream([chunk])


@pytest.fixture
def acompletion(monkeypatch: pytest.MonkeyPatch) -> FakeAcompletion:
    fake = FakeAcompletion()
    monkeypatch.setattr(import_litellm(), "acompletion", fake)
    return fake


async def test_each_request_asks_for_no_more_reply_than_the_window_keeps(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    # A local server's model: the map knows nothing, the user gave the window.
    model = LiteLLMModel(
        "openai/local-model",
        api_base="http://127.0.0.1:9/v1",
        extra={"max_tokens": 100_000},  # a setting too large for the window is bounded
    )
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW)
    await session.send_and_wait("hello")
    assert acompletion.calls[-1]["max_tokens"] == 2_000
    info = seen.of("session.usage_info")[-1].data
    assert info.token_limit == 6_000  # the prompt may fill the window less the reply's room
    # An output limit given with it wins over the default room.
    session.configure_context(window=WINDOW, max_output=500)
    await session.send_and_wait("again")
    assert acompletion.calls[-1]["max_tokens"] == 500
    assert seen.of("session.usage_info")[-1].data.token_limit == 7_500
    await session.close()


async def test_an_output_limit_alone_bounds_a_known_models_replies(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    session, seen = await new_session(LiteLLMModel("openai/gpt-4o"), tmp_path)
    session.configure_context(max_output=1_234)
    await session.send_and_wait("hello")
    assert acompletion.calls[-1]["max_tokens"] == 1_234
    assert seen.of("session.usage_info")[-1].data.token_limit == 128_000 - 1_234
    await session.close()


def test_the_replys_room_is_read_from_flag_and_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "loopdeck" / "config.toml"
    config.parent.mkdir()
    config.write_text("context_window = 16384\nmax_output_tokens = 2048\n")
    assert read_config_file(config).max_output_tokens == 2_048
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    window, output, _ = context_settings(build_parser().parse_args([]))
    assert (window, output) == (16_384, 2_048)
    flags = build_parser().parse_args(["--max-output-tokens", "1000"])
    assert context_settings(flags)[:2] == (16_384, 1_000)
