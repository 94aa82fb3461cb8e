"""The context window's edges: the reply's room in a window the user gave, a request the
provider refuses as too long, /compact while a summary is being made, and a summarizer
that keeps failing."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from agent.loop.compaction_settings import CompactionSettings
from agent.loop.history import SUMMARY_PREFIX, History
from agent.models.base import COMPACTION_CALL
from agent.models.context_window import ContextLimits, refused_prompt_tokens
from agent.models.litellm_client import LiteLLMModel
from agent.models.litellm_import import import_litellm
from agent.models.scripted import Script, ScriptedModel
from agent.models.select import read_config_file
from agent.session.session import Session
from app.cli import build_parser
from app.model_setup import context_settings
from tests.support.compaction import FakeSlowSummaryModel, notes, request_tokens, tool_turn
from tests.support.fake_acompletion import FakeAcompletion
from tests.support.fake_acompletion import acompletion as acompletion  # the fixture
from tests.support.scripting import FakeCountingModel, FakeRecorder, new_session, padded, scripted

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


async def test_each_request_asks_for_no_more_reply_than_the_window_keeps(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    # A local server's model: the map knows nothing, the user gave the window.
    model = LiteLLMModel(
        "openai/local-model",
        api_base="http://127.0.0.1:9/v1",
        extra={"max_tokens": 100_000},  # a setting too large for the window is bounded
    )
    session, seen = await new_session(model, tmp_path, system_prompt="full")
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


# --- a request the provider refuses as too long --------------------------------------


def too_long(kind: str) -> Exception:
    litellm = import_litellm()
    if kind == "context_window_exceeded":
        return litellm.ContextWindowExceededError(
            "This model's maximum context length is 8000 tokens.", "local-model", "openai"
        )
    return litellm.BadRequestError(
        "This model's maximum context length is 8000 tokens. However, your messages "
        "resulted in 8160 tokens. Please reduce the length of the messages.",
        "local-model",
        "openai",
    )


async def chatted(
    tmp_path: Path, acompletion: FakeAcompletion, fill: float = 0.85
) -> tuple[Session, FakeRecorder]:
    """A session on a local server's model whose conversation fills ``fill`` of the
    window (no summary in the background below 0.9): a request the provider may well
    refuse when loopdeck's count is low."""
    model = LiteLLMModel("openai/local-model", api_base="http://127.0.0.1:9/v1")
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(
        window=WINDOW, settings=CompactionSettings(True, background_threshold=0.9)
    )
    i = 0
    while session.context.measure().fraction < fill:
        outcome = await session.send_and_wait(f"question {i}: " + "words " * 100)
        assert outcome.error is None
        i += 1
    assert not seen.of("session.compaction_start")
    return session, seen


@pytest.mark.parametrize("kind", ["context_window_exceeded", "bad_request"])
async def test_a_request_refused_as_too_long_is_compacted_and_sent_once_more(
    tmp_path: Path, acompletion: FakeAcompletion, kind: str
) -> None:
    session, seen = await chatted(tmp_path, acompletion)
    ratio = session.context.meter.ratio
    acompletion.refuse = [too_long(kind)]
    outcome = await session.send_and_wait("and now?")
    assert outcome.error is None and outcome.final_text == "ok"
    # The count proved low: later ones are taken larger.
    assert session.context.meter.ratio > ratio
    done = seen.of("session.compaction_complete")
    assert [(d.data.success, d.data.trigger) for d in done] == [(True, "context_limit_retry")]
    retries = seen.of("assistant.turn_retry")
    assert len(retries) == 1 and "too long" in (retries[0].data.reason or "")
    refused, retried = acompletion.turns[-2:]
    assert retried["messages"][1]["content"].startswith(SUMMARY_PREFIX)
    assert len(retried["messages"]) < len(refused["messages"])
    assert retried["messages"][-1]["content"] == "and now?"
    assert seen.types()[-1] == "session.idle"
    await session.close()


async def test_a_second_refusal_ends_the_turn_with_a_clear_error(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    session, seen = await chatted(tmp_path, acompletion)
    before = len(acompletion.turns)
    acompletion.refuse = [too_long("context_window_exceeded")] * 3
    outcome = await session.send_and_wait("and now?")
    assert len(acompletion.turns) == before + 2  # the request, and one retry
    assert outcome.error is not None and outcome.error.error_type == "context_limit"
    assert "again" in outcome.error.message and "--context-window" in outcome.error.message
    assert seen.of("session.error")[-1].data == outcome.error
    assert len(seen.of("assistant.turn_retry")) == 1
    assert seen.types()[-1] == "session.idle"
    await session.close()


async def test_a_prompt_too_long_on_its_own_is_not_sent_again(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    # The one message cannot be dropped, and no summary can be made of it.
    session, seen = await chatted(tmp_path, acompletion, fill=0)
    litellm = import_litellm()
    acompletion.summary_error = litellm.InternalServerError("down", "openai", "local-model")
    acompletion.refuse = [too_long("context_window_exceeded")]
    outcome = await session.send_and_wait("a pasted file " * 50)
    assert len(acompletion.turns) == 1  # the same request would be refused again
    assert outcome.error is not None and outcome.error.error_type == "context_limit"
    assert "could be taken out" in outcome.error.message
    assert not seen.of("assistant.turn_retry")
    assert seen.types()[-1] == "session.idle"
    await session.close()


async def test_a_refusal_with_the_summarizer_down_drops_the_oldest_and_retries(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    session, seen = await chatted(tmp_path, acompletion)
    litellm = import_litellm()
    acompletion.summary_error = litellm.InternalServerError("down", "openai", "local-model")
    acompletion.refuse = [too_long("context_window_exceeded")]
    outcome = await session.send_and_wait("and now?")
    assert outcome.error is None and outcome.final_text == "ok"
    assert [d.data.success for d in seen.of("session.compaction_complete")] == [False]
    dropped = [e.data for e in seen.of("session.truncation")]
    assert dropped and dropped[-1].performed_by == History.DROP_OLDEST
    warnings = [e.data.warning_type for e in seen.of("session.warning")]
    assert "context_truncated" in warnings
    refused, retried = acompletion.turns[-2:]
    assert len(retried["messages"]) < len(refused["messages"])
    assert retried["messages"][1]["role"] == "user"
    await session.close()


# --- /compact while a summary is being made --------------------------------------------


def two_exchanges() -> Script:
    return Script.model_validate({"turns": [{"text": "first answer"}, {"text": "second answer"}]})


async def test_compact_with_a_focus_takes_the_place_of_a_summary_in_flight(
    tmp_path: Path,
) -> None:
    model = FakeSlowSummaryModel(ScriptedModel(two_exchanges(), "slow"))
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    await session.send_and_wait(padded("the task: write a lexer"))
    await session.send_and_wait("and its tests")
    keeper = session.context
    assert keeper.start("threshold")  # a summary in the background, as at 80 %
    assert keeper.compacting and keeper.running_focus is None
    outcome = asyncio.ensure_future(keeper.compact_now(focus="the lexer's tests"))
    replaced = asyncio.Event()
    session.subscribe(
        lambda e: replaced.set() if len(seen.of("session.compaction_start")) == 2 else None
    )
    await asyncio.wait_for(replaced.wait(), 10)
    assert keeper.running_focus == "the lexer's tests"
    model.release.set()
    done = await asyncio.wait_for(outcome, 10)
    assert done is not None and done.success and done.trigger == "manual"
    completed = [e.data for e in seen.of("session.compaction_complete")]
    assert [(c.success, c.trigger) for c in completed] == [(False, "threshold"), (True, "manual")]
    assert "superseded" in (completed[0].error or "")
    # Only the summary with the focus reached the model, and it is the one in place.
    calls = zip(model.seen_messages, model.call_indexes, strict=True)
    asked = [m for m, i in calls if i == COMPACTION_CALL]
    assert len(asked) == 1 and "the lexer's tests" in asked[0][-1]["content"]
    assert session.history.checkpoints == 1
    await session.close()


# --- a summarizer that keeps failing ------------------------------------------------------


def failing_run(turns: int) -> FakeCountingModel:
    steps = [tool_turn(i) for i in range(turns)] + [{"text": "finished"}]
    script = Script.model_validate(
        {"turns": steps, "compaction": {"error": {"type": "server", "message": "summary down"}}}
    )
    return FakeCountingModel(ScriptedModel(script, "failing"))


async def test_a_failing_summarizer_is_not_asked_again_at_every_call(tmp_path: Path) -> None:
    notes(tmp_path / "ws", 2_400)  # ~600 tokens a read
    model = failing_run(30)
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=WINDOW)
    outcome = await session.send_and_wait("Read the notes.")
    assert outcome.final_text == "finished" and outcome.error is None
    # Model calls between two summary attempts: before, one (every call past 80 %).
    attempts = [n for n, i in enumerate(model.call_indexes) if i == COMPACTION_CALL]
    assert len(attempts) >= 2
    gaps = [b - a - 1 for a, b in itertools.pairwise(attempts)]
    assert min(gaps) >= 2, gaps
    # Meanwhile the window still holds: the oldest turns go, with the notice.
    dropped = [e.data for e in seen.of("session.truncation")]
    assert dropped and all(d.performed_by == History.DROP_OLDEST for d in dropped)
    assert any(e.data.warning_type == "context_truncated" for e in seen.of("session.warning"))
    # /compact is asked for: it is tried whatever the last one did.
    before = model.call_indexes.count(COMPACTION_CALL)
    assert session.context.backing_off
    done = await session.context.compact_now()
    assert done is not None and not done.success
    assert model.call_indexes.count(COMPACTION_CALL) == before + 1
    await session.close()


def test_the_size_a_refusal_names_is_read() -> None:
    openai = (
        "maximum context length is 8192 tokens. However, your messages resulted in 9,001 tokens"
    )
    assert refused_prompt_tokens(openai) == 9_001
    anthropic = "prompt is too long: 208310 tokens > 200000 maximum"
    assert refused_prompt_tokens(anthropic) == 208_310
    vllm = "you requested 9000 tokens (8000 in the messages, 1000 in the completion)"
    assert refused_prompt_tokens(vllm) == 8_000
    llama = '{"code":400,"type":"exceed_context_size_error","n_prompt_tokens":4500,"n_ctx":4096}'
    assert refused_prompt_tokens(llama) == 4_500
    assert refused_prompt_tokens("the request exceeds the available context size") is None


# --- sizes in the provider's scale, and results cut for the model ---------------------


async def test_the_summary_request_fits_the_window_in_the_providers_scale(
    tmp_path: Path,
) -> None:
    # The provider counts twice what loopdeck does (as a refusal naming the size can
    # show): the summary's own request must fit the window in its scale too, or it is
    # refused as well, just when a summary is the way out.
    model = scripted([{"text": "x" * 40_000}, {"text": "ok"}])
    session, _ = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=WINDOW)
    await session.send_and_wait("write a long text")
    session.context.meter.ratio = 2.0
    done = await session.context.compact_now()
    assert done is not None and done.success
    asked = [m for m, i in zip(model.seen_messages, model.call_indexes, strict=True) if i < 0]
    assert len(asked) == 1
    budget = session.context.limits.prompt_budget
    assert request_tokens(asked[0]) * 2.0 <= budget
    await session.close()


async def test_dropping_the_oldest_keeps_the_results_the_model_asked_for(tmp_path: Path) -> None:
    # The newest exchange is a call with two results: the oldest turns go, never the
    # results the model must read next (nor the call they answer).
    notes(tmp_path / "ws", 5_200)  # ~1,300 tokens a read
    read = {"name": "view", "arguments": {"path": "notes.txt"}}
    turns = [tool_turn(0), {"text": "two at once", "tool_calls": [read] * 2}]
    model = scripted([*turns, {"text": "finished"}])
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=WINDOW, settings=CompactionSettings(enabled=False))
    outcome = await session.send_and_wait("Read the notes.")
    assert outcome.final_text == "finished"
    assert seen.of("session.truncation")
    last = model.seen_messages[-1]
    assert [m["role"] for m in last[-3:]] == ["assistant", "tool", "tool"]
    assert len(last[-3]["tool_calls"]) == 2
    await session.close()


async def test_dropping_the_oldest_counts_cut_results_as_sent(tmp_path: Path) -> None:
    # A tool result cut for the model (a quarter of the window) frees only what was
    # sent of it when dropped: the truncation's numbers are those of the request.
    notes(tmp_path / "ws", 40_000)
    model = scripted([*(tool_turn(i) for i in range(5)), {"text": "finished"}])
    session, _ = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=WINDOW, settings=CompactionSettings(enabled=False))
    reported: list[tuple[int, int]] = []  # (after a drop by its numbers, next measured)
    after: list[int] = []

    def follow(event: Any) -> None:
        data = event.data
        if event.type == "session.truncation" and data.messages_removed_during_truncation:
            after.append(data.post_truncation_tokens_in_messages)
        elif event.type == "session.usage_info" and after:
            reported.append((after.pop(), data.conversation_tokens))

    session.subscribe(follow)
    outcome = await session.send_and_wait("Read the notes.")
    assert outcome.final_text == "finished"
    assert reported
    for said, measured in reported:
        assert said == pytest.approx(measured, abs=50), reported  # the note on top
    await session.close()


async def test_a_summarys_numbers_count_cut_results_as_sent(tmp_path: Path) -> None:
    # The summary replaces a result that was cut for the model: its before and after
    # are those of the requests, not of the result's whole size.
    notes(tmp_path / "ws", 40_000)
    model = scripted([tool_turn(0), {"text": "read"}, {"text": "ok"}])
    session, _ = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=WINDOW)
    await session.send_and_wait("Read the notes.")
    await session.send_and_wait("and then?")
    before = session.context.measure().total
    done = await session.context.compact_now()
    assert done is not None and done.success
    assert done.pre_compaction_tokens == before
    now = session.context.measure().total
    assert done.post_compaction_tokens == pytest.approx(now, abs=2)
    assert done.pre_compaction_tokens - done.tokens_removed == pytest.approx(now, abs=2)
    await session.close()


# --- nothing older than the newest exchange ----------------------------------------------


async def test_the_prompt_is_never_summarised_when_nothing_older_can_be(tmp_path: Path) -> None:
    # The system prompt and tools fill most of the window: the first prompt is over the
    # background threshold with nothing before it. It is sent word for word: the
    # summary must never cover the prompt being answered.
    model = scripted([{"text": "one"}])
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=3_000)
    await session.send_and_wait("hi")
    assert model.seen_messages[-1][-1]["content"] == "hi"
    assert COMPACTION_CALL not in model.call_indexes
    assert not seen.of("session.compaction_start")
    await session.close()


async def test_compact_does_not_summarise_the_summary_alone(tmp_path: Path) -> None:
    model = scripted([{"text": "first answer"}])
    session, _ = await new_session(model, tmp_path, system_prompt="full")
    await session.send_and_wait(padded("the task"))
    outcomes = [await session.context.compact_now() for _ in range(3)]
    assert session.history.messages[0]["content"].startswith(SUMMARY_PREFIX)
    assert len(session.history.messages) == 1
    assert outcomes[-1] is None  # only the summary is left: nothing to compact
    await session.close()


async def test_a_window_the_system_prompt_fills_is_named_as_the_cause(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    # Refused with nothing to take out, and the prompt is "hi": what does not fit is
    # the system prompt and the tools' definitions, and the user is told so.
    model = LiteLLMModel("openai/local-model", api_base="http://127.0.0.1:9/v1")
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=2_048)
    acompletion.refuse = [too_long("context_window_exceeded")]
    outcome = await session.send_and_wait("hi")
    assert outcome.error is not None and outcome.error.error_type == "context_limit"
    warnings = [e.data for e in seen.of("session.warning")]
    said = [w.message for w in warnings if w.warning_type == "context_too_small"]
    assert len(said) == 1 and "system prompt" in said[0] and "--context-window" in said[0]
    await session.close()
