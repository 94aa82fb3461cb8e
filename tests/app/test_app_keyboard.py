"""The timeline from the keyboard, and what "load earlier" brings back where.

Pilot tests of the real app over scripted sessions: Tab to the timeline shows that it
has focus, Up/Down (j/k) walk its cards, Enter expands one; Ctrl+L mounts older
blocks above the newer ones and below the welcome banner.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from textual.dom import DOMNode
from textual.pilot import Pilot

import widgets.timeline as timeline_module
from tests.support.app_harness import (
    FakeGateTool,
    Harness,
    send,
    started,
    wait_idle,
)
from tests.support.app_harness import workspace as workspace  # the fixture
from tests.support.pilot import wait_for
from widgets.timeline import LoadEarlier, Timeline
from widgets.tool_card import ToolCard
from widgets.turn_digest import TurnDigest

SIZE = (100, 36)


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


# --- keyboard focus ----------------------------------------------------------------------


async def test_tab_to_the_timeline_restyles_only_the_timeline(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual restyles a focused widget with all its descendants; the timeline holds
    hundreds of them, and only its own :focus rule changes."""
    h = Harness([with_tool(i) for i in range(4)] + [answer(4)], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await ask(pilot, h, 1)
        timeline = h.app.timeline
        inside = list(timeline.walk_children())
        assert len(inside) > 10
        restyled: list[object] = []
        update_nodes = h.app.stylesheet.update_nodes

        def spy(nodes: Iterable[DOMNode], animate: bool = False) -> None:
            nodes = list(nodes)
            restyled.extend(nodes)
            update_nodes(nodes, animate=animate)

        monkeypatch.setattr(h.app.stylesheet, "update_nodes", spy)
        await pilot.press("tab")
        await pilot.pause()
        assert h.app.focused is timeline
        assert timeline in restyled
        assert not [node for node in restyled if node in inside]
        # And the focus shows: a bar down the timeline's left edge, the keys in the hint.
        assert timeline.styles.outline_left[0] == "thick"
        assert "move between cards" in str(h.app.hint.content)
        await pilot.press("tab")
        await pilot.pause()
        assert h.app.focused is h.app.prompt
        assert timeline.styles.outline_left[0] == ""
        assert "Enter send" in str(h.app.hint.content)


async def test_cards_are_walked_and_opened_from_the_keyboard(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline_module, "LIVE_TURNS", 2)  # a live card and a digest
    h = Harness([with_tool(1), with_tool(2), answer(3)], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await ask(pilot, h, 1)
        (digest,) = h.app.query(TurnDigest)
        (card,) = h.app.query(ToolCard)
        assert digest.block.number == 1 and card.block.name == "grep"

        await pilot.press("tab")
        assert h.app.focused is h.app.timeline
        await pilot.press("k")  # from the timeline, up: the newest card in view
        assert h.app.focused is card
        await pilot.press("enter")
        assert card.expanded
        await pilot.press("up")
        assert h.app.focused is digest
        await pilot.press("enter")
        assert digest.expanded == {tool.tool_call_id for tool in digest.block.tools}
        await pilot.press("j")
        assert h.app.focused is card
        await pilot.press("down")  # the last card: focus stays
        assert h.app.focused is card
        await pilot.press("enter")
        assert not card.expanded
        # Tab leaves the timeline for the prompt, not for the next card.
        await pilot.press("tab")
        assert h.app.focused is h.app.prompt


async def test_down_from_the_timeline_focuses_the_first_card_in_view(workspace: Path) -> None:
    h = Harness([with_tool(1), with_tool(2), answer(3)], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await ask(pilot, h, 1)
        first, second = h.app.query(TurnDigest)
        await pilot.press("tab", "j")
        assert h.app.focused is first
        await pilot.press("j")
        assert h.app.focused is second


async def test_a_focused_card_keeps_the_focus_when_its_turn_becomes_history(
    workspace: Path,
) -> None:
    gate = FakeGateTool()
    h = Harness(
        [{"text": "Waiting.", "tool_calls": [{"name": "gate", "arguments": {}}]}, answer(2)],
        workspace,
        registry_factory=gate.registry,
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "go")
        await wait_for(pilot, lambda: bool(h.app.query(ToolCard)), "the gate card")
        await pilot.press("tab", "k")
        assert isinstance(h.app.focused, ToolCard)
        gate.opened.set()
        await wait_idle(pilot, h)
        await wait_for(pilot, lambda: bool(h.app.query(TurnDigest)), "turn 1 as history")
        await pilot.pause()
        assert h.app.focused is h.app.query_one(TurnDigest)
