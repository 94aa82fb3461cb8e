"""SVG snapshots of a real Copilot session with sub-agents, replayed to its end at 120x40.

The ``task`` card of turn 3 ran a sub-agent: collapsed it shows the run's summary
and the start of its answer; opened (enter on the turn) the run's prompt and turn.
Update after an intended visual change with
``pytest tests/widgets/test_snapshots_subagents.py --snapshot-update`` and look at the pictures.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.viewer import ReplayScreen, ViewerApp
from tests.support.paths import FIXTURES
from tests.support.snapshot_support import keys_then_settle
from widgets.turn_digest import TurnDigest

SnapCompare = Callable[..., bool]
LOG = FIXTURES / "copilot-real" / "irrlicht-foreground-subagent" / "events.jsonl"
TERMINAL = (120, 40)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))


def _open_turn(number: int) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Replay to the end, then enter on turn ``number`` (opens its cards)."""
    settle = keys_then_settle()

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        (digest,) = [d for d in pilot.app.screen.query(TurnDigest) if d.block.number == number]
        digest.focus()
        await pilot.press("enter")
        digest.scroll_visible(animate=False, top=True)
        await pilot.pause()
        # The card of turn 3's task call is open: its sub-agent's run is drawn.
        (task,) = [tool for tool in digest.block.tools if tool.subagent is not None]
        assert digest.expanded == {task.tool_call_id}

    return run_before


def test_sub_agent_runs_collapsed_under_their_task_cards(snap_compare: SnapCompare) -> None:
    screen = ReplayScreen(LOG, speed=0.0)
    assert snap_compare(ViewerApp(screen), terminal_size=TERMINAL, run_before=keys_then_settle())


def test_a_sub_agent_run_expanded(snap_compare: SnapCompare) -> None:
    screen = ReplayScreen(LOG, speed=0.0)
    assert snap_compare(ViewerApp(screen), terminal_size=TERMINAL, run_before=_open_turn(3))
