"""Garbage-collector settings for the interactive apps.

Textual keeps render caches (strips, segments, per-widget caches) that are replaced
all the time while a session streams in. They survive the young generations and then
die, so CPython's default policy runs a full collection every second or so of busy
UI, and on a small machine each one stops the event loop for 200–600 ms (measured
by ``benchmarks/tui.py``). The young generations stay as they are: their
collections cost well under a millisecond.

A long session adds its own weight: every block of the transcript, every event in
the model's history lives for the whole session, and a full collection walks all of
them — its pause grows with the session (95 → 150 ms over 10,000 tool calls). So
what survives a full collection is frozen (moved out of the collector's sight):
the next full collection walks only what arrived since. Frozen garbage in reference
cycles (an unmounted widget, say) would never be freed, so whenever the frozen
heap has doubled since the collector last saw everything, it is thawed and the next
full collection walks it all once — a long pause, but one per doubling.
"""

from __future__ import annotations

import gc
from typing import Any

FULL_COLLECTION_EVERY = 30  # young collections between full ones (CPython: 10)


class FreezeSurvivors:
    """A ``gc.callbacks`` hook: freeze the survivors of each full collection, and
    thaw everything once the frozen heap has doubled since the last full walk."""

    def __init__(self) -> None:
        self.walked = gc.get_freeze_count()  # frozen objects when all were last walked
        self.thawed = False  # the next full collection walks everything
        self.full_walks = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        if self.thawed:
            self.thawed = False
            self.full_walks += 1
            gc.freeze()
            self.walked = gc.get_freeze_count()
        elif gc.get_freeze_count() > 2 * max(self.walked, 1):
            gc.unfreeze()
            self.thawed = True
        else:
            gc.freeze()

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


_applied = False
_paused = False  # collection is off while the app starts (see pause_until_up)


def pause_until_up() -> None:
    """No collection while the app starts: what start-up allocates (modules, styles)
    is frozen once the app is up (:func:`tune_for_interactive`), so walking it before
    is wasted — a full collection in the middle of the imports cost 50–90 ms before
    the first frame. Call :func:`resume_collection` if the app does not come up."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collection() -> None:
    global _paused
    if _paused:
        _paused = False
        gc.enable()


def tune_for_interactive() -> None:
    """Freeze what start-up allocated (imports, styles: never garbage), make full
    collections rarer and freeze their survivors. Idempotent; call it once the app
    is up."""
    global _applied
    if _applied:
        resume_collection()
        return
    _applied = True
    gc.freeze()
    resume_collection()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    FreezeSurvivors().install()
