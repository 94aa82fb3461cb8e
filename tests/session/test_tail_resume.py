"""Resume tail first: the model's history from the last checkpoint, the state from a
few events found by type, the timeline from the last turns; never the whole log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agent.events.schema
import agent.session.tail_resume
from agent.events.schema import Event, event_from_json
from agent.log.store import SessionStore, read_events
from agent.loop.history import SUMMARY_PREFIX, History
from agent.session.session import Session
from agent.session.tail_resume import plan_resume
from tests.support.compaction import WINDOW, notes, tool_turn
from tests.support.paths import FIXTURES
from tests.support.scripting import new_session, padded, scripted


async def _compacted_log(tmp_path: Path, turns: int = 30) -> tuple[SessionStore, str]:
    """A session long enough to compact several times in the background."""
    store = SessionStore(tmp_path / "home")
    notes(tmp_path / "ws", 2_400)
    model = scripted([tool_turn(i) for i in range(turns)] + [{"text": "All done."}])
    session, _ = await new_session(model, tmp_path, store=store)
    session.configure_context(window=WINDOW)
    await session.send_and_wait("Read the notes many times.")
    await session.close()
    return store, session.id


def _lines(store: SessionStore, sid: str) -> list[dict[str, Any]]:
    text = store.events_path(sid).read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def test_the_history_folded_from_the_checkpoint_is_the_whole_folds(tmp_path: Path) -> None:
    store, sid = await _compacted_log(tmp_path)
    whole = History()
    for event in read_events(store.events_path(sid)).events:
        whole.apply(event)
    assert whole.checkpoints >= 2
    resumed = await Session.resume(store=store, session_id=sid, model=scripted([]))
    assert resumed.history.messages == whole.messages
    assert resumed.history.checkpoints == whole.checkpoints
    await resumed.close()


async def test_resume_never_parses_the_history_before_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, sid = await _compacted_log(tmp_path)
    path = store.events_path(sid)
    rows = _lines(store, sid)
    types = [r["type"] for r in rows]
    meta_before = store.read_meta(sid)
    last_start = len(types) - 1 - types[::-1].index("session.compaction_start")
    # The newest exchange before it stays word for word after the summary (in these
    # autopilot turns: the last reply and its tool results); everything older is
    # replaced by the summary.
    kept_from = max(i for i in range(last_start) if types[i] == "assistant.message")
    # Damage every old message: a reader that parsed them would report (and skip) them.
    old = {"assistant.message", "tool.execution_start", "tool.execution_complete"}
    out = []
    for i, row in enumerate(rows):
        line = json.dumps(row, separators=(",", ":"))
        if i < kept_from and row["type"] in old:
            line = '{"type":"' + row["type"] + '","data":' + "#" * 40 + "}"
        out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")

    parsed: list[str] = []

    def counting(text: str) -> Event:
        parsed.append(text)
        return event_from_json(text)

    # The index parses its lines through agent.events.schema (imported when it first parses).
    monkeypatch.setattr(agent.events.schema, "event_from_json", counting)
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 2)  # the timeline's part: 2 turns
    again = scripted([{"text": "answer"}])
    resumed = await Session.resume(store=store, session_id=sid, model=again)
    warnings = [e for e in resumed.backlog if e.type == "session.warning"]
    assert warnings == []  # no damaged line was read
    assert len(parsed) <= len(rows) - kept_from + 8  # the tail, and a few state events
    await resumed.send_and_wait("new question")
    sent = again.seen_messages[-1]
    assert sent[1]["content"].startswith(SUMMARY_PREFIX)
    assert sent[-1]["content"] == "new question"
    # The counters of the whole log, though most of it was never parsed.
    meta = store.read_meta(sid)
    assert meta["turns"] == meta_before["turns"] + 1
    assert meta["toolCalls"] == meta_before["toolCalls"]
    assert meta["firstPrompt"] == "Read the notes many times."
    assert meta["inputTokens"] >= meta_before["inputTokens"]
    await resumed.close()


async def test_resume_keeps_counters_usage_and_mode_and_gives_the_timeline_the_tail(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "home")
    notes(tmp_path / "ws", 200)
    model = scripted([tool_turn(i) for i in range(12)] + [{"text": "done"}])
    session, _ = await new_session(model, tmp_path, store=store, mode="autopilot")
    await session.send_and_wait("Read the notes.")
    await session.close()
    meta_before = store.read_meta(sid := session.id)

    plan = plan_resume(store.events_path(sid), tail_turns=4)
    assert plan.tail_start > 0 and plan.fold_start == 0
    resumed = await Session.resume(store=store, session_id=sid, model=scripted([]))
    meta = store.read_meta(sid)
    for key in ("turns", "toolCalls", "inputTokens", "outputTokens", "firstPrompt"):
        assert meta[key] == meta_before[key], key
    assert resumed.mode == "autopilot"
    await resumed.close()


async def test_a_crash_after_a_checkpoint_is_repaired_from_the_tail(tmp_path: Path) -> None:
    store, sid = await _compacted_log(tmp_path, turns=24)
    path = store.events_path(sid)
    rows = _lines(store, sid)
    # Cut the log inside the last turn that runs a tool: its call never completed.
    types = [r["type"] for r in rows]
    cut = len(types) - 1 - types[::-1].index("tool.execution_start")
    path.write_text(
        "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows[: cut + 1]), "utf-8"
    )
    resumed = await Session.resume(store=store, session_id=sid, model=scripted([]))
    repaired = [e.type for e in resumed.backlog[resumed.restored :]]
    assert repaired[:2] == ["tool.execution_complete", "assistant.turn_end"]
    assert not resumed.history.open_calls
    await resumed.close()


async def test_the_app_draws_the_tail_and_counts_the_whole_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.app import LoopdeckApp

    store = SessionStore(tmp_path / "home")
    notes(tmp_path / "ws", 200)
    model = scripted([tool_turn(i) for i in range(12)] + [{"text": "done"}])
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("Read the notes.")
    await session.close()
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 3)

    async def reopen() -> Session:
        return await Session.resume(store=store, session_id=session.id, model=scripted([]))

    app = LoopdeckApp(reopen)
    async with app.run_test(size=(100, 30)) as pilot:
        while app.session is None:
            await pilot.pause()
        await pilot.pause()
        transcript = app.timeline.transcript
        assert transcript.turns == 13 and transcript.tool_calls == 12  # the whole session's
        turn_blocks = [b for b in transcript.items if type(b).__name__ == "TurnBlock"]
        assert len(turn_blocks) == 3  # only the tail was folded
        row = app.timeline.query_one(".load-earlier")
        assert row.display and "10 earlier turns" in str(row.render())
        # Loading earlier reads the turns before the tail from the log, a window at a time.
        app.timeline.load_earlier()
        await pilot.pause()
        turn_blocks = [b for b in transcript.items if type(b).__name__ == "TurnBlock"]
        assert [b.number for b in turn_blocks[:4]] == [8, 9, 10, 11]
        assert "7 earlier turns" in str(row.render())
        while app.timeline.earlier is not None and app.timeline.earlier.remaining():
            app.timeline.load_earlier()
        await pilot.pause()
        turn_blocks = [b for b in transcript.items if type(b).__name__ == "TurnBlock"]
        assert [b.number for b in turn_blocks] == list(range(1, 14))
        ids = [b.block_id for b in transcript.items]
        assert len(set(ids)) == len(ids)


async def test_the_earlier_log_and_the_backlog_make_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path / "home")
    notes(tmp_path / "ws", 200)
    model = scripted([tool_turn(i) for i in range(8)] + [{"text": "done"}])
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("Read the notes.")
    await session.close()
    logged = [row["id"] for row in _lines(store, session.id)]
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 2)
    resumed = await Session.resume(store=store, session_id=session.id, model=scripted([]))
    earlier = resumed.earlier_events()
    assert earlier  # the backlog holds only the tail
    restored = resumed.backlog[: resumed.restored]
    assert [e.id for e in [*earlier, *restored]] == logged
    await resumed.close()


REAL = sorted(FIXTURES.glob("copilot-real/*/events.jsonl"))


@pytest.mark.parametrize("log", REAL, ids=[p.parent.name[:40] for p in REAL])
async def test_a_real_copilot_log_resumes_to_the_whole_folds_history(
    tmp_path: Path, log: Path
) -> None:
    whole = History()
    for event in read_events(log).events:
        whole.apply(event)
    store = SessionStore(tmp_path / "home")
    sid = "0b5e2a4c-8a2e-4d6f-9a51-3c1f0e7d2b90"
    store.session_dir(sid).mkdir(parents=True)
    store.events_path(sid).write_bytes(log.read_bytes())
    resumed = await Session.resume(store=store, session_id=sid, model=scripted([]))
    # What resume closes as interrupted adds tool results; the rest is the whole fold's.
    assert resumed.history.messages[: len(whole.messages)] == whole.messages
    await resumed.close()


async def test_resuming_a_folder_without_a_log_creates_none(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    sid = "5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    store.session_dir(sid).mkdir(parents=True)
    with pytest.raises(FileNotFoundError):
        await Session.resume(store=store, session_id=sid, model=scripted([]))
    assert not store.events_path(sid).exists()


async def test_a_resumed_history_keeps_what_the_summary_left_after_an_empty_reply(
    tmp_path: Path,
) -> None:
    # A model may end a turn with an empty reply (no text, no tools): the history
    # leaves it out, so resume must not count it among the messages kept whole.
    store = SessionStore(tmp_path / "home")
    notes(tmp_path / "ws", 200)
    model = scripted([{"text": "one"}, tool_turn(0), {"text": ""}])
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait(padded("first"))  # a summary must be smaller than this
    await session.send_and_wait("LAST PROMPT")
    done = await session.context.compact_now()
    assert done is not None and done.success
    live = [m.get("content") for m in session.history.messages]
    assert "LAST PROMPT" in live
    await session.close()
    resumed = await Session.resume(store=store, session_id=session.id, model=scripted([]))
    assert [m.get("content") for m in resumed.history.messages] == live
    await resumed.close()


@pytest.mark.parametrize("tail_turns", [2, 8, 40])
async def test_the_plan_counts_what_comes_before_the_tail_and_before_the_fold(
    tmp_path: Path, tail_turns: int
) -> None:
    from agent.session.tail_resume import Counts

    store, sid = await _compacted_log(tmp_path)
    plan = plan_resume(store.events_path(sid), tail_turns)
    types = plan.index.types

    def counts(stop: int) -> Counts:
        seen = types[:stop]
        turns = seen.count("assistant.turn_start")
        retries = seen.count("assistant.turn_retry")
        return Counts(turns, turns + retries, seen.count("tool.execution_complete"))

    assert plan.counted == counts(plan.fold_start)
    assert plan.before_tail == counts(plan.tail_start)
    checkpoints = [i for i in range(plan.tail_start) if types[i] == "session.usage_checkpoint"]
    # Here 2 turns start after the last checkpoint's fold, 8 before it, 40 at the start.
    assert plan.usage_before_tail == (checkpoints[-1] if checkpoints else -1)
