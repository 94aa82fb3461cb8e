"""A long streamed reply: its head is frozen, only the tail stays a live Markdown widget.

Drives the real app with a scripted reply of ~7,000 characters streamed over a
second and a half, and checks that nothing is lost or doubled by the cuts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.markdown import Markdown as RichMarkdown
from textual.widgets import Markdown, Static

from tests.test_app_pilot import SIZE, Harness, make_workspace, send, started, wait_idle
from widgets.turn_view import FREEZE_AT, TurnView


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def long_reply(sections: int = 30) -> str:
    parts = ["# Review\n"]
    for i in range(sections):
        parts.append(f"## {i + 1}. Part {i + 1}\n")
        parts.append(f"Paragraph {i} says **something** about `module_{i}` at length. " * 3)
        parts.append("\n\n- first point\n- second point\n  - nested point\n")
        parts.append(f"\n```python\ndef f_{i}():\n\n    return {i}\n```\n")
    return "\n".join(parts)


def frozen_source(static: Static) -> str:
    content = static.content
    assert isinstance(content, RichMarkdown)
    return content.markup


async def test_a_long_reply_keeps_only_its_tail_live(workspace: Path) -> None:
    text = long_reply()
    assert len(text) > 2 * FREEZE_AT
    h = Harness([{"text": text, "delay_ms": 1500}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "review it")
        live_sizes: list[int] = []
        while not h.idles():
            for markdown in h.app.query(Markdown):
                live_sizes.append(len(markdown.source))
            await pilot.pause(0.05)
        await wait_idle(pilot, h)
        await pilot.pause(0.3)

        view = h.app.query_one(TurnView)
        bodies = list(view.query(".turn-text"))
        *frozen, live = bodies
        assert len(frozen) >= 2, "a reply this long is frozen more than once"
        assert all(type(b) is Static for b in frozen) and isinstance(live, Markdown)
        # Nothing lost, nothing doubled: the parts are the reply, in order.
        assert "".join(frozen_source(b) for b in frozen) + live.source == text
        # The live widget never held much more than FREEZE_AT characters.
        assert live_sizes and max(live_sizes) < FREEZE_AT + 1000
        # And what is on screen ends with the reply's end.
        assert "return 29" in live.source


async def test_a_long_reply_that_arrives_whole_is_frozen_too(workspace: Path) -> None:
    """No stream to freeze along the way (a fast model, a provider that does not
    stream): the final render freezes the head instead."""
    text = long_reply()
    h = Harness([{"text": text}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "review it")
        await wait_idle(pilot, h)
        await pilot.pause(0.3)
        view = h.app.query_one(TurnView)
        *frozen, live = list(view.query(".turn-text"))
        assert frozen and isinstance(live, Markdown)
        assert "".join(frozen_source(b) for b in frozen) + live.source == text
        assert len(live.source) <= FREEZE_AT


async def test_a_turn_removed_mid_stream_ends_its_stream(workspace: Path) -> None:
    import asyncio

    def stream_tasks() -> list[asyncio.Task[object]]:
        return [
            t
            for t in asyncio.all_tasks()
            if getattr(t.get_coro(), "__qualname__", "") == "MarkdownStream._run" and not t.done()
        ]

    h = Harness([{"text": long_reply(), "delay_ms": 3000}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "review it")
        for _ in range(100):
            if stream_tasks():
                break
            await pilot.pause(0.02)
        assert stream_tasks(), "the reply should be streaming"
        await h.app.query_one(TurnView).remove()  # as a replay jump or a new session does
        await pilot.pause(0.1)
        assert not stream_tasks()
        h.session.abort()
        await wait_idle(pilot, h)
