"""``session.eventLog.read``'s wait at the tail (app/server/event_log.py), in-process:
one bound for the whole request, also while events of other types keep arriving."""

from __future__ import annotations

import asyncio

from agent.events.schema import Event, SessionInfoData
from app.server.event_log import EventLog


def note() -> Event:
    return Event.new(SessionInfoData(info_type="note", message="busy"), None)


async def test_a_filtered_read_ends_while_other_events_keep_arriving() -> None:
    log = EventLog([note()])
    stop = asyncio.Event()

    async def busy_session() -> None:  # a note every few milliseconds, never a shutdown
        while not stop.is_set():
            log.events.append(note())
            log.appended()
            await asyncio.sleep(0.005)

    feeder = asyncio.create_task(busy_session())
    try:
        read = log.read({"cursor": "f:1", "types": ["session.shutdown"], "waitMs": 200})
        # Each note used to restart the wait: the read never ended while the session was busy.
        page = await asyncio.wait_for(read, timeout=30)
    finally:
        stop.set()
        await feeder
    assert page["events"] == []
    assert int(page["cursor"].removeprefix("f:")) > 1  # past the notes it skipped


async def test_a_read_that_timed_out_leaves_no_waiter_behind() -> None:
    log = EventLog([note()])
    page = await log.read({"cursor": "f:1", "waitMs": 10})
    assert page["events"] == []
    assert log._waiters == []
