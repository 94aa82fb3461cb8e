"""Turn ends in quick succession share one fsync (group commit): a loop whose model and
tools answer at once does not pay for an fsync per turn. Everything before a side
effect and before idle is still fsynced first, without waiting for the group."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import agent.log.writer
from agent.events.schema import AssistantTurnEndData, Event, SessionIdleData
from agent.log.store import SessionStore
from agent.log.writer import SessionWriter
from tests.support.scripting import new_session, scripted

GREP = {"name": "grep", "arguments": {"pattern": "x"}}


def record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patch os.fsync to note the size of the file at each fsync."""
    sizes: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        real_fsync(fd)
        sizes.append(os.fstat(fd).st_size)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    return sizes


async def test_quick_turn_ends_share_one_fsync_and_idle_waits_for_it(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An interval no run reaches: every turn end after the first is "quick".
    monkeypatch.setattr(agent.log.writer, "TURN_END_SYNC_INTERVAL", 3600.0)
    fsynced = record_fsyncs(monkeypatch)
    turns = 20  # grep hops to a thread, so the writer runs (and would fsync) between turns
    model = scripted([*({"text": f"{i}", "tool_calls": [GREP]} for i in range(turns)), {}])
    store = SessionStore(loopdeck_home)
    session, _ = await new_session(model, tmp_path, store=store)
    log = store.events_path(session.id)
    at_idle: list[tuple[int, int]] = []  # (file size, size at the last fsync)

    def on_event(event: Event) -> None:
        if isinstance(event.data, SessionIdleData):
            at_idle.append((log.stat().st_size, fsynced[-1] if fsynced else 0))

    session.subscribe(on_event)
    outcome = await session.send_and_wait("go")
    await session.close()

    assert outcome.error is None and outcome.turns == turns + 1
    # The first turn end at once, the rest together before idle: not one per turn.
    assert 1 <= len(fsynced) <= 2, fsynced
    # Idle came only once everything before it was on disk (the group did not wait).
    assert at_idle == [(at_idle[0][0], at_idle[0][0])]


async def test_a_turn_end_after_a_quiet_spell_is_fsynced_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent.log.writer, "TURN_END_SYNC_INTERVAL", 3600.0)
    loop = asyncio.get_running_loop()
    fsynced = asyncio.Event()
    real_fsync = os.fsync

    def signalling_fsync(fd: int) -> None:
        real_fsync(fd)
        loop.call_soon_threadsafe(fsynced.set)

    monkeypatch.setattr(os, "fsync", signalling_fsync)
    writer = SessionWriter(tmp_path / "s" / "events.jsonl")
    await writer.open()
    try:
        writer.append(Event.new(AssistantTurnEndData(turn_id="0"), None), durable=True)
        # No drain, no sync: the writer fsyncs it by itself, without waiting.
        await asyncio.wait_for(fsynced.wait(), 10)
    finally:
        await writer.close()
