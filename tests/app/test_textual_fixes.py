"""The fixes for Textual's render caches (app/textual_fixes.py)."""

from __future__ import annotations

import gc
import sys
import weakref

from rich.segment import Segment
from textual._styles_cache import StylesCache
from textual.app import App, ComposeResult
from textual.color import Color
from textual.containers import VerticalScroll
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget
from textual.widgets import Static

from agent.transcript.blocks import TurnBlock
from app import textual_fixes
from tests.support.streams import Stream, ToolSpec
from tests.support.timeline_app import FakeDeferredTimelineApp
from widgets.timeline import Timeline
from widgets.turn_digest import TurnDigest


def test_a_styles_cache_is_not_kept_alive_by_its_colours() -> None:
    textual_fixes.install()
    cache = StylesCache()
    gone = weakref.ref(cache)
    base, background = Color(10, 20, 30), Color(200, 100, 50, 0.5)
    inner, outer = cache.get_inner_outer(base, background)
    # Same result as Textual's own method.
    assert inner == Style(background=base + background)
    assert outer == Style(background=base)
    del cache
    gc.collect()
    assert gone() is None  # Textual's lru_cache on the method kept it (and its lines)


def test_install_is_idempotent() -> None:
    textual_fixes.install()
    patched = StylesCache.get_inner_outer
    textual_fixes.install()
    assert StylesCache.get_inner_outer is patched


class FakeApp(App[None]):
    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="list")


async def test_a_removed_widget_drops_the_lines_it_rendered() -> None:
    textual_fixes.install()
    app = FakeApp()
    async with app.run_test(size=(40, 10)) as pilot:
        static = Static("one line\nand another")
        await app.query_one("#list", VerticalScroll).mount(static)
        await pilot.pause()
        assert static._styles_cache._cache  # drawn: its lines are cached
        await static.remove()
        await pilot.pause()
        assert not static._styles_cache._cache


async def test_a_removed_digest_drops_its_lines() -> None:
    block = TurnBlock(1, 1, "turn-1", model="m", status="done")
    app = FakeApp()
    async with app.run_test(size=(40, 10)) as pilot:
        digest = TurnDigest(block)
        await app.query_one("#list", VerticalScroll).mount(digest)
        await pilot.pause()
        assert digest._lines is not None
        await digest.remove()
        await pilot.pause()
        assert digest._lines is None


def add_turn(stream: Stream, timeline: Timeline, i: int) -> None:
    start = len(stream.events)
    stream.turn(
        f"t{i}",
        f"Reply **{i}**, with a list:\n\n- one\n- two",
        (ToolSpec(f"call-{i}", "grep", {"pattern": "x"}, lines=("a", "b")),),
    )
    for event in stream.events[start:]:
        timeline.apply(event)


async def test_removed_widgets_are_freed_without_a_full_collection() -> None:
    """Widgets frozen by the collector policy while mounted (app/gc_policy.py) must
    die by reference counting once removed: a live turn (header, Markdown and its
    blocks, a tool card) replaced by a digest, and digests unmounted past the
    timeline's bound. Else each waits for a walk of the whole heap."""
    textual_fixes.install()
    stream = Stream()
    stream.start()
    stream.user("hi")
    app = FakeDeferredTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.max_mounted = 4
        for i in range(3):
            add_turn(stream, timeline, i)
            await pilot.pause()
        mounted = [weakref.ref(w) for w in app.query("*")]
        kinds = {type(ref()).__name__ for ref in mounted}
        assert {"TurnView", "TurnDigest", "ToolCard", "Markdown", "TurnHeader"} <= kinds
        gc.collect()
        gc.freeze()  # as a full collection does with its survivors
        try:
            for i in range(3, 9):  # every widget above is replaced or unmounted
                add_turn(stream, timeline, i)
                await pilot.pause()
            await pilot.pause()
            still = {id(w) for w in app.query("*")}
            gc.collect(1)  # young and middle generations: the frozen heap is not walked
            leaked = [
                type(w).__name__
                for ref in mounted
                if (w := ref()) is not None and id(w) not in still and isinstance(w, Widget)
            ]
            assert not leaked
        finally:
            gc.unfreeze()


def test_a_full_width_line_is_not_a_reference_cycle() -> None:
    textual_fixes.install()
    gc.disable()
    try:
        line = Strip([Segment("0123456789")], 10)
        assert line.divide([10])[0] is line
        assert line.crop_extend(0, 10, None) is line
        # Only this function holds it: freed by reference counting, not by the collector.
        assert sys.getrefcount(line) == 2
    finally:
        gc.enable()
