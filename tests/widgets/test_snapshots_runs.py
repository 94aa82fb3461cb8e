"""SVG snapshots of the board of runs (``loopdeck runs``) and of four runs side by side.

The runs are logs with fixed timestamps (tests/support/board_logs.py); the live ones
have their writer's lock held by this process; the board's clock is pinned. The
side-by-side view shows runs that have ended (a live run's spinner would move).

Update after an intended visual change with
``pytest tests/widgets/test_snapshots_runs.py --snapshot-update`` and look at the pictures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from agent.log.runs import COPILOT, LOOPDECK, RunBoard
from app.runs import RunsApp, RunsScreen
from app.runs_grid import GridScreen, WatchPane
from tests.support.board_logs import NOW, write_board

SnapCompare = Callable[..., bool]


@pytest.fixture
def board(tmp_path: Path) -> Iterator[RunBoard]:
    roots = (tmp_path / "loopdeck" / "session-state", tmp_path / "copilot" / "session-state")
    locks = write_board(*roots)
    try:
        yield RunBoard([(roots[0], LOOPDECK), (roots[1], COPILOT)], recent=1e12)
    finally:
        for lock in locks:
            lock.release()


def _app(board: RunBoard) -> RunsApp:
    screen = RunsScreen(board, notify="off", clock=NOW.timestamp, poll_seconds=3600)
    return RunsApp(screen)


async def _settle(pilot: Pilot[object]) -> None:
    await pilot.pause()
    await pilot.pause()


def test_board_120x40(snap_compare: SnapCompare, board: RunBoard) -> None:
    assert snap_compare(_app(board), terminal_size=(120, 40), run_before=_settle)


def test_board_80x24(snap_compare: SnapCompare, board: RunBoard) -> None:
    assert snap_compare(_app(board), terminal_size=(80, 24), run_before=_settle)


def test_four_runs_side_by_side(snap_compare: SnapCompare, board: RunBoard) -> None:
    """Four ended runs marked on the board (space), then Enter: a 2×2 grid."""
    app = _app(board)

    async def open_grid(pilot: Pilot[object]) -> None:
        await pilot.pause()
        await pilot.press("down", "space", "space", "down", "down", "space", "space")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, GridScreen)
        loopdeck = [p for p in app.screen.query(WatchPane) if "copilot" not in str(p.path)]
        assert len(loopdeck) == 3 and not any(pane.writer_alive for pane in loopdeck)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(140, 44), run_before=open_grid)
