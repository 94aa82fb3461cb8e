"""Waiting until a freshly loaded timeline is on screen, before starting other work."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widget import Widget

FRAMES = 5  # frames given at most: laying out and painting new blocks takes one or two


async def until_drawn(screen: Screen[Any], widget: Widget) -> None:
    """Until ``widget`` is laid out and painted (call it from another task than the
    screen's). Heavy work started before would take turns with drawing it: a thread
    holds the GIL as long as the event loop does."""
    for _ in range(FRAMES):
        await screen.wait_for_refresh()
        if widget.size.height:
            return
