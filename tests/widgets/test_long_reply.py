"""A long streamed reply: its head is frozen, only the tail stays a live Markdown widget.

Drives the real app with a reply of ~7,000 characters streamed piece by piece, and
checks that nothing is lost or doubled by the cuts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from rich.markdown import Markdown as RichMarkdown
from textual.widgets import Markdown, Static

from agent.models.base import ModelReply, RetryPolicy, StreamItem, TextDelta
from tests.support.app_harness import (
    SIZE,
    Harness,
    send,
    settled,
    started,
    wait_idle,
)
from tests.support.app_harness import workspace as workspace  # the fixture
from tests.support.pilot import wait_for
from widgets.turn_view import FREEZE_AT, TurnView

PIECE = 400  # characters streamed at a time: a freeze every few pieces


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


class FakeSteppedModel:
    """Streams a reply one piece at a time, each piece when the test releases it: the
    test sees the view after every piece, however fast or slow the machine is."""

    name = "scripted:stepped"
    retry_policy = RetryPolicy(max_retries=0)

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.released = asyncio.Queue[None]()

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        for piece in self.pieces:
            await self.released.get()
            yield TextDelta(piece)
        yield ModelReply(text="".join(self.pieces), finish_reason="stop")


def shown_text(view: TurnView) -> str:
    """The reply as the view's widgets hold it: frozen parts, then the live tail."""
    parts = []
    for body in view.query(".turn-text"):
        parts.append(body.source if isinstance(body, Markdown) else frozen_source(body))  # type: ignore[arg-type]
    return "".join(parts)


async def test_a_long_reply_keeps_only_its_tail_live(workspace: Path) -> None:
    text = long_reply()
    assert len(text) > 2 * FREEZE_AT
    pieces = [text[i : i + PIECE] for i in range(0, len(text), PIECE)]
    h = Harness([], workspace)
    h.model = model = FakeSteppedModel(pieces)  # type: ignore[assignment]
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "review it")
        live_sizes: list[int] = []
        released = ""
        for piece in pieces:
            # One piece out, then wait until the widgets show it (one flush each).
            model.released.put_nowait(None)
            released += piece
            await wait_for(
                pilot,
                lambda so_far=released: any(shown_text(v) == so_far for v in h.app.query(TurnView)),  # type: ignore[misc]
                f"the reply's first {len(released)} characters on screen",
            )
            for markdown in h.app.query(Markdown):
                live_sizes.append(len(markdown.source))
        await wait_idle(pilot, h)
        await settled(pilot)

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
        await settled(pilot)
        view = h.app.query_one(TurnView)
        *frozen, live = list(view.query(".turn-text"))
        assert frozen and isinstance(live, Markdown)
        assert "".join(frozen_source(b) for b in frozen) + live.source == text
        assert len(live.source) <= FREEZE_AT


async def test_a_turn_removed_mid_stream_ends_its_stream(workspace: Path) -> None:
    def stream_tasks() -> list[asyncio.Task[object]]:
        return [
            t
            for t in asyncio.all_tasks()
            if getattr(t.get_coro(), "__qualname__", "") == "MarkdownStream._run" and not t.done()
        ]

    text = long_reply()
    h = Harness([], workspace)
    # The reply stops after its first piece until the test ends it: still streaming
    # when its view goes, however slow the machine.
    h.model = model = FakeSteppedModel([text[:PIECE], text[PIECE:]])  # type: ignore[assignment]
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "review it")
        model.released.put_nowait(None)
        await wait_for(pilot, lambda: bool(stream_tasks()), "the reply to stream")
        await h.app.query_one(TurnView).remove()  # as a replay jump or a new session does
        await wait_for(pilot, lambda: not stream_tasks(), "the stream to end with its view")
        h.session.abort()
        await wait_idle(pilot, h)
