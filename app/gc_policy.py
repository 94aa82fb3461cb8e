"""Garbage-collector settings for the interactive apps.

Textual keeps render caches (strips, segments, per-widget caches) that are replaced
all the time while a session streams in. They survive the young generations and then
die, so CPython's default policy runs a full collection every second or so of busy
UI, and on a small machine each one stops the event loop for 200–600 ms (measured
by ``benchmarks/tui.py``).

A long session adds its own weight: every block of the transcript, every event in
the model's history lives for the whole session, and a full collection walks all of
them — its pause grows with the session (95 → 150 ms over 10,000 tool calls). So
what survives a full collection is frozen (moved out of the collector's sight):
the next full collection walks only what arrived since. Frozen garbage in reference
cycles (an unmounted widget, say) would never be freed, so whenever the heap has
doubled since the collector last saw everything, it is thawed and the next
full collection walks it all once — a long pause, but one per doubling.

Two costs are kept out of every full collection's pause. The heap's size is read
from the allocator (``sys.getallocatedblocks``, a few microseconds) rather than by
counting the frozen objects (``gc.get_freeze_count`` walks them all, scattered
over the heap: at 1,500 tool calls, dropping it took full collections from 30–76 ms
to 13–41 ms, and it grew with the session). And a running turn's widgets, which live about one turn,
should die young: the middle generation is collected less often (every 40 young
collections rather than 10), so most of them are freed there instead of being
promoted, walked by a full collection, and often frozen while still alive. A full
collection then comes every second middle one (80 young collections; it was 300):
it walks only what was promoted since the last, a median 10 ms at 3,000 tool calls
against 20 ms every fourth and 120–220 ms with the earlier setting. Young
collections cost well under a millisecond, middle ones a few.

Frozen garbage should be rare: a removed widget is freed by reference counting
(app/textual_fixes.py cuts the cycles Textual leaves in it), and full collections
are run from the event loop between callbacks (:meth:`FreezeSurvivors.collect_full`),
not by the allocator in the middle of a frame, whose temporary cycles (Textual's
layout closures hold a set of every mounted widget) would be frozen and keep those
widgets from ever being freed without a thaw. After 200 tool calls, that took the
frozen garbage from ~53,000 objects to ~8,000 (benchmarks/README.md).

The thaw's walk of the whole heap is still the longest pause (0.7–1.4 s at 10,000
tool calls), so it waits for the session to rest: once the heap has doubled a thaw
is only *due*, and the app runs it when the session goes idle (:func:`thaw_if_due`),
when the user is reading rather than watching a stream — and only once no key was
pressed (nor the mouse clicked) for ``QUIET_BEFORE_THAW_S``: a key pressed during the
walk would wait for it, and someone who just typed is likely to type again. Only a
session that never rests and lets the heap grow fourfold thaws mid-stream, to bound
memory. And since frozen garbage is now rare, a thaw that freed little (under
``WORTH_A_THAW`` objects) doubles the growth the next one waits for: a long session
walks its whole heap a few times, not at every doubling.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import sys
import time
from typing import Any

MIDDLE_COLLECTION_EVERY = 40  # young collections between middle ones (CPython: 10)
FULL_COLLECTION_EVERY = 2  # middle collections between full ones (CPython: 10)
FULL_COLLECTION_BACKSTOP = 4 * FULL_COLLECTION_EVERY  # ...if the loop does not run one
THAW_DUE_AT = 2  # heap growth since the last full walk at which a thaw is due (when idle)
THAW_NOW_AT = 4  # ...and at which it is done mid-stream, not waiting for idle
WORTH_A_THAW = 20_000  # objects a thaw's walk must free not to put off the next one
MAX_BACKOFF = 64
QUIET_BEFORE_THAW_S = 5.0  # no input for this long before an idle thaw walks the heap


class FreezeSurvivors:
    """A ``gc.callbacks`` hook: freeze the survivors of each full collection; once the
    heap has doubled since the last full walk a thaw is due (:meth:`thaw_if_due`), and
    at fourfold everything is thawed at once."""

    def __init__(self) -> None:
        self.walked = sys.getallocatedblocks()  # the heap when all of it was last walked
        self.thawed = False  # the next full collection walks everything
        self.thaw_due = False  # the heap doubled: walk it all when the session rests
        self.full_walks = 0
        self.from_loop = False  # full collections run from the event loop, when it runs
        self.middle_collections = 0
        self.full_scheduled = False
        self.backoff = 1  # growth factor on the thresholds after thaws that freed little
        self.last_input = -QUIET_BEFORE_THAW_S  # time.monotonic() of the last key/click

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop":
            return
        if info.get("generation") == 1:
            self.middle_collections += 1
            if self.middle_collections >= FULL_COLLECTION_EVERY:
                self._schedule_full()
            return
        if info.get("generation") != 2:
            return
        self.middle_collections = 0
        self.full_scheduled = False
        if self.thawed:
            self.thawed = False
            self.thaw_due = False
            self.full_walks += 1
            # A walk that freed next to nothing is not worth its pause as often: the
            # next waits for twice the growth (and the one after that for four times).
            if info.get("collected", 0) < WORTH_A_THAW:
                self.backoff = min(self.backoff * 2, MAX_BACKOFF)
            else:
                self.backoff = 1
            gc.freeze()
            self.walked = sys.getallocatedblocks()
            return
        heap, walked = sys.getallocatedblocks(), max(self.walked, 1) * self.backoff
        if heap > THAW_NOW_AT * walked:
            gc.unfreeze()
            self.thawed = True
        else:
            self.thaw_due = self.thaw_due or heap > THAW_DUE_AT * walked
            gc.freeze()

    def _schedule_full(self) -> None:
        if not self.from_loop or self.full_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()  # none in another thread: wait for the next
        except RuntimeError:
            return
        self.full_scheduled = True
        loop.call_soon(self.collect_full)

    def collect_full(self) -> None:
        """A full collection from the event loop, between callbacks: what is alive
        then is what the session keeps. Left to the allocator, a full collection
        comes in the middle of a frame, and freezes that frame's temporary cycles
        (Textual's layout closures hold a set of every mounted widget) — garbage a
        moment later, which then keeps every widget it holds out of reach of
        reference counting until a thaw."""
        if self.full_scheduled:
            gc.collect()

    def note_input(self, now: float | None = None) -> None:
        """A key or a click: the user is there, no long walk for a while."""
        self.last_input = time.monotonic() if now is None else now

    def quiet_left(self, now: float | None = None) -> float:
        """Seconds until input has been quiet for ``QUIET_BEFORE_THAW_S`` (0: it has)."""
        now = time.monotonic() if now is None else now
        return max(0.0, self.last_input + QUIET_BEFORE_THAW_S - now)

    def thaw_if_due(self, now: float | None = None) -> bool:
        """If the heap has doubled since the last full walk and nobody has typed or
        clicked for ``QUIET_BEFORE_THAW_S``, walk all of it now (one long pause: call
        it when nobody is watching). Whether it did."""
        if not self.thaw_due or self not in gc.callbacks or self.quiet_left(now) > 0:
            return False
        gc.unfreeze()
        self.thawed = True
        gc.collect()  # the hook above freezes the survivors again
        return True

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


_applied = False
_hook: FreezeSurvivors | None = None  # the app's, once tune_for_interactive ran
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
    """Freeze what start-up allocated (imports, styles: never garbage), set the
    thresholds above and freeze the survivors of full collections. Idempotent; call
    it once the app is up."""
    global _applied
    if _applied:
        resume_collection()
        return
    _applied = True
    gc.freeze()
    resume_collection()
    global _hook
    _hook = FreezeSurvivors()
    _hook.from_loop = True
    young, _, _ = gc.get_threshold()
    # Full collections run from the event loop (FreezeSurvivors.collect_full); the
    # allocator's own come only if the loop does not get to it (not running, busy).
    gc.set_threshold(young, MIDDLE_COLLECTION_EVERY, FULL_COLLECTION_BACKSTOP)
    _hook.install()


def thaw_if_due() -> bool:
    """The app's session rests: run a due thaw now rather than mid-stream (if input
    has been quiet long enough: see :func:`thaw_wait`)."""
    return _hook is not None and _hook.thaw_if_due()


def thaw_wait() -> float | None:
    """Seconds to wait before a due thaw may run (0: now); None if none is due."""
    if _hook is None or not _hook.thaw_due:
        return None
    return _hook.quiet_left()


def note_input() -> None:
    """A key or a click reached the app: a due thaw waits until input is quiet."""
    if _hook is not None:
        _hook.note_input()


def note_rest() -> None:
    """The session came to rest: the moment its user is most likely to answer it, so
    the quiet a due thaw waits for counts from here too (after a long autopilot run
    nobody typed during, the walk came just as the user started to)."""
    if _hook is not None:
        _hook.note_input()


_malloc_trim: Any = None  # glibc's malloc_trim, once looked up (False: not there)


def trim_heap() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``).

    Objects over 512 bytes (long strings, big dicts and lists) come from the C heap,
    and a stream frees them among long-lived ones: the pages stay with the process.
    After 2,000 tool calls that was ~20 MB of the RSS (benchmarks/README.md). A few
    milliseconds: called when the session rests. Whether it ran."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            # The process's own symbols (not find_library, which runs ldconfig):
            # glibc has malloc_trim, musl has not.
            _malloc_trim = getattr(ctypes.CDLL(None), "malloc_trim", False)
    if not _malloc_trim:
        return False
    _malloc_trim(0)
    return True
