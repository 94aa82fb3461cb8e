"""A model server that serves one request at a time, and the summary made beside a turn.

llama.cpp's server has one slot unless started with ``--parallel``: a summary made in
the background takes it, and the turn's request waits behind the summary until it
times out — four times, then the turn failed with advice to raise ``--idle-timeout``.
``background_compaction`` (``--background-compaction``) says whether a summary may run
beside the turn; ``auto``, the default, is off for a server of one's own
(``--api-base``). A timeout beside a summary names it, and the retry waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent.loop.compaction_settings import CompactionSettings
from agent.loop.context_usage import report
from agent.models.base import COMPACTION_CALL, ProviderError, StreamItem
from agent.models.scripted import Script, ScriptedModel
from agent.models.select import ConfigError, read_config_file
from agent.session.session import Session
from app.cli import build_parser
from app.model_setup import background_compaction
from tests.support.scripting import FakeCountingModel, FakeRecorder, new_session

WINDOW = 8_000
BIG = "y" * 8_000  # ~2,000 tokens: with the prompt and tools, 60-95 % of the window
GIVE_UP = 60  # seconds: a turn stuck behind a summary fails the test, not the suite
SLOW_SERVER = (
    "No response from the server at http://127.0.0.1:8080/v1 (openai/local): no data for "
    "60 s. A slow server may need a longer --idle-timeout."
)


class FakeOneSlotModel(FakeCountingModel):
    """Plays a one-slot server: a turn's request that arrives while a summary is being
    made waits behind it and times out (at once here); the summary ends after that."""

    def __init__(self, inner: ScriptedModel) -> None:
        super().__init__(inner)
        self.summary_done = asyncio.Event()
        self.compacting: Callable[[], bool] = lambda: False
        self.calls_beside_summary = 0

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        if call_index == COMPACTION_CALL:
            await self.summary_done.wait()
        elif self.compacting():
            self.calls_beside_summary += 1
            self.summary_done.set()  # it ends some time after this request gave up
            raise ProviderError("timeout", SLOW_SERVER)
        async for item in super().stream(messages, tools, call_index=call_index):
            yield item


async def one_slot_session(
    tmp_path: Path, *, background: bool
) -> tuple[Session, FakeRecorder, FakeOneSlotModel]:
    script = Script.model_validate({"turns": [{"text": BIG}, {"text": "ok"}]})
    model = FakeOneSlotModel(ScriptedModel(script, "one-slot"))
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    model.compacting = lambda: session.context.compacting
    await session.send_and_wait("write a long text")
    settings = CompactionSettings(background_threshold=0.6, background=background)
    session.configure_context(window=WINDOW, settings=settings)
    return session, seen, model


async def test_without_background_compaction_the_turn_waits_for_the_summary(
    tmp_path: Path,
) -> None:
    session, seen, model = await one_slot_session(tmp_path, background=False)
    model.summary_done.set()  # a summary alone on the server is answered
    outcome = await asyncio.wait_for(session.send_and_wait("NEW PROMPT"), GIVE_UP)
    assert outcome.error is None
    assert model.calls_beside_summary == 0
    assert not seen.of("assistant.turn_retry")
    assert [e.data.success for e in seen.of("session.compaction_complete")] == [True]
    # The summary came first, then the turn's call, with the summary in place.
    assert model.call_indexes[-2] == COMPACTION_CALL
    assert model.seen_messages[-1][-1]["content"] == "NEW PROMPT"
    await session.close()


async def test_a_timeout_beside_a_summary_names_it_and_the_retry_waits_for_it(
    tmp_path: Path,
) -> None:
    session, seen, model = await one_slot_session(tmp_path, background=True)
    outcome = await asyncio.wait_for(session.send_and_wait("NEW PROMPT"), GIVE_UP)
    assert model.calls_beside_summary == 1
    [retry] = [e.data.reason for e in seen.of("assistant.turn_retry")]
    assert "A summary of the conversation was being made on the same server" in retry
    assert "--background-compaction off" in retry
    assert "--idle-timeout" not in retry
    # The retry went out once the summary was done, and was answered.
    assert outcome.error is None
    assert [e.data.success for e in seen.of("session.compaction_complete")] == [True]
    await session.close()


def test_the_context_report_says_when_summaries_wait() -> None:
    from agent.models.context_window import ContextLimits, Usage

    usage = Usage(system=100, tools=100, messages=100, window=6_000, message_count=2)
    limits = ContextLimits(WINDOW, None, "config")
    off = CompactionSettings(background=False)
    counts: dict[str, Any] = {"checkpoints": 0, "input_tokens": 0, "output_tokens": 0}
    shown = report("m", usage, limits, off, cost=0.0, **counts)
    assert "Compaction: from 80%, waited for (background compaction off)" in shown
    on = report("m", usage, limits, CompactionSettings(), cost=0.0, **counts)
    assert "Compaction: in the background from 80%" in on


def test_background_compaction_is_off_by_default_for_a_server_of_ones_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    parse = build_parser().parse_args
    assert background_compaction(parse([]), "http://127.0.0.1:8080/v1") is False
    assert background_compaction(parse([]), None) is True
    flag_on = parse(["--background-compaction", "on"])
    assert background_compaction(flag_on, "http://127.0.0.1:8080/v1") is True
    assert background_compaction(parse(["--background-compaction", "off"]), None) is False
    config = tmp_path / "loopdeck" / "config.toml"
    config.parent.mkdir()
    config.write_text('background_compaction = "on"\n')
    assert background_compaction(parse([]), "http://127.0.0.1:8080/v1") is True
    assert background_compaction(parse(["--background-compaction", "auto"]), "http://x/v1") is False
    config.write_text('background_compaction = "sometimes"\n')
    with pytest.raises(ConfigError, match="background_compaction"):
        read_config_file(config)
