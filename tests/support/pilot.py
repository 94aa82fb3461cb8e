"""Driving the terminal app with Textual's Pilot: wait on a condition, read what a widget
draws, type text. Shared by every Pilot test, whatever harness builds its app."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget

WAIT = 5.0  # seconds any single wait may take before the test fails


async def wait_for(
    pilot: Pilot[Any], check: Callable[[], bool], what: str, *, timeout: float = WAIT
) -> None:
    """Let the app run until ``check()`` holds; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.01)


def text_of(widget: Widget) -> str:
    """What a widget draws: its own lines, or its children's for a container."""
    children = list(widget.children)
    if children:
        return "\n".join(text_of(child) for child in children if child.display)
    width, height = widget.outer_size
    if not width or not height:
        return ""
    lines = widget.render_lines(Region(0, 0, width, height))
    return "\n".join(line.text.strip() for line in lines).strip("\n")


def texts(app: App[Any], kind: type[Widget]) -> list[str]:
    """What each widget of ``kind`` draws, in order."""
    return [text_of(w) for w in app.query(kind)]


def notifications(app: App[Any]) -> list[str]:
    """The messages of the toasts the app shows."""
    return [n.message for n in app._notifications]


async def type_text(pilot: Pilot[Any], text: str) -> None:
    """Type ``text`` key by key, as a user would."""
    await pilot.press(*("space" if ch == " " else ch for ch in text))
