"""A reply the provider cut at its output token limit is marked everywhere it shows."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import WARNING_OUTPUT_TRUNCATED
from agent.log.store import SessionStore, read_events
from agent.models.litellm_client import LiteLLMModel
from agent.models.litellm_import import import_litellm
from agent.session.session import Session
from agent.transcript.blocks import TurnBlock
from agent.transcript.fold import Transcript, fold
from app.export import export_session
from tests.support.fake_chunk_stream import FakeChunkStream
from widgets.format import LIMIT_CUT_MARK
from widgets.turn_view import header_text

session_events = pytest.importorskip("copilot.generated.session_events")


async def run_reply(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, finish_reason: str
) -> tuple[Path, Transcript]:
    """One send whose reply streams "Here is the sta" and ends with ``finish_reason``."""
    litellm = import_litellm()
    stream_types = litellm.types.utils
    chunks = [
        stream_types.ModelResponseStream(choices=[{"index": 0, "delta": {"content": "Here is "}}]),
        stream_types.ModelResponseStream(
            choices=[{"index": 0, "delta": {"content": "the sta"}, "finish_reason": finish_reason}]
        ),
    ]

    async def acompletion(**_kwargs: Any) -> FakeChunkStream:
        return FakeChunkStream(chunks)

    monkeypatch.setattr(litellm, "acompletion", acompletion)
    store = SessionStore(tmp_path / "home")
    session = await Session.create(model=LiteLLMModel("openai/gpt-4o"), cwd=tmp_path, store=store)
    live = Transcript()
    session.subscribe(live.apply)
    outcome = await session.send_and_wait("write a long story")
    await session.close()
    assert outcome.error is None  # cut is a warning, not a failure
    return store.events_path(session.id), live


def only_turn(transcript: Transcript) -> TurnBlock:
    turns = [b for b in transcript.items if isinstance(b, TurnBlock)]
    assert len(turns) == 1
    return turns[0]


async def test_cut_reply_is_marked_in_log_transcript_timeline_and_exports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log, live = await run_reply(monkeypatch, tmp_path, "length")

    lines = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    for wire in lines:  # every line, the warning included, is schema-valid
        parsed = session_events.session_event_from_dict(wire)
        assert parsed.type.value == wire["type"]
    types = [w["type"] for w in lines]
    warnings = [w["data"] for w in lines if w["type"] == "session.warning"]
    assert [w["warningType"] for w in warnings] == [WARNING_OUTPUT_TRUNCATED]
    assert "output limit" in warnings[0]["message"]
    # After the message it is about, inside its turn.
    warning_at = types.index("session.warning")
    assert types.index("assistant.message") < warning_at < types.index("assistant.turn_end")

    replayed = fold(read_events(log).events, replay=True)
    for transcript in (live, replayed):
        turn = only_turn(transcript)
        assert turn.cut_at_limit and turn.text == "Here is the sta"
        assert LIMIT_CUT_MARK in header_text(turn, show_model=True).plain

    assert LIMIT_CUT_MARK in export_session(log, "markdown")
    assert html.escape(LIMIT_CUT_MARK) in export_session(log, "html")


async def test_a_finished_reply_is_not_marked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log, live = await run_reply(monkeypatch, tmp_path, "stop")
    assert "session.warning" not in log.read_text("utf-8")
    turn = only_turn(live)
    assert not turn.cut_at_limit
    assert LIMIT_CUT_MARK not in header_text(turn, show_model=True).plain
    assert LIMIT_CUT_MARK not in export_session(log, "markdown")
