"""Several runs side by side (from the board: runs marked, then Enter): each pane is
the timeline ``watch`` draws, following its own log. Two panes sit side by side,
three or four in a 2×2 grid. Esc goes back to the board."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.screen import Screen
from textual.widgets import Static

from agent.events.schema import event_from_json
from agent.log.replay import EventIndex, LogFollower
from agent.log.runs import writer_alive
from agent.transcript.fold import Transcript
from app.viewer import POLL_SECONDS, VIEWER_MAX_MOUNTED, WINDOW_TURNS, seed_usage
from widgets.timeline import Timeline


class WatchPane(Vertical):
    """One run followed as :class:`app.viewer.WatchScreen` follows it: the same
    timeline, loaded from the log's recent turns, then fed each appended line."""

    DEFAULT_CSS = """
    WatchPane { border: round $primary 40%; height: 1fr; }
    WatchPane .pane-bar { height: 1; padding: 0 1; background: $boost; }
    """

    def __init__(self, path: Path, label: str = "") -> None:
        super().__init__()
        self.path = path
        self.label = label or path.parent.name[:8]
        self.writer_alive = True
        self.timeline = Timeline()
        self.timeline.max_mounted = VIEWER_MAX_MOUNTED
        self.bar = Static(classes="pane-bar")
        self.follower = LogFollower(path)
        self.border_title = self.label[:60]

    def compose(self) -> ComposeResult:
        yield self.timeline
        yield self.bar

    def on_mount(self) -> None:
        index = EventIndex.build(self.path)
        turns = len(index.turn_starts)
        start = index.turn_starts[turns - WINDOW_TURNS] if turns > WINDOW_TURNS else 0
        transcript = Transcript()
        transcript.turns = max(0, turns - WINDOW_TURNS)
        seed_usage(transcript, index, start)
        self.timeline.reset(transcript)
        self.writer_alive = writer_alive(self.path.parent) is not False
        self.timeline.load(index.read_rows(start, len(index)), finished=not self.writer_alive)
        self.follower.skip_to(index.size)
        self.set_interval(POLL_SECONDS, self.poll)
        self._update_bar()

    def poll(self) -> None:
        new = 0
        for line in self.follower.poll():
            try:
                event = event_from_json(line)
            except ValueError:
                self.timeline.mark("⚠ an unreadable line in the log was skipped")
                continue
            self.timeline.apply(event)
            new += 1
        if new:
            self.timeline.transcript.finish_replay()
        alive = self.writer_alive and writer_alive(self.path.parent) is not False
        if alive != self.writer_alive:
            # The writer is gone (its lock says so): what it left open never finishes.
            self.writer_alive = False
            self.timeline.finish_file()
        if new or not alive:
            self._update_bar()

    def _update_bar(self) -> None:
        t = self.timeline.transcript
        if not self.writer_alive:
            state = ("○ ended", "dim")
        else:
            state = ("● live", "bold") if t.busy else ("○ idle", "dim")
        short = self.path.parent.name[:8]
        self.bar.update(Text.assemble(state, f"  {short}  ·  turn {t.turns}  ·  esc board"))


class GridScreen(Screen[None]):
    BINDINGS = [Binding("q,escape", "leave", "Back to the board")]
    AUTO_FOCUS = None
    DEFAULT_CSS = """
    GridScreen Grid { grid-size: 2; grid-gutter: 0; }
    GridScreen Grid.-one-row { grid-size: 2 1; }
    """

    def __init__(self, runs: list[tuple[Path, str]]) -> None:
        super().__init__()
        self.panes = [WatchPane(path, label) for path, label in runs[:4]]

    def compose(self) -> ComposeResult:
        grid = Grid(*self.panes)
        if len(self.panes) <= 2:
            grid.add_class("-one-row")
        yield grid

    def action_leave(self) -> None:
        self.app.pop_screen()
