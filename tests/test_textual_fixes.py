"""The fixes for Textual's render caches (app/textual_fixes.py)."""

from __future__ import annotations

import gc
import weakref

from textual._styles_cache import StylesCache
from textual.app import App, ComposeResult
from textual.color import Color
from textual.containers import VerticalScroll
from textual.style import Style
from textual.widgets import Static

from agent.blocks import TurnBlock
from app import textual_fixes
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
