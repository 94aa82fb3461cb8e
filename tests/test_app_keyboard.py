"""The timeline from the keyboard, and what "load earlier" brings back where.

Pilot tests of the real app over scripted sessions: Tab to the timeline shows that it
has focus, Up/Down (j/k) walk its cards, Enter expands one; Ctrl+L mounts older
blocks above the newer ones and below the welcome banner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widget import Widget

from tests.test_app_pilot import Harness, make_workspace, send, started, wait_for, wait_idle
from widgets.timeline import LoadEarlier, Timeline
from widgets.tool_card import ToolCard
from widgets.turn_digest import TurnDigest

SIZE = (100, 36)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def answer(i: int) -> dict[str, Any]:
    return {"text": f"Answer {i}."}


def with_tool(i: int) -> dict[str, Any]:
    return {
        "text": f"Looking {i}.",
        "tool_calls": [{"name": "grep", "arguments": {"pattern": "def handler_"}}],
    }


async def ask(pilot: Pilot[Any], h: Harness, count: int) -> None:
    """Send ``count`` messages, one after the other's idle."""
    for i in range(count):
        await send(pilot, h, f"question {i}")
        await wait_idle(pilot, h, idles=i + 1)


def shown_order(timeline: Timeline) -> list[str]:
    """The timeline's displayed children, named by what they are."""
    names = []
    for child in timeline.children:
        if not child.display:
            continue
        if child.has_class("welcome"):
            names.append("welcome")
        elif isinstance(child, LoadEarlier):
            names.append("load-earlier")
        elif child.has_class("user-message"):
            names.append("user")
        else:
            names.append("turn")
    return names


# --- load earlier ----------------------------------------------------------------------


async def test_load_earlier_keeps_the_welcome_banner_above_the_session(
    workspace: Path,
) -> None:
    h = Harness([answer(i) for i in range(4)], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        timeline = h.app.timeline
        timeline.max_mounted = 4  # two questions and their answers
        await ask(pilot, h, 4)
        assert shown_order(timeline) == ["welcome", "load-earlier"] + ["user", "turn"] * 2

        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: timeline.mounted_blocks == 8, "the earlier blocks")
        await pilot.pause()
        assert shown_order(timeline) == ["welcome"] + ["user", "turn"] * 4
        # In the session's order, too.
        users = [w for w in timeline.children if w.has_class("user-message")]
        assert [u.block.content for u in users] == [f"question {i}" for i in range(4)]  # type: ignore[attr-defined]
