"""The board's keys (Enter opens watch's timeline, Esc comes back, marked runs side by
side where the terminal is wide enough), its notifications, ``loopdeck runs`` on the
command line, and the board from the app (/runs, Ctrl+R)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.log.run_fold import DONE, FAILED, WAITING, RunRow
from agent.log.runs import COPILOT, LOOPDECK, RunBoard, RunView
from app.runs import RunsApp, RunsScreen
from app.runs_grid import GridScreen, WatchPane
from app.runs_notify import ChangeWatch, notify_mode, osc_kind, sequences
from app.viewer import ViewerApp, WatchScreen
from tests.support.app_harness import Harness, make_workspace, send, started
from tests.support.board_logs import NOW, START, LogBuilder, meta, sid, write_board
from tests.support.cli import run
from tests.support.pilot import wait_for
from widgets.run_board import board_title, terminal_title


@pytest.fixture
def board(tmp_path: Path) -> Iterator[RunBoard]:
    roots = (tmp_path / "loopdeck" / "session-state", tmp_path / "copilot" / "session-state")
    locks = write_board(*roots)
    try:
        yield RunBoard([(roots[0], LOOPDECK), (roots[1], COPILOT)], recent=1e12)
    finally:
        for lock in locks:
            lock.release()


def _app(board: RunBoard) -> tuple[RunsApp, RunsScreen]:
    screen = RunsScreen(board, notify="off", clock=NOW.timestamp, poll_seconds=3600)
    return RunsApp(screen), screen


async def test_enter_opens_the_run_as_watch_draws_it_and_escape_comes_back(
    board: RunBoard,
) -> None:
    app, screen = _app(board)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("down")
        chosen = screen.selected
        assert chosen is not None and chosen.state == FAILED
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, WatchScreen), "watch")
        assert isinstance(app.screen, WatchScreen) and app.screen.path == chosen.path
        # Its writer is gone (no lock holder): watch says so instead of "live".
        assert app.screen.ended
        assert "ended" in str(app.screen.bar.render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the board again")
        assert screen.selected is chosen


@pytest.mark.parametrize(("size", "panes"), [((140, 44), 4), ((120, 24), 2), ((90, 40), 0)])
async def test_marked_runs_side_by_side_where_they_fit(
    board: RunBoard, size: tuple[int, int], panes: int
) -> None:
    app, screen = _app(board)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press("space", "space", "space", "space", "space")  # a fifth: refused
        assert len(screen.marked) == 4
        await pilot.press("enter")
        await pilot.pause()
        if panes:
            assert isinstance(app.screen, GridScreen)
            assert len(app.screen.query(WatchPane)) == panes
        else:  # too narrow: the run under the cursor, alone
            assert isinstance(app.screen, WatchScreen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the board again")


def _view(sid: str, state: str) -> RunView:
    return RunView(
        RunRow(session_id=sid, first_prompt=f"task {sid}"), state, LOOPDECK, Path(sid), True
    )


def test_notices_for_a_run_that_starts_waiting_or_ends() -> None:
    watch = ChangeWatch()
    assert watch.notices([_view("a", WAITING), _view("b", "thinking")]) == []  # on opening
    assert watch.notices([_view("a", WAITING), _view("b", "thinking")]) == []
    told = watch.notices([_view("a", WAITING), _view("b", DONE), _view("c", WAITING)])
    assert [(n.session_id, n.title) for n in told] == [
        ("b", "loopdeck: run done"),
        ("c", "loopdeck: waiting for approval"),
    ]


def test_the_sequences_each_terminal_gets() -> None:
    assert sequences("bell", "9", "t", "b") == "\a"
    assert sequences("off", "9", "t", "b") == ""
    assert sequences("auto", None, "t", "b") == "\a"
    assert sequences("auto", "9", "run done", "fix it") == "\a\x1b]9;run done: fix it\x07"
    assert sequences("desktop", "777", "a;b", "x\x1by") == "\x1b]777;notify;a,b;x y\x07"
    assert osc_kind({"TERM_PROGRAM": "iTerm.app"}) == "9"
    assert osc_kind({"TERM_PROGRAM": "WezTerm"}) == "777"
    assert osc_kind({"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/x"}) is None
    assert osc_kind({"TERM": "xterm-256color"}) is None


def test_notify_from_the_flag_then_the_config(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert notify_mode(None, env) == "auto"
    (tmp_path / "loopdeck").mkdir()
    (tmp_path / "loopdeck" / "config.toml").write_text('[runs]\nnotify = "bell"\n')
    assert notify_mode(None, env) == "bell"
    assert notify_mode("off", env) == "off"
    (tmp_path / "loopdeck" / "config.toml").write_text('[runs]\nnotify = "loud"\n')
    assert notify_mode(None, env) == "auto"  # a bad value is ignored, not fatal


def test_runs_needs_a_terminal_and_checks_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "runs")
    assert code == 2 and "loopdeck runs" in err and "terminal" in err
    code, _, err = run(capsys, "runs", "--since", "-1")
    assert code == 2 and "--since" in err
    code, _, err = run(capsys, "runs", "--notify", "loud")
    assert code == 2 and "invalid choice" in err


async def test_the_app_opens_the_board_with_ctrl_r_and_runs(tmp_path: Path) -> None:
    h = Harness([{"text": "hi"}], make_workspace(tmp_path))
    async with h.app.run_test(size=(120, 36)) as pilot:
        await started(pilot, h)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(h.app.screen, RunsScreen), "the board")
        await pilot.press("q")  # back to the session, not out of the app
        await wait_for(pilot, lambda: not isinstance(h.app.screen, RunsScreen), "the session")
        await send(pilot, h, "/runs")
        await wait_for(pilot, lambda: isinstance(h.app.screen, RunsScreen), "the board again")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(h.app.screen, RunsScreen), "the session")
        assert h.app.is_running


def test_the_window_title_counts_what_waits() -> None:
    views = [_view("a", WAITING), _view("b", "running a tool"), _view("c", DONE)]
    assert terminal_title(views) == "⚠ 1 waiting · 1 running · loopdeck runs"
    assert terminal_title(views[1:]) == "1 running · loopdeck runs"


def test_the_boards_line_counts_one_run_as_one() -> None:
    assert board_title([_view("a", DONE)]) == "0 running · 1 run"
    assert board_title([_view("a", DONE), _view("b", DONE)]) == "0 running · 2 runs"


async def test_watch_marks_a_run_whose_writer_was_killed(tmp_path: Path) -> None:
    """A real process holds the run's lock, then dies by SIGKILL: watch stops calling
    it live and draws what it left open as interrupted, as replay does."""
    b = LogBuilder(sid(3), START).start("/w", "m").prompt("migrate")
    log = b.turn(1, "Migrating.", "bash", {"command": "make migrate"}).write(
        tmp_path / sid(3), meta()
    )
    code = (
        "import sys; from agent.log.lock import SessionLock; from pathlib import Path;"
        f"SessionLock.acquire(Path({str(log.parent)!r}), 'x'); print('held', flush=True);"
        "sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        screen = WatchScreen(log)
        async with ViewerApp(screen).run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert not screen.ended and "live" in str(screen.bar.render())
            holder.kill()
            holder.wait()
            await wait_for(pilot, lambda: screen.ended, "the watch to see the writer gone")
            assert "ended" in str(screen.bar.render())
            tool = screen.timeline.transcript.get_tool("call-1")
            assert tool is not None and tool.status == "interrupted"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
