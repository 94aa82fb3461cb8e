"""Keeping the context inside the model's window: accounting, compaction, fallbacks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import (
    AssistantMessageData,
    Event,
    SessionCompactionCompleteData,
    SessionTruncationData,
    ToolExecutionCompleteData,
    ToolRequest,
    ToolResultPayload,
    UserMessageData,
)
from agent.log.store import SessionStore, read_events
from agent.loop.compaction_settings import CompactionSettings, settings_from
from agent.loop.history import SUMMARY_PREFIX, History
from agent.loop.summary_request import summary_request
from agent.models.base import COMPACTION_CALL, ModelReply, ProviderError, StreamItem, Usage
from agent.models.context_window import (
    UNCALIBRATED_MARGIN,
    ContextLimits,
    TokenMeter,
    estimate_tokens,
    limits_for,
    uncalibrated_ratio,
)
from agent.models.scripted import Script, ScriptedModel
from agent.session.session import Session
from tests.support.compaction import WINDOW, FakeSlowSummaryModel, notes, request_tokens, tool_turn
from tests.support.scripting import FakeCountingModel, new_session, padded, scripted


def event(data: Any) -> Event:
    return Event.new(data, None)


# --- accounting ------------------------------------------------------------------


def test_limits_come_from_the_override_the_map_or_an_assumption() -> None:
    assert limits_for("anything", window=8_000) == ContextLimits(8_000, None, "config")
    assumed = limits_for("scripted:demo")
    assert assumed.source == "assumed" and assumed.window == 128_000
    known = limits_for("gpt-4o")  # litellm's model map, offline
    assert known.source == "model map" and known.window == 128_000
    assert known.max_output is not None and known.max_output > 0


def test_meter_counts_each_message_once_and_follows_the_providers_count() -> None:
    seen: list[str] = []

    def counter(text: str) -> int:
        seen.append(text)
        return len(text)

    meter = TokenMeter(ContextLimits(1_000, None, "config"), lambda: counter)
    history = [{"role": "user", "content": "x" * 100}]
    first = meter.measure("system", [], history)
    assert first.messages == 104 and first.system == 10
    history.append({"role": "assistant", "content": "y" * 50})
    second = meter.measure("system", [], history)
    assert second.messages == 104 + 54
    assert seen.count("x" * 100) == 1  # cached by message
    meter.correct(2 * second.total)  # the provider counts twice as many
    assert meter.measure("system", [], history).total == 2 * second.total
    meter.correct(100 * second.total)  # a wild ratio is ignored
    assert meter.ratio == 2.0


def test_until_the_provider_counts_a_foreign_tokenizers_count_has_a_margin() -> None:
    meter = TokenMeter(ContextLimits(1_000, None, "config"), lambda: len, lambda: 1.2)
    history = [{"role": "user", "content": "x" * 96}]
    assert meter.measure("", [], history).messages == 120  # (96 + 4) counted, 1.2 kept
    meter.correct(110)  # the provider's own count replaces the margin
    assert meter.calibrated and meter.measure("", [], history).total == 110
    # litellm counts OpenAI's models with their own tokenizer; others by tiktoken's.
    assert uncalibrated_ratio("gpt-4o") == uncalibrated_ratio("openai/gpt-4o") == 1.0
    assert uncalibrated_ratio("openai/smollm2") == UNCALIBRATED_MARGIN > 1


async def test_each_call_reports_the_context_use_before_it(tmp_path: Path) -> None:
    model = scripted([{"text": "hello"}])
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW)
    await session.send_and_wait("hi")
    infos = seen.of("session.usage_info")
    assert len(infos) == 1
    info = infos[0].data
    assert info.token_limit == WINDOW - WINDOW // 4  # the rest is kept for the reply
    sent = model.seen_messages[0]
    assert info.current_tokens == request_tokens(sent, info.tool_definitions_tokens)
    assert info.messages_length == len(sent) - 1  # without the system prompt
    await session.close()


# --- the history's fold -----------------------------------------------------------


def test_a_summary_replaces_the_messages_it_covers_and_later_ones_stay() -> None:
    history = History()
    history.apply(event(UserMessageData(content="build a parser")))
    history.apply(
        event(
            AssistantMessageData(
                message_id="m",
                content="looking",
                tool_requests=[ToolRequest(tool_call_id="c1", name="view", arguments={})],
            )
        )
    )
    history.apply(
        event(
            ToolExecutionCompleteData(
                tool_call_id="c1", success=True, result=ToolResultPayload(content="data")
            )
        )
    )
    history.apply(event(UserMessageData(content="and now tests")))  # arrived meanwhile
    history.apply(
        event(
            SessionCompactionCompleteData(
                success=True, messages_removed=3, summary_content="task: a parser"
            )
        )
    )
    assert history.messages == [
        {"role": "user", "content": SUMMARY_PREFIX + "task: a parser"},
        {"role": "user", "content": "and now tests"},
    ]
    assert history.checkpoints == 1
    # A failed compaction changes nothing.
    history.apply(event(SessionCompactionCompleteData(success=False, error="boom")))
    assert len(history.messages) == 2


def test_dropping_the_oldest_keeps_the_summary_and_never_orphans_a_result() -> None:
    history = History()
    history.messages = [
        {"role": "user", "content": SUMMARY_PREFIX + "s"},
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
        {"role": "user", "content": "new"},
    ]
    history.apply(
        event(
            SessionTruncationData(
                messages_removed_during_truncation=2,  # would cut between a call and its result
                performed_by=History.DROP_OLDEST,
                post_truncation_messages_length=3,
                post_truncation_tokens_in_messages=1,
                pre_truncation_messages_length=5,
                pre_truncation_tokens_in_messages=2,
                token_limit=10,
                tokens_removed_during_truncation=1,
            )
        )
    )
    assert [m["content"] for m in history.messages] == [SUMMARY_PREFIX + "s", "new"]


def test_summary_request_fits_its_budget_and_keeps_the_task() -> None:
    messages = [{"role": "user", "content": "THE TASK: port the parser"}]
    messages += [
        {"role": "tool", "tool_call_id": str(i), "content": "z" * 5_000} for i in range(50)
    ]
    request = summary_request(messages, window=2_000, focus="the parser's tests")
    text = request[-1]["content"]
    assert "THE TASK: port the parser" in text
    assert (
        len(text) < 2_000 * 4 * 0.6 + len(request[-1]["content"].split("</conversation>")[1]) + 200
    )
    assert "left out" in text and "the parser's tests" in text


def test_infinite_sessions_settings_are_read_and_checked() -> None:
    read = settings_from(
        {"enabled": True, "backgroundCompactionThreshold": 0.5, "bufferExhaustionThreshold": 0.7}
    )
    assert read == CompactionSettings(True, 0.5, 0.7)
    assert settings_from(None) == CompactionSettings()
    with pytest.raises(ValueError, match="thresholds"):
        settings_from({"backgroundCompactionThreshold": 0.9, "bufferExhaustionThreshold": 0.5})


# --- compaction in a running session ----------------------------------------------


async def test_a_long_run_compacts_and_no_request_exceeds_the_window(tmp_path: Path) -> None:
    notes(tmp_path / "ws", 2_400)  # ~600 tokens a read
    turns = [tool_turn(i) for i in range(40)] + [{"text": "All done."}]
    model = scripted(turns)
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW)
    outcome = await session.send_and_wait("Read the notes forty times.")
    assert outcome.final_text == "All done."
    tools = session.tool_schemas()
    tool_tokens = estimate_tokens(json.dumps(tools, sort_keys=True))
    for messages, index in zip(model.seen_messages, model.call_indexes, strict=True):
        if index != COMPACTION_CALL:
            assert request_tokens(messages, tool_tokens) <= WINDOW
    completed = [e.data for e in seen.of("session.compaction_complete")]
    assert len(completed) >= 3 and all(c.success for c in completed)
    assert len(seen.of("session.compaction_start")) == len(completed)
    # The last request opens with the latest summary, which names the task (a summary
    # started by the last turn may have been asked for after it).
    last = next(
        m
        for m, i in zip(reversed(model.seen_messages), reversed(model.call_indexes), strict=True)
        if i != COMPACTION_CALL
    )
    assert last[1]["content"].startswith(SUMMARY_PREFIX)
    assert "Read the notes forty times." in last[1]["content"]
    assert not seen.of("session.truncation")  # summaries were enough
    await session.close()


async def test_the_loop_keeps_going_while_a_summary_is_made(tmp_path: Path) -> None:
    notes(tmp_path / "ws", 2_400)
    turns = [tool_turn(i) for i in range(30)] + [{"text": "done"}]
    script = Script.model_validate({"turns": turns})
    model = FakeSlowSummaryModel(ScriptedModel(script, "slow"))
    session, seen = await new_session(model, tmp_path)
    session.configure_context(
        window=WINDOW, settings=CompactionSettings(True, background_threshold=0.5)
    )
    started = asyncio.Event()
    turns_during: list[str] = []

    def watch(e: Event) -> None:
        if e.type == "session.compaction_start":
            started.set()
        elif e.type == "assistant.turn_start" and started.is_set() and not model.release.is_set():
            turns_during.append(e.data.turn_id)
            if len(turns_during) == 2:
                model.release.set()  # two turns ran while it worked: let it finish

    session.subscribe(watch)
    # A loop that waited for the summary instead of going on would never finish.
    outcome = await asyncio.wait_for(session.send_and_wait("go"), 60)
    assert outcome.final_text == "done"
    assert len(turns_during) == 2
    completed = seen.of("session.compaction_complete")
    assert completed and completed[0].data.success
    await session.close()


async def test_a_failed_summary_falls_back_to_dropping_the_oldest(tmp_path: Path) -> None:
    notes(tmp_path / "ws", 2_400)
    turns = [tool_turn(i) for i in range(25)] + [{"text": "finished"}]
    script = Script.model_validate(
        {"turns": turns, "compaction": {"error": {"type": "server", "message": "summary down"}}}
    )
    model = FakeCountingModel(ScriptedModel(script, "failing"))
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW)
    outcome = await session.send_and_wait("Read the notes.")
    assert outcome.final_text == "finished" and outcome.error is None
    failed = [e.data for e in seen.of("session.compaction_complete")]
    assert failed and not any(c.success for c in failed)
    assert failed[0].error == "summary down"
    dropped = [e.data for e in seen.of("session.truncation")]
    assert dropped and all(d.performed_by == History.DROP_OLDEST for d in dropped)
    warnings = [e.data for e in seen.of("session.warning")]
    assert any(w.warning_type == "context_truncated" for w in warnings)
    tool_tokens = estimate_tokens(json.dumps(session.tool_schemas(), sort_keys=True))
    for messages, index in zip(model.seen_messages, model.call_indexes, strict=True):
        if index != COMPACTION_CALL:
            assert request_tokens(messages, tool_tokens) <= WINDOW
            # The conversation opens with the user, as providers require (never a
            # result without its call, nor the model speaking first).
            assert messages[1]["role"] == "user", messages[1]
    assert seen.types()[-1] == "session.idle"
    await session.close()


async def test_an_oversized_tool_result_is_cut_for_the_model_only(tmp_path: Path) -> None:
    notes(tmp_path / "ws", 12_000)  # more than a quarter of the window
    model = scripted([tool_turn(0), {"text": "ok"}])
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW)
    await session.send_and_wait("read it")
    sent = model.seen_messages[-1][-1]
    assert sent["role"] == "tool"
    assert len(sent["content"]) < 12_000 and "output cut" in sent["content"]
    cuts = [e.data for e in seen.of("session.truncation")]
    assert cuts and cuts[0].performed_by == "loopdeck:cut_tool_output"
    whole = seen.of("tool.execution_complete")[0].data
    assert len(whole.result.content) > 12_000  # the log keeps it whole
    await session.close()


async def test_compact_now_summarises_on_request(tmp_path: Path) -> None:
    model = scripted([{"text": "first answer"}, {"text": "second answer"}])
    session, seen = await new_session(model, tmp_path)
    assert await session.context.compact_now() is None  # nothing yet
    await session.send_and_wait(padded("the task: write a lexer"))
    outcome = await session.context.compact_now(focus="the lexer")
    done = seen.of("session.compaction_complete")[-1].data
    assert outcome is done
    # The newest exchange (the last reply) stays word for word; the rest is summarised.
    assert done.success and done.trigger == "manual" and done.messages_removed == 1
    assert done.checkpoint_number == 1
    summary_call = model.seen_messages[model.call_indexes.index(COMPACTION_CALL)]
    assert "the lexer" in summary_call[-1]["content"]
    await session.send_and_wait("go on")
    sent = model.seen_messages[-1]
    assert sent[1]["content"].startswith(SUMMARY_PREFIX)
    assert "the task: write a lexer" in sent[1]["content"]
    assert [m["content"] for m in sent[2:]] == ["first answer", "go on"]
    await session.close()


async def test_a_prompt_that_does_not_fit_is_kept_and_the_rest_summarised(tmp_path: Path) -> None:
    # The history alone is over the blocking threshold when the new prompt arrives:
    # the summary must cover what came before, never the prompt being answered.
    big = "y" * 30_000  # ~7,500 tokens: the window is full before the prompt
    model = scripted([{"text": big}, {"text": "ok"}])
    session, seen = await new_session(model, tmp_path)
    await session.send_and_wait("write a long text")
    session.configure_context(window=WINDOW)
    await session.send_and_wait("NEW PROMPT")
    sent = model.seen_messages[-1]
    assert sent[1]["content"].startswith(SUMMARY_PREFIX)
    assert [m["content"] for m in sent[2:]] == ["NEW PROMPT"]
    assert not any(big in str(m.get("content")) for m in sent)
    assert [e.data.success for e in seen.of("session.compaction_complete")] == [True]
    await session.close()


async def test_a_resumed_session_sends_the_summary_not_the_old_turns(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    model = scripted([{"text": "answer one"}, {"text": "answer two"}, {"text": "answer three"}])
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait(padded("OLD QUESTION"))
    await session.send_and_wait("second question")
    await session.context.compact_now()
    await session.close()

    again = scripted([{"text": "-"}, {"text": "-"}, {"text": "answer three"}])
    resumed = await Session.resume(store=store, session_id=session.id, model=again)
    await resumed.send_and_wait("new question")
    sent = again.seen_messages[-1]
    assert sent[1]["content"].startswith(SUMMARY_PREFIX)
    contents = [m.get("content") for m in sent]
    assert padded("OLD QUESTION") not in contents and "answer one" not in contents
    # The newest exchange before the compaction stays word for word.
    assert contents[-3:] == ["second question", "answer two", "new question"]
    await resumed.close()


class FakeBrokenSummaryModel(FakeCountingModel):
    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        if call_index == COMPACTION_CALL:
            yield ModelReply(text="   ")
            return
        async for item in super().stream(messages, tools, call_index=call_index):
            yield item


async def test_an_empty_summary_is_a_failed_compaction(tmp_path: Path) -> None:
    script = Script.model_validate({"turns": [{"text": "a"}]})
    model = FakeBrokenSummaryModel(ScriptedModel(script, "empty"))
    session, seen = await new_session(model, tmp_path)
    await session.send_and_wait("q")
    outcome = await session.context.compact_now()
    done = seen.of("session.compaction_complete")[-1].data
    assert outcome is done
    assert not done.success and "empty summary" in (done.error or "")
    await session.close()


def test_the_scripted_model_fails_a_summary_when_told() -> None:
    script = Script.model_validate(
        {"turns": [], "compaction": {"error": {"type": "server", "message": "no"}}}
    )
    model = ScriptedModel(script)

    async def run() -> None:
        async for _ in model.stream([], [], call_index=COMPACTION_CALL):
            pass

    with pytest.raises(ProviderError):
        asyncio.run(run())


# --- hardening ----------------------------------------------------------------------


async def test_abort_while_waiting_for_a_blocking_summary_ends_the_turn(tmp_path: Path) -> None:
    # Over the blocking threshold the call waits for the summary; Esc then must end the
    # turn (no model call made after it), and the summary may still finish later.
    big = "y" * 30_000
    script = Script.model_validate({"turns": [{"text": big}, {"text": "never sent"}]})
    model = FakeSlowSummaryModel(ScriptedModel(script, "slow"))
    session, seen = await new_session(model, tmp_path)
    await session.send_and_wait("write a long text")
    session.configure_context(window=WINDOW)
    started = asyncio.Event()
    session.subscribe(lambda e: started.set() if e.type == "session.compaction_start" else None)
    running = asyncio.create_task(session.send_and_wait("NEW PROMPT"))
    await started.wait()
    session.abort()
    outcome = await asyncio.wait_for(running, 30)
    assert outcome.aborted
    assert [i for i in model.call_indexes if i != COMPACTION_CALL] == [0]  # none after
    assert seen.types()[-1] == "session.idle"
    model.release.set()
    await session.close()


def test_the_estimate_counts_non_ascii_text_by_its_bytes() -> None:
    # A tokenizer spends about a token on each CJK character; four characters a token
    # would let such a history overflow the window fourfold.
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("这是中文" * 100) >= 300
    assert estimate_tokens("Größe") == 2  # seven bytes


async def test_the_summary_request_fits_the_window_in_any_script(tmp_path: Path) -> None:
    # A history written for a larger window (another model, or a window set later),
    # in a script whose characters cost more than a quarter token each.
    big = "这是一个测试用的中文句子。" * 800  # ~7,800 tokens
    model = scripted([{"text": big}, {"text": "好"}])
    session, seen = await new_session(model, tmp_path)
    await session.send_and_wait("写一篇长文。")
    session.configure_context(window=WINDOW)
    await session.send_and_wait("继续")
    summaries = [
        m
        for m, i in zip(model.seen_messages, model.call_indexes, strict=True)
        if i == COMPACTION_CALL
    ]
    assert summaries
    for messages in summaries:
        # Its input within its share of the window, leaving room for the summary itself.
        assert request_tokens(messages) <= WINDOW * 0.65
    assert [e.data.success for e in seen.of("session.compaction_complete")] == [True]
    await session.close()


class FakeBilledSummaryModel(FakeCountingModel):
    """Its summary call reports what it cost, as a provider does."""

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        if call_index == COMPACTION_CALL:
            yield ModelReply(
                text="<overview>the task</overview>",
                usage=Usage(input_tokens=5_000, output_tokens=300, cost=0.25),
            )
            return
        async for item in super().stream(messages, tools, call_index=call_index):
            yield item


async def test_the_summary_calls_tokens_count_in_the_sessions_usage(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    script = Script.model_validate({"turns": [{"text": "a"}, {"text": "b"}]})
    model = FakeBilledSummaryModel(ScriptedModel(script, "billed"))
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait(padded("q"))
    before = session.usage.totals()
    done = await session.context.compact_now()
    assert done is not None and done.success and done.compaction_tokens_used is not None
    assert done.compaction_tokens_used.input_tokens == 5_000
    assert done.compaction_tokens_used.output_tokens == 300
    after = session.usage.totals()
    assert after.input_tokens - before.input_tokens == 5_000
    assert after.output_tokens - before.output_tokens == 300
    assert after.cost - before.cost == pytest.approx(0.25)
    await session.close()
    # Replay, export and resume read the usage checkpoints: the summary's cost is there.
    again = scripted([{"text": "-"}])
    resumed = await Session.resume(store=store, session_id=session.id, model=again)
    assert resumed.usage.totals() == after
    await resumed.close()


async def test_clear_while_a_summary_is_made_keeps_the_history_empty(tmp_path: Path) -> None:
    # A background summary still running when the turn ends; /clear must win over it,
    # live and on resume alike.
    store = SessionStore(tmp_path / "home")
    script = Script.model_validate({"turns": [{"text": "first"}, {"text": "after clear"}]})
    model = FakeSlowSummaryModel(ScriptedModel(script, "slow"))
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("OLD TASK")
    assert session.context.start("manual")
    session.clear_context()
    model.release.set()
    await session.context.compact_now()  # waits for the one running, if any
    await session.send_and_wait("NEW TASK")
    sent = [m.get("content") for m in model.seen_messages[-1][1:]]
    assert sent == ["NEW TASK"]
    await session.close()
    again = scripted([{"text": "-"}, {"text": "-"}, {"text": "-"}])
    resumed = await Session.resume(store=store, session_id=session.id, model=again)
    assert [m.get("content") for m in resumed.history.messages] == ["NEW TASK", "after clear"]
    await resumed.close()


async def test_the_context_use_is_reported_again_when_the_history_shrinks(tmp_path: Path) -> None:
    # The status bar's ``ctx`` follows session.usage_info: after /clear or a summary it
    # must not keep showing the full window until the next prompt.
    model = scripted([{"text": "x" * 16_000}, {"text": "y" * 4_000}])
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW * 2)
    await session.send_and_wait("write a lot")
    await session.send_and_wait("and a bit more")
    full = seen.of("session.usage_info")[-1].data.current_tokens
    done = await session.context.compact_now()
    assert done is not None and done.success
    after = seen.of("session.usage_info")[-1].data
    assert after.current_tokens == session.context.measure().total < full
    session.clear_context()
    cleared = seen.of("session.usage_info")[-1].data
    assert cleared.messages_length == 0
    assert cleared.current_tokens == session.context.measure().total < after.current_tokens
    await session.close()


async def test_a_cut_tool_result_takes_a_quarter_of_the_window_in_any_script(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("这是一个测试用的中文句子。\n" * 2_000)
    model = scripted([tool_turn(0), {"text": "ok"}])
    session, _ = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW)
    await session.send_and_wait("read it")
    # The model reads the (cut) result itself, not a summary made because it was too big.
    assert COMPACTION_CALL not in model.call_indexes
    sent = model.seen_messages[-1][-1]
    assert sent["role"] == "tool" and "output cut" in sent["content"]
    assert estimate_tokens(sent["content"]) <= WINDOW // 4 + 50  # and the note
    await session.close()


async def test_closing_during_a_summary_records_it_as_failed(tmp_path: Path) -> None:
    # Quitting while a background summary runs: the log must say how it ended, and
    # nothing may be written after the log is closed.
    store = SessionStore(tmp_path / "home")
    script = Script.model_validate({"turns": [{"text": "first"}]})
    model = FakeSlowSummaryModel(ScriptedModel(script, "slow"))
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("OLD TASK")
    assert session.context.start("threshold")
    await session.close()
    assert not session.context.compacting
    model.release.set()
    await asyncio.sleep(0)
    types = [e.type for e in read_events(store.events_path(session.id)).events]
    assert types.count("session.compaction_start") == 1
    ended = [
        e.data
        for e in read_events(store.events_path(session.id)).events
        if e.type == "session.compaction_complete"
    ]
    assert len(ended) == 1 and not ended[0].success


async def test_a_summary_cut_by_a_crash_is_closed_on_resume(tmp_path: Path) -> None:
    # A log that ends between compaction_start and its complete (the process died):
    # resume records the attempt as failed, so nothing shows it running forever.
    store = SessionStore(tmp_path / "home")
    script = Script.model_validate({"turns": [{"text": "first"}]})
    model = FakeSlowSummaryModel(ScriptedModel(script, "slow"))
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("OLD TASK")
    assert session.context.start("threshold")
    await session.close()
    path = store.events_path(session.id)
    lines = path.read_text("utf-8").splitlines(keepends=True)
    path.write_text("".join(x for x in lines if "session.compaction_complete" not in x), "utf-8")
    started = [e for e in read_events(path).events if e.type == "session.compaction_start"]
    again = scripted([{"text": "-"}, {"text": "second"}])
    resumed = await Session.resume(store=store, session_id=session.id, model=again)
    repaired = [e.data for e in resumed.backlog[resumed.restored :]]
    ended = [d for d in repaired if isinstance(d, SessionCompactionCompleteData)]
    assert len(ended) == 1 and not ended[0].success
    assert ended[0].compaction_attempt_id == started[0].data.compaction_attempt_id
    assert [m["content"] for m in resumed.history.messages] == ["OLD TASK", "first"]
    await resumed.close()


async def test_with_compaction_off_the_oldest_turns_are_dropped(tmp_path: Path) -> None:
    # infinite_sessions.enabled = false turns summaries off, not the window's limit:
    # the requests must still fit (by dropping the oldest turns), never overflow.
    notes(tmp_path / "ws", 2_400)
    turns = [tool_turn(i) for i in range(20)] + [{"text": "finished"}]
    model = scripted(turns)
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW, settings=CompactionSettings(enabled=False))
    outcome = await session.send_and_wait("Read the notes.")
    assert outcome.final_text == "finished"
    assert COMPACTION_CALL not in model.call_indexes
    assert not seen.of("session.compaction_start")
    tool_tokens = estimate_tokens(json.dumps(session.tool_schemas(), sort_keys=True))
    budget = session.context.limits.prompt_budget  # the window less the reply's room
    for messages in model.seen_messages:
        assert request_tokens(messages, tool_tokens) <= budget
    dropped = [e.data for e in seen.of("session.truncation")]
    assert dropped and all(d.performed_by == History.DROP_OLDEST for d in dropped)
    await session.close()


def test_the_reply_keeps_its_room_in_the_window() -> None:
    # Providers that add max_tokens (litellm sends the model's output limit) to the
    # prompt refuse a request past the window: the prompt may fill only the rest.
    assert ContextLimits(200_000, 64_000).prompt_budget == 136_000
    assert ContextLimits(8_192, 8_192).prompt_budget == 8_192 - 8_192 // 3  # at most a third
    assert ContextLimits(8_000, None).prompt_budget == 8_000
    meter = TokenMeter(ContextLimits(10_000, 2_000), lambda: estimate_tokens)
    usage = meter.measure("s" * 4_000, [], [{"role": "user", "content": "x" * 28_000}])
    assert usage.window == 8_000 and usage.fraction == pytest.approx(usage.total / 8_000)


async def test_no_request_and_its_reply_exceed_the_window(tmp_path: Path) -> None:
    notes(tmp_path / "ws", 2_400)
    turns = [tool_turn(i) for i in range(25)] + [{"text": "All done."}]
    model = scripted(turns)
    session, seen = await new_session(model, tmp_path)
    session.configure_context(window=WINDOW, max_output=1_500)
    outcome = await session.send_and_wait("Read the notes.")
    assert outcome.final_text == "All done."
    tool_tokens = estimate_tokens(json.dumps(session.tool_schemas(), sort_keys=True))
    for messages, index in zip(model.seen_messages, model.call_indexes, strict=True):
        if index != COMPACTION_CALL:
            assert request_tokens(messages, tool_tokens) + 1_500 <= WINDOW
    assert seen.of("session.compaction_complete")
    await session.close()


async def test_the_window_follows_a_model_switch(tmp_path: Path) -> None:
    # /model from a large window to a small one: the next request must fit the new one.
    big = "y" * 30_000  # ~7,500 tokens
    first = ScriptedModel(Script.model_validate({"turns": [{"text": big}]}), "large")
    session, seen = await new_session(first, tmp_path)
    await session.send_and_wait("write a long text")
    assert seen.of("session.usage_info")[-1].data.token_limit == 128_000
    script = {"turns": [{"text": "-"}, {"text": "ok"}], "context_window": WINDOW}
    session.set_model(ScriptedModel(Script.model_validate(script), "small"))
    await session.send_and_wait("NEW PROMPT")
    info = seen.of("session.usage_info")[-1].data
    assert info.token_limit == WINDOW and info.current_tokens <= WINDOW
    assert [e.data.success for e in seen.of("session.compaction_complete")] == [True]
    await session.close()


async def test_checkpoint_numbers_go_on_across_resume(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    model = scripted([{"text": "one"}, {"text": "two"}])
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait(padded("first"))
    await session.send_and_wait("second")
    done = await session.context.compact_now()
    assert done is not None and done.checkpoint_number == 1
    await session.close()
    again = scripted([{"text": "-"}, {"text": "-"}, {"text": "three"}, {"text": "four"}])
    resumed = await Session.resume(store=store, session_id=session.id, model=again)
    await resumed.send_and_wait(padded("third"))
    await resumed.send_and_wait("fourth")
    done = await resumed.context.compact_now()
    assert done is not None and done.success and done.checkpoint_number == 2
    await resumed.close()


async def test_the_compactions_token_counts_follow_the_providers_scale(tmp_path: Path) -> None:
    # After a provider said its counts differ from ours, every number is in its scale:
    # the compaction's before/after must agree with the usage reported after it.
    model = scripted([{"text": "x" * 8_000}, {"text": "y" * 400}])
    session, _ = await new_session(model, tmp_path)
    await session.send_and_wait("write")
    await session.send_and_wait("more")
    session.context.meter.ratio = 1.5
    done = await session.context.compact_now()
    assert done is not None and done.success
    now = session.context.measure()
    assert done.post_compaction_tokens == pytest.approx(now.total, abs=2)
    assert done.pre_compaction_tokens - done.tokens_removed == pytest.approx(now.total, abs=2)
    await session.close()
