"""Fixes for the pinned Textual (8.2), installed when an app starts.

``StylesCache.get_inner_outer`` is an ``lru_cache`` on a method, so each key holds a
widget's ``StylesCache`` and, through it, every line that widget last rendered. The
cache keeps the last 1,024 of them alive, long after their widgets are gone. A long
session mounts and removes thousands of widgets: at 300 tool calls those dead caches
were two thirds of the heap (benchmarks/tui.py), and every full garbage collection
walked them. The result depends only on the two colours, so that is all the
replacement keys on.

A removed widget keeps the lines it last rendered (``Widget._styles_cache``: a
``Strip`` per line, each with its own small caches) until the cyclic collector frees
the widget. A long session removes a turn's widgets every turn, and they usually sit
frozen or in the oldest generation by then (app/gc_policy.py), so each dead widget's
lines cost every full collection that walks them. Textual drops the widget's other
render caches when its message loop ends; the lines are dropped there too.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

_installed = False


def install() -> None:
    """Idempotent; leaves Textual alone if the method is no longer a cached one."""
    global _installed
    if _installed:
        return
    from textual._styles_cache import StylesCache
    from textual.color import Color
    from textual.style import Style

    _installed = True
    _drop_lines_on_exit()
    if not hasattr(StylesCache.get_inner_outer, "cache_clear"):
        return  # a Textual that fixed it (or changed it): nothing to do

    @lru_cache(1024)
    def inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
        return Style(background=base_background + background), Style(background=base_background)

    def get_inner_outer(_: Any, base_background: Color, background: Color) -> tuple[Style, Style]:
        return inner_outer(base_background, background)

    StylesCache.get_inner_outer.cache_clear()
    StylesCache.get_inner_outer = get_inner_outer  # type: ignore[method-assign,assignment]


def _drop_lines_on_exit() -> None:
    from textual.widget import Widget

    original = Widget._message_loop_exit

    async def message_loop_exit(self: Widget) -> None:
        await original(self)
        self._styles_cache.clear()

    Widget._message_loop_exit = message_loop_exit  # type: ignore[method-assign]
