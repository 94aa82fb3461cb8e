"""Input events stamped with the time the terminal delivered them.

Textual stamps each key and paste in its input thread, when it arrives; the app may
handle it much later on a loaded machine. These helpers send events with a chosen
arrival time, so tests of the arming guard (widgets.arming) do not depend on how fast
the loop runs.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.pilot import Pilot


async def press_at(pilot: Pilot[Any], key: str, at: float) -> None:
    """Deliver ``key`` as if the terminal had sent it at ``at`` (Textual's clock)."""
    char = key if len(key) == 1 else None
    await _deliver(pilot, events.Key(key, char), at)


async def paste_at(pilot: Pilot[Any], text: str, at: float) -> None:
    """Deliver a bracketed paste of ``text`` as if it had arrived at ``at``."""
    await _deliver(pilot, events.Paste(text), at)


async def _deliver(pilot: Pilot[Any], event: events.Event, at: float) -> None:
    event.time = at
    app = pilot.app
    event.set_sender(app)
    assert app._driver is not None
    app._driver.send_message(event)
    await pilot.pause()
