"""SVG snapshots of loopdeck's own fan-out: three sub-agents started in one reply,
replayed to the end at 120x40 and 80x24 (collapsed under their ``task`` cards), and
with the turn opened (each run's prompt, turns and ``grep``).

Update after an intended visual change with
``pytest tests/widgets/test_snapshots_fanout.py --snapshot-update`` and look at the pictures.
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
LOG = FIXTURES / "loopdeck-fanout" / "events.jsonl"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))


def _open_first_turn() -> Callable[[Pilot[Any]], Awaitable[None]]:
    settle = keys_then_settle()

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        digest = min(pilot.app.screen.query(TurnDigest), key=lambda d: d.block.number)
        digest.focus()
        await pilot.press("enter")
        digest.scroll_visible(animate=False, top=True)
        await pilot.pause()
        runs = [tool for tool in digest.block.tools if tool.subagent is not None]
        assert len(runs) == 3

    return run_before


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_three_sub_agents_drawn_collapsed_under_their_task_cards(
    snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    screen = ReplayScreen(LOG, speed=0.0)
    assert snap_compare(ViewerApp(screen), terminal_size=size, run_before=keys_then_settle())


def test_the_fan_out_turn_opened(snap_compare: SnapCompare) -> None:
    screen = ReplayScreen(LOG, speed=0.0)
    assert snap_compare(ViewerApp(screen), terminal_size=(120, 40), run_before=_open_first_turn())
