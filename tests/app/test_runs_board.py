"""The board (``loopdeck runs``) over six real runs: three that work, one that fails,
one killed with SIGKILL mid-command, and the app waiting on a permission prompt
(``-p`` never waits for a person: autopilot and headless runs are refused what the
rules leave open, so the run that waits is the app in a terminal). Each row is
checked against its log, read with the event parser, as the runs move; the test
moves only on what the logs hold, never on time."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.log.run_fold import DONE, FAILED, INTERRUPTED, THINKING, TOOL, WAITING
from agent.log.runs import LOOPDECK, RunBoard, RunView
from app.runs import RunsApp, RunsScreen
from tests.support.board_runs import (
    ASK_TURNS,
    FAIL_TURNS,
    HOLD_TURNS,
    WAIT,
    Runs,
    has_line,
    truth,
    until,
)
from tests.support.pilot import text_of

SIZE = (120, 40)


@pytest.fixture
def runs(tmp_path: Path, loopdeck_home: Path) -> Iterator[Runs]:
    fleet = Runs(home=loopdeck_home, root=tmp_path / "workspaces")
    try:
        yield fleet
    finally:
        fleet.close()


def _by_log(screen: RunsScreen) -> dict[Path, RunView]:
    return {view.path: view for view in screen.views}


def _check_against_log(view: RunView) -> None:
    """The row says what the log says."""
    told = truth(view.path)
    row = view.row
    assert row.turns == told.turns, view.path
    assert tuple(t.name for t in row.tools.values()) == told.open_tools, view.path
    assert len(row.permissions) == told.pending_permissions, view.path
    if view.state == FAILED:
        assert told.error
    if view.state == DONE:
        assert told.task_complete


async def test_the_board_follows_six_real_runs(runs: Runs, loopdeck_home: Path) -> None:
    board = RunBoard([(loopdeck_home / "session-state", LOOPDECK)])
    screen = RunsScreen(board, notify="bell", poll_seconds=0.1)
    app = RunsApp(screen)
    async with app.run_test(size=SIZE) as pilot:
        assert screen.views == []
        waiting = runs.interactive("waiting", "clean the build", ASK_TURNS)
        failing = runs.autopilot("failing", "deploy the site", FAIL_TURNS)
        killed = runs.autopilot("killed", "migrate the database", HOLD_TURNS)
        workers = [
            runs.autopilot(f"worker{i}", f"fix flaky test {i}", HOLD_TURNS) for i in (1, 2, 3)
        ]
        held = [killed, *workers]

        # Every run at its point: the held ones in their command, the app on its prompt.
        for run in held:
            await until(lambda r=run: has_line(runs.log_of(r), "tool.execution_start"), run.name)  # type: ignore[misc]
        await until(lambda: has_line(runs.log_of(waiting), "permission.requested"), "the prompt")
        await until(
            lambda: failing.process is not None and failing.process.poll() is not None,
            "the failure",
        )
        logs = {run.name: runs.log_of(run) for run in runs.runs.values()}

        def states() -> dict[str, str]:
            rows = _by_log(screen)
            return {name: rows[log].state for name, log in logs.items() if log in rows}

        expected = {"waiting": WAITING, "failing": FAILED}
        expected |= {run.name: TOOL for run in held}
        await until(lambda: states() == expected, f"the board to show {expected}: {states()}")
        await pilot.pause()
        first = screen.views[0]
        assert first.path == logs["waiting"] and first.state == WAITING
        assert screen.views[1].state == FAILED
        assert {v.state for v in screen.views[2:]} == {TOOL}
        for view in screen.views:
            _check_against_log(view)
        tool = screen.views[2].row.current_tool()
        assert tool is not None and tool.name == "bash"
        shown = text_of(screen.view)
        assert "⚠ 1 waiting for approval" in shown.splitlines()[0]
        assert shown.splitlines()[1].lstrip("▶ ").startswith("⚠ waiting for approval")

        # SIGKILL: nothing is written, the lock goes with the process.
        assert killed.process is not None
        os.kill(killed.process.pid, signal.SIGKILL)
        killed.process.wait()
        expected["killed"] = INTERRUPTED
        await until(lambda: states() == expected, f"the killed run interrupted: {states()}")
        assert screen.views[0].path == logs["waiting"]
        assert {v.state for v in screen.views[1:3]} == {FAILED, INTERRUPTED}
        for view in screen.views:
            _check_against_log(view)
        assert any(n.title == "loopdeck: run interrupted" for n in screen.told)

        # The workers finish one by one; each row follows its log.
        for worker in workers:
            worker.release()
            expected[worker.name] = DONE
            await until(lambda: states() == expected, f"{worker.name} done: {states()}")
            for view in screen.views:
                _check_against_log(view)
        assert [v.state for v in screen.views[-3:]] == [DONE] * 3
        assert screen.views[0].state == WAITING  # still first, still waiting
        assert sum(n.title == "loopdeck: run done" for n in screen.told) == 3
        assert screen.sent and all(text.startswith("\a") for text in screen.sent)
        assert not any(v.state == THINKING for v in screen.views)
    for run in workers:
        assert run.process is not None and run.process.wait(timeout=WAIT) == 0
