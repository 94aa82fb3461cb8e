"""Garbage-collector settings for the interactive apps.

Textual keeps render caches (strips, segments, per-widget caches) that are replaced
all the time while a session streams in. They survive the young generations and then
die, so CPython's default policy runs a full collection every second or so of busy
UI, and on a small machine each one stops the event loop for 200–600 ms (measured
by ``benchmarks/tui.py``). The young generations stay as they are: their
collections cost well under a millisecond.
"""

from __future__ import annotations

import gc

FULL_COLLECTION_EVERY = 30  # young collections between full ones (CPython: 10)

_applied = False


def tune_for_interactive() -> None:
    """Freeze what start-up allocated (imports, styles: never garbage) and make full
    collections rarer. Idempotent; call it once the app is up."""
    global _applied
    if _applied:
        return
    _applied = True
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
