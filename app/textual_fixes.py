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

A removed widget should then be freed by reference counting, even after the
collector froze it (app/gc_policy.py) while it was mounted; otherwise it stays until a
thaw walks the whole heap, the longest pause of a long session. Three reference
cycles kept every removed widget for the collector: its CSS styles hold the widget
(``Styles.node``, a strong reference, unlike ``RenderStyles``), and so do the virtual
nodes that style its component classes; a ``Static`` holds its visual (also in the
layout cache), which holds the widget; and a finished worker keeps its task, whose
context holds the worker (``active_worker``) and so its widget; a cancelled or
failed one also keeps its error, whose traceback's frames hold it too. Each is cut
once the widget's message loop has ended (or the worker's task is done): Textual
reads ``node`` as "not mounted" when it is ``None``, and rebuilds a ``Static``'s
visual on demand. A full-width line was a cycle of its own (see
``_strips_do_not_cache_themselves``).
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
    _finished_workers_drop_their_task()
    _strips_do_not_cache_themselves()
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
    from textual.widgets import Static

    original = Widget._message_loop_exit

    async def message_loop_exit(self: Widget) -> None:
        # Component classes' styles come from virtual nodes, each in the same cycle.
        virtual = list(self._component_styles.values())
        await original(self)
        self._styles_cache.clear()
        # Cut the cycles through the widget (see the module's docstring).
        for styles in [self.styles, *virtual]:
            styles._base_styles.node = None
            styles._inline_styles.node = None
        self._layout_cache.clear()  # its visual holds the widget
        if isinstance(self, Static):
            self._Static__visual = None  # type: ignore[attr-defined]

    Widget._message_loop_exit = message_loop_exit  # type: ignore[method-assign]


def _finished_workers_drop_their_task() -> None:
    from textual.worker import Worker

    original = Worker._start

    def start(self: Worker[Any], app: Any, done_callback: Any = None) -> None:
        original(self, app, done_callback)
        task = self._task
        if task is not None:
            task.add_done_callback(lambda _: _drop_task(self))

    Worker._start = start  # type: ignore[method-assign]


def _drop_task(worker: Any) -> None:
    worker._task = None
    if worker._error is not None:  # its traceback's frames hold the worker
        worker._error.__traceback__ = None


def _strips_do_not_cache_themselves() -> None:
    """``Strip.divide`` and ``Strip.crop_extend`` cache their result on the strip, and
    that result is often the strip itself (a full-width line): each such line is a
    reference cycle, left to the collector — and frozen while on screen. That one
    result is returned uncached (it is the cheap case); the others stay cached, so
    the strips derived from a line stay the same objects, with their own caches."""
    from collections.abc import Iterable, Sequence

    from rich.style import Style as RichStyle
    from textual.strip import Strip

    divide = Strip.divide

    def divide_uncycled(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
        cuts = list(cuts)
        length = self.cell_length
        if [cut for cut in cuts if cut <= length] == [length]:
            return [self]
        return divide(self, cuts)

    def crop_extend_uncycled(self: Strip, start: int, end: int, style: RichStyle | None) -> Strip:
        key = (start, end, style)
        cached = self._crop_extend_cache.get(key)
        if cached is not None:
            return cached
        strip = self.extend_cell_length(end, style).crop(start, end)
        if strip is not self:
            self._crop_extend_cache[key] = strip
        return strip

    Strip.divide = divide_uncycled  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_uncycled  # type: ignore[method-assign]
