"""A compaction must make the context smaller, and its summary must fit the output limit.

A summary no smaller than the conversation it replaces ("2,674 → 3,558 tokens") is a
failed compaction: the history stays as it was and, over the blocking threshold, the
oldest messages go as after any failed summary. The summary is asked for at most half
of what it replaces, within the reply's room (the output limit the user gave, e.g. a
server's cap), and told so in words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.loop.history import SUMMARY_PREFIX, History
from agent.loop.summary_request import SUMMARY_SYSTEM
from agent.models.litellm_client import LiteLLMModel
from agent.models.scripted import Script, ScriptedModel
from agent.session.session import Session
from app.cli import main
from tests.support.fake_acompletion import FakeAcompletion
from tests.support.fake_acompletion import acompletion as acompletion  # the fixture
from tests.support.scripting import FILLER, FakeCountingModel, new_session, padded

__all__ = ["acompletion"]  # the fixture

WINDOW = 9_000  # tokens; the system prompt and tools take ~2,900 of them


def summary_calls(fake: FakeAcompletion) -> list[dict[str, Any]]:
    return [c for c in fake.calls if c["messages"][0]["content"] == SUMMARY_SYSTEM]


def long_summary_model(turns: list[dict[str, Any]], summary: str) -> FakeCountingModel:
    script = {"turns": turns, "compaction": {"summary": summary}}
    return FakeCountingModel(ScriptedModel(Script.model_validate(script), "long-summary"))


async def test_a_summary_asks_for_less_than_it_replaces(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    # A window the user gave keeps a quarter (2,250 tokens) for a reply; a summary of
    # ~400 tokens of conversation (as counted before the server's first report) asking
    # for those 2,250 could come back larger than it.
    model = LiteLLMModel("openai/local-model", api_base="http://127.0.0.1:9/v1")
    session, _ = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=WINDOW)
    await session.send_and_wait(padded("the task: write a lexer"))
    await session.send_and_wait("and its tests")
    done = await session.context.compact_now()
    assert done is not None and done.success
    [call] = summary_calls(acompletion)
    assert 100 <= call["max_tokens"] <= 250
    words = call["max_tokens"] * 3 // 4
    assert f"Keep the whole summary under {words:,} words." in call["messages"][-1]["content"]
    # The turns' replies keep the whole room.
    assert acompletion.turns[-1]["max_tokens"] == WINDOW // 4
    await session.close()


async def test_a_summary_asks_for_no_more_than_the_output_limit_given(
    tmp_path: Path, acompletion: FakeAcompletion
) -> None:
    # A server that writes 256 tokens at most (llama.cpp's --n-predict), told with
    # --max-output-tokens: a summary of thousands of tokens asks for those 256.
    model = LiteLLMModel("openai/local-model", api_base="http://127.0.0.1:9/v1")
    session, _ = await new_session(model, tmp_path, system_prompt="full")
    session.configure_context(window=WINDOW, max_output=256)
    await session.send_and_wait(f"the task: write a lexer\n{FILLER * 8}")
    await session.send_and_wait("and its tests")
    done = await session.context.compact_now()
    assert done is not None and done.success
    [call] = summary_calls(acompletion)
    assert call["max_tokens"] == 256
    await session.close()


async def test_a_summary_no_smaller_than_what_it_replaces_is_a_failed_compaction(
    tmp_path: Path,
) -> None:
    model = long_summary_model([{"text": "one"}, {"text": "two"}], "<overview>" + FILLER * 4)
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    await session.send_and_wait(padded("the task"))
    await session.send_and_wait("go on")
    before = list(session.history.messages)
    done = await session.context.compact_now()
    assert done is not None and not done.success
    assert done.error is not None and "was no smaller than the" in done.error
    assert done.post_compaction_tokens is None and done.summary_content is None
    # Nothing replaced: the model goes on from the conversation itself.
    assert session.history.messages == before
    assert session.history.checkpoints == 0
    assert [e.data.success for e in seen.of("session.compaction_complete")] == [False]
    await session.close()


async def test_over_the_blocking_threshold_a_growing_summary_falls_back_to_dropping(
    tmp_path: Path,
) -> None:
    big = "y" * 16_000  # ~4,000 tokens: with the prompt and tools, past 95 % of the window
    model = long_summary_model(
        [{"text": big}, {"text": "ok"}], "<overview>" + "z" * 24_000 + "</overview>"
    )
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    await session.send_and_wait("write a long text")
    session.configure_context(window=WINDOW)
    await session.send_and_wait("NEW PROMPT")
    assert [e.data.success for e in seen.of("session.compaction_complete")] == [False]
    [truncation] = seen.of("session.truncation")
    assert truncation.data.performed_by == History.DROP_OLDEST
    sent = model.seen_messages[-1]
    assert not any(str(m.get("content")).startswith(SUMMARY_PREFIX) for m in sent)
    assert not any(big in str(m.get("content")) for m in sent)
    assert sent[-1]["content"] == "NEW PROMPT"
    info = seen.of("session.usage_info")[-1].data
    assert info.current_tokens <= info.token_limit
    await session.close()


# --- a window loopdeck's own prompt does not fit --------------------------------------


def fixed_tokens(session: Session) -> int:
    usage = session.context.measure()
    return usage.system + usage.tools


def test_a_window_the_system_prompt_does_not_fit_is_told_at_start_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ~2,400 tokens of system prompt and tools in 2,048 (512 of them kept for the reply).
    monkeypatch.chdir(tmp_path)
    argv = ["-p", "hi", "--model", "scripted:demo", "--context-window", "2048"]
    argv += ["--system-prompt", "full"]  # the compact one (~1,000 tokens) would fit
    capsys.readouterr()
    assert main([*argv, "--output-format", "json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    types = [e["type"] for e in events]
    warnings = [e["data"] for e in events if e["type"] == "session.warning"]
    # (then the demo's conversation is truncated to fit, as it must be)
    assert [w["warningType"] for w in warnings].count("context_too_small") == 1
    assert warnings[0]["warningType"] == "context_too_small"
    # Before anything is sent: at start-up.
    assert types.index("session.warning") < types.index("user.message")
    message = warnings[0]["message"]
    assert "more than the 1,536 tokens a request may hold in a 2,048-token" in message
    assert "no request will fit" in message and "--context-window" in message
    # Text mode: on stderr, with the answer on stdout as ever.
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "warning: loopdeck's system prompt and tools' definitions alone take" in err
    assert out.strip()


async def test_a_window_the_system_prompt_nearly_fills_is_told_once(tmp_path: Path) -> None:
    model = FakeCountingModel(ScriptedModel(Script.model_validate({"turns": []}), "small"))
    session, seen = await new_session(model, tmp_path, system_prompt="full")
    # A window whose request budget (three quarters of it) the fixed part fills to 90 %.
    window = round(fixed_tokens(session) / 0.9 / 0.75)
    session.configure_context(window=window)
    assert not seen.of("session.warning")  # under the budget: the count at the call tells
    await session.send_and_wait("hi")
    await session.send_and_wait("again")
    [warning] = [e.data for e in seen.of("session.warning")]
    assert warning.warning_type == "context_too_small"
    assert "little is left for the conversation" in warning.message
    # A roomy window says nothing.
    (tmp_path / "roomy").mkdir()
    quiet, heard = await new_session(model, tmp_path / "roomy")
    quiet.configure_context(window=window * 4)
    await quiet.send_and_wait("hi")
    assert not heard.of("session.warning")
    await session.close()
    await quiet.close()
