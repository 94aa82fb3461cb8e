"""``session.eventLog.*`` through the unmodified Copilot SDK: pages of a session's
durable events, forward and backward, filtered, and a read that waits at the tail."""

from __future__ import annotations

import asyncio

import pytest

copilot = pytest.importorskip("copilot")

from copilot.generated.rpc import (  # noqa: E402
    EventLogReadRequest,
    EventsCursorStatus,
    EventsReadDirection,
    NameSetRequest,
    RegisterEventInterestParams,
    ReleaseEventInterestParams,
)

from tests.support.sdk_runtime import Runtime, new_session, shared, within  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["shared"]  # the module's runtime, started once


async def test_pages_forward_and_backward_cover_the_durable_events(shared: Runtime) -> None:
    session = await new_session(shared, [{"text": "one"}, {"text": "two"}])
    log = session.rpc.event_log
    await within(session.send_and_wait("first", timeout=30))
    await within(session.send_and_wait("second", timeout=30))

    forward: list[str] = []
    cursor = None
    while True:
        page = await within(log.read(EventLogReadRequest(cursor=cursor, max=3)))
        assert page.cursor_status == EventsCursorStatus.OK
        forward += [e.id for e in page.events]
        cursor = page.cursor
        if not page.has_more:
            break
    types = [e.type.value for e in (await within(log.read(EventLogReadRequest(max=1000)))).events]
    assert types[0] == "session.start" and types.count("assistant.turn_end") == 2
    assert not any(t.endswith("_delta") for t in types)  # ephemeral: not kept
    assert len(forward) == len(set(forward)) == len(types)

    backward: list[str] = []
    cursor = None
    while True:
        page = await within(
            log.read(
                EventLogReadRequest(cursor=cursor, max=4, direction=EventsReadDirection.BACKWARD)
            )
        )
        backward = [e.id for e in page.events] + backward
        cursor = page.cursor
        if not page.has_more:
            break
    assert backward == forward

    users = await within(log.read(EventLogReadRequest(types=["user.message"])))
    assert [e.data.content for e in users.events] == ["first", "second"]
    await within(session.disconnect())


async def test_a_read_at_the_tail_waits_for_the_next_event(shared: Runtime) -> None:
    session = await new_session(shared, [{"text": "ok"}])
    log = session.rpc.event_log
    tail = await within(log.tail())
    empty = await within(log.read(EventLogReadRequest(cursor=tail.cursor, wait_ms=0)))
    assert empty.events == [] and empty.has_more is False
    waiting = asyncio.create_task(
        log.read(
            EventLogReadRequest(cursor=tail.cursor, wait_ms=20_000, types=["session.title_changed"])
        )
    )
    await within(session.rpc.name.set(NameSetRequest(name="Named")))
    page = await within(waiting)
    assert [e.data.title for e in page.events] == ["Named"]
    expired = await within(log.read(EventLogReadRequest(cursor="f:999999")))
    assert expired.cursor_status == EventsCursorStatus.EXPIRED

    handle = (
        await within(log.register_interest(RegisterEventInterestParams(event_type="session.idle")))
    ).handle
    for _ in range(2):
        released = await within(log.release_interest(ReleaseEventInterestParams(handle=handle)))
        assert released.success is True
    await within(session.disconnect())
