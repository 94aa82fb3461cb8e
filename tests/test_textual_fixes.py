"""The fix for Textual's render-cache leak (app/textual_fixes.py)."""

from __future__ import annotations

import gc
import weakref

from textual._styles_cache import StylesCache
from textual.color import Color
from textual.style import Style

from app import textual_fixes


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
