"""Replay opens a long log at its end before the whole of it is indexed: the tail
is indexed and drawn first, the rest is indexed in a thread and spliced in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import app.viewer
from agent.log.replay import EventIndex
from agent.log.store import SessionStore
from agent.session.session import Session
from app.viewer import ReplayScreen, ViewerApp
from tests.support.compaction import notes, tool_turn
from tests.support.scripting import new_session, scripted


async def _log(tmp_path: Path, turns: int = 12) -> Path:
    store = SessionStore(tmp_path / "home")
    notes(tmp_path / "ws", 3_000)
    model = scripted([tool_turn(i) for i in range(turns)] + [{"text": "done"}])
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("Read the notes.")
    await session.close()
    assert isinstance(session, Session)
    return store.events_path(session.id)


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9, 1.0, 2.0])
async def test_a_tail_index_and_its_head_spliced_equal_the_whole_index(
    tmp_path: Path, fraction: float
) -> None:
    path = await _log(tmp_path)
    whole = EventIndex.build(path)
    nbytes = max(1, int(path.stat().st_size * fraction))
    tail = EventIndex.build_tail(path, nbytes)
    assert tail.start == 0 or path.read_bytes()[tail.start - 1 : tail.start] == b"\n"
    assert len(tail) <= len(whole)
    tail.splice_head(tail.head())
    assert list(tail.offsets) == list(whole.offsets)
    assert tail.types == whole.types and tail.turn_starts == whole.turn_starts
    assert tail.times == whole.times and tail.size == whole.size


async def test_replay_at_the_end_draws_the_tail_then_counts_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await _log(tmp_path)
    whole = EventIndex.build(path)
    monkeypatch.setattr(app.viewer, "TAIL_FIRST_BYTES", path.stat().st_size // 4)
    screen = ReplayScreen(path, speed=0.0)
    assert 0 < len(screen.index) < len(whole)  # only the tail indexed before drawing
    async with ViewerApp(screen).run_test(size=(100, 30)) as pilot:
        while screen.index.start > 0:
            await asyncio.sleep(0.01)  # the head is indexed in a thread
        await pilot.pause()
        assert len(screen.index) == len(whole)
        assert screen.position == len(whole)
        turns = len(whole.turn_starts)
        numbers = [
            b.number for b in screen.timeline.transcript.items if type(b).__name__ == "TurnBlock"
        ]
        assert numbers and numbers[-1] == turns
        assert f"turn {turns} of {turns}" in str(screen.bar.render())
