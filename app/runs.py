"""``loopdeck runs``: the board of every run on this machine, live.

One screen lists the runs (:mod:`widgets.run_board`), refreshed as their logs grow
(:class:`agent.log.runs.RunBoard` reads only what each log appended). Enter opens
the run under the cursor in the timeline ``watch`` draws; with runs marked (space),
Enter shows them side by side (:mod:`app.runs_grid`). A run that starts waiting for
approval, or ends, rings the terminal (:mod:`app.runs_notify`). Also pushed from
the app (``/runs``, Ctrl+R), where q goes back to the session.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from agent.log.places import copilot_home, loopdeck_home
from agent.log.runs import COPILOT, LOOPDECK, RECENT_SECONDS, RunBoard, RunView
from app.app_setup import set_up
from app.runs_notify import ChangeWatch, Notice, osc_kind, sequences
from widgets.run_board import board_text, board_title, terminal_title

STYLES = Path(__file__).resolve().parent.parent / "styles"
POLL_SECONDS = 0.25  # how often the logs are read (watch polls its one log every 0.2 s)
MAX_PANES = 4
GRID_MIN_WIDTH = 100  # columns below which marked runs open one at a time
GRID_MIN_HEIGHT = 30  # rows below which four runs are two, side by side


def machine_board(*, recent: float = RECENT_SECONDS, copilot: bool = True) -> RunBoard:
    """The board of this machine's runs: loopdeck's store, and Copilot CLI's."""
    roots = [(loopdeck_home() / "session-state", LOOPDECK)]
    if copilot:
        roots.append((copilot_home() / "session-state", COPILOT))
    return RunBoard(roots, recent=recent)


class BoardView(Widget):
    """The board's lines, drawn to the size it is given.

    Drawn line by line (Textual's line API) from strips made once per change: the
    board redraws every second for its clocks, and turning a whole screen of rich
    text into Textual's content on each frame cost ~20 times more."""

    DEFAULT_CSS = "BoardView { height: 1fr; }"

    def __init__(self, screen: RunsScreen) -> None:
        super().__init__(id="runs-board")
        self._board_screen = screen
        self._key: tuple[object, ...] | None = None
        self._strips: list[Strip] = []

    def render_line(self, y: int) -> Strip:
        strips = self._lines()
        return strips[y] if y < len(strips) else Strip.blank(self.size.width, self.rich_style)

    def _lines(self) -> list[Strip]:
        s = self._board_screen
        width, height = max(20, self.size.width), max(4, self.size.height)
        now = s.clock()
        key = (s.version, s.cursor, frozenset(s.marked), width, height, int(now))
        if key != self._key:
            self._key = key
            text = board_text(
                s.views, width=width, height=height, now=now, cursor=s.cursor, marked=s.marked
            )
            console, base = self.app.console, self.rich_style
            self._strips = [
                Strip(Segment.apply_style(line.render(console), base), line.cell_len)
                .extend_cell_length(width, base)
                .crop(0, width)
                for line in text.split("\n", allow_blank=True)
            ]
        return self._strips


class RunsScreen(Screen[None]):
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("home", "move(-1000000)", show=False),
        Binding("end", "move(1000000)", show=False),
        Binding("enter", "open", "Open"),
        Binding("space", "mark", "Mark"),
        Binding("q,escape", "leave", "Leave"),
    ]
    AUTO_FOCUS = None

    def __init__(
        self,
        board: RunBoard,
        *,
        notify: str = "auto",
        clock: Callable[[], float] = time.time,
        poll_seconds: float = POLL_SECONDS,
        osc: str | None = None,
    ) -> None:
        super().__init__()
        self.board = board
        self.clock = clock
        self.notify_mode = notify
        self.osc = osc
        self.poll_seconds = poll_seconds
        self.views: list[RunView] = []
        self.cursor = 0
        self.marked: set[str] = set()
        self.changes = ChangeWatch()
        self.told: list[Notice] = []  # the notifications given, in order
        self.sent: list[str] = []  # what was written to the terminal (bell, OSC)
        self.polls = 0
        self.version = 0  # bumped whenever the rows change
        self.view = BoardView(self)

    def compose(self) -> ComposeResult:
        yield self.view

    def on_mount(self) -> None:
        self._write("\x1b[22;0t")  # keep the terminal's title, to put it back on leaving
        self.poll()
        self.set_interval(self.poll_seconds, self.poll)
        self.set_interval(1.0, self.view.refresh)  # the clocks of running tools

    def poll(self) -> None:
        """Read what the logs appended; redraw when a row changed."""
        self.polls += 1
        if not self.board.poll() and self.views:
            return
        selected = self.selected
        self.version += 1
        self.views = self.board.views()
        if selected is not None:  # the cursor follows its run as the rows re-sort
            ids = [v.session_id for v in self.views]
            self.cursor = ids.index(selected.session_id) if selected.session_id in ids else 0
        self.cursor = min(self.cursor, max(0, len(self.views) - 1))
        title = board_title(self.views)
        if title != self.sub_title:
            self.sub_title = title
            # The window's (or tab's) title counts what waits, seen from elsewhere too.
            self._write(f"\x1b]2;{terminal_title(self.views)}\x07")
        for notice in self.changes.notices(self.views):
            self._tell(notice)
        self.view.refresh()

    def on_unmount(self) -> None:
        self._write("\x1b[23;0t")  # the title the terminal had

    def _write(self, text: str) -> None:
        # Textual has no public call for raw output; App.bell writes the same way.
        driver = getattr(self.app, "_driver", None)
        if driver is not None and not self.app.is_headless:
            driver.write(text)

    def _tell(self, notice: Notice) -> None:
        self.told.append(notice)
        text = sequences(self.notify_mode, self.osc, notice.title, notice.body)
        if self.notify_mode != "off":
            self.app.notify(f"{notice.body}", title=notice.title, timeout=6)
        if not text:
            return
        self.sent.append(text)
        self._write(text)

    @property
    def selected(self) -> RunView | None:
        return self.views[self.cursor] if 0 <= self.cursor < len(self.views) else None

    def action_move(self, step: int) -> None:
        self.cursor = max(0, min(len(self.views) - 1, self.cursor + step))
        self.view.refresh()

    def action_mark(self) -> None:
        view = self.selected
        if view is None:
            return
        if view.session_id in self.marked:
            self.marked.discard(view.session_id)
        elif len(self.marked) < MAX_PANES:
            self.marked.add(view.session_id)
        else:
            self.app.notify(f"At most {MAX_PANES} runs side by side", severity="warning")
        self.action_move(1)

    def action_open(self) -> None:
        marked = [v for v in self.views if v.session_id in self.marked]
        if len(marked) >= 2 and self.app.size.width >= GRID_MIN_WIDTH:
            from app.runs_grid import GridScreen

            shown = marked if self.app.size.height >= GRID_MIN_HEIGHT else marked[:2]
            self.app.push_screen(GridScreen([(v.path, v.row.label) for v in shown]))
            return
        view = self.selected
        if view is None:
            return
        from app.viewer import WatchScreen

        self.app.push_screen(WatchScreen(view.path))

    def action_leave(self) -> None:
        if isinstance(self.app, RunsApp):
            self.app.exit(0)
        else:
            self.app.pop_screen()


class RunsApp(App[int]):
    """``loopdeck runs`` on its own."""

    CSS_PATH = STYLES / "app.tcss"
    TITLE = "loopdeck runs"

    def __init__(self, screen: RunsScreen) -> None:
        super().__init__()
        self.board_screen = screen

    def on_mount(self) -> None:
        set_up(self)
        self.push_screen(self.board_screen)


def open_board(app: App[Any]) -> None:
    """The board over another app (the session app's /runs and Ctrl+R)."""
    import os

    from app.runs_notify import notify_mode

    board = machine_board()
    app.push_screen(RunsScreen(board, notify=notify_mode(None), osc=osc_kind(os.environ)))


def run_board(*, recent: float, copilot: bool, notify: str) -> int:
    import os

    screen = RunsScreen(
        machine_board(recent=recent, copilot=copilot), notify=notify, osc=osc_kind(os.environ)
    )
    return RunsApp(screen).run() or 0
