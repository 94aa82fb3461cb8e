"""The app's memory upkeep, timed so that no key waits for it.

The collector policy (:mod:`app.gc_policy`) keeps long pauses out of streaming; what
it puts off is done here, when the user will not notice: the heap trim once the
session rests, and a due thaw (the collector's walk of the whole heap, the longest
pause) once the session rests and no key was pressed for a while. Every key, click
and paste is noted, so the quiet is counted from the last one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App

from app.gc_policy import note_input, note_rest, thaw_if_due, thaw_wait, trim_heap


class IdleUpkeep:
    """Runs the upkeep on ``app``'s loop; ``resting`` says whether the session still rests."""

    def __init__(self, app: App[Any], resting: Callable[[], bool]) -> None:
        self._app = app
        self._resting = resting

    def on_input(self) -> None:
        """A key, click or paste: the quiet a thaw waits for starts over."""
        note_input()

    def on_rest(self) -> None:
        """The session came to rest (``session.idle``): trim, and thaw once it is quiet."""
        note_rest()
        self._app.call_after_refresh(self._thaw_when_quiet)
        self._app.call_after_refresh(trim_heap)

    def _thaw_when_quiet(self) -> None:
        """A due thaw runs once the session rests and no key was pressed for a while:
        a key pressed during its walk would wait for it."""
        wait = thaw_wait()
        if wait is None or not self._resting():
            return  # nothing due, or the session went on (its next rest tries again)
        if wait > 0:
            self._app.set_timer(wait, self._thaw_when_quiet)
        else:
            thaw_if_due()
