"""A turn view stays closable while its text is being written.

Its flushes wait for mounts. A widget mounted once the app has begun to exit never
starts, so such a mount never completes: awaited in the view's message pump, it kept
the view, and with it the app's exit, waiting forever (seen as a replay test hanging
on a loaded machine). The flush runs in a worker instead, cancelled with its view.
"""

from __future__ import annotations

import asyncio

import pytest
from textual.widget import Widget

import widgets.turn_view as turn_view
from tests.support.pilot import wait_for
from tests.support.streams import Stream
from tests.support.timeline_app import FakeTimelineApp
from widgets.timeline import Timeline
from widgets.turn_view import TurnView


async def test_a_flush_waiting_for_a_mount_does_not_block_closing_the_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered = asyncio.Event()
    never = asyncio.Event()

    async def fake_until_mounted(parent: Widget, markdown: Widget) -> None:
        # A mount that never completes, as for a widget mounted while the app exits.
        entered.set()
        await never.wait()

    monkeypatch.setattr(turn_view, "_until_mounted", fake_until_mounted)
    monkeypatch.setattr(turn_view, "FLUSH_SECONDS", 0.01)
    stream = Stream()
    stream.start()
    stream.user("hi")
    stream.turn("t1", "Streaming a reply.", end=False)
    app = FakeTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        for event in stream.events:
            timeline.apply(event)
        try:
            await wait_for(pilot, entered.is_set, "a flush waiting for the Markdown's mount")
            view = app.query_one(TurnView)
            # Removing the view needs its message pump: it must not be stuck in the flush.
            await asyncio.wait_for(view.remove(), 5)
            assert not view.is_attached
        finally:
            never.set()  # a stuck pump would otherwise hang the app's exit, and the test
