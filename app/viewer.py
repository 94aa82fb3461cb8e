"""Replay and watch: the live timeline, fed from an ``events.jsonl`` instead of a loop.

Replay plays a recorded session at the pace it happened (sped up, long gaps
shortened). Watch follows a log another process is still writing. Both open from
the tail of big logs: only a window of recent turns is parsed and shown.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.widgets import Static

from agent.events.schema import Event, event_from_json
from agent.log.lock import in_use_by
from agent.log.replay import SPEEDS, EventIndex, LogFollower, pacing, speed_label
from agent.log.runs import writer_alive
from agent.log.store import unreadable_row
from agent.transcript.fold import Transcript
from app.app_setup import set_up
from app.drawn import until_drawn
from app.resume_view import keep_scrollbar_room
from widgets.format import duration
from widgets.status_bar import StatusBar
from widgets.timeline import Timeline

STYLES = Path(__file__).resolve().parent.parent / "styles"
WINDOW_TURNS = 40  # turns parsed and shown when jumping into a long log
READ_CHUNK = 500  # events parsed at a time while playing
POLL_SECONDS = 0.2
VIEWER_MAX_MOUNTED = 24  # blocks drawn as widgets (see benchmarks/replay_load.py)
TAIL_FIRST_BYTES = 8 << 20  # indexed before the end of a long log is drawn


class ViewerApp(App[int]):
    """Runs one viewer screen on its own (``loopdeck replay`` / ``loopdeck watch``)."""

    CSS_PATH = STYLES / "app.tcss"

    def __init__(self, screen: ViewerScreen) -> None:
        super().__init__()
        self._viewer = screen

    def on_mount(self) -> None:
        set_up(self)
        self.push_screen(self._viewer)


class ViewerScreen(Screen[None]):
    """What replay and watch share: a timeline, a control bar, a status line.

    Works on its own (in :class:`ViewerApp`) or pushed from the session browser."""

    # Nothing is focused at first: a highlighted turn would look like a selection.
    AUTO_FOCUS = None

    def __init__(self, path: Path, title: str) -> None:
        super().__init__()
        self.path = path
        self.sub_title = title
        self.timeline = Timeline(id="timeline")
        # Opening a long log draws only its tail; "load earlier" brings back the rest.
        self.timeline.max_mounted = VIEWER_MAX_MOUNTED
        self.bar = Static(id="replay-bar")
        self.status = StatusBar(id="status")

    def compose(self) -> ComposeResult:
        yield self.timeline
        yield self.bar
        yield self.status

    def action_leave(self) -> None:
        if isinstance(self.app, ViewerApp):
            self.app.exit(0)
        else:
            self.app.pop_screen()

    def refresh_status(self, *, busy: bool) -> None:
        t = self.timeline.transcript
        self.status.show(
            t,
            model=t.model_label,
            mode=t.mode or "interactive",
            session_id=t.session_id or self.path.parent.name,
            busy=busy,
        )


class ReplayScreen(ViewerScreen):
    # Priority: the viewer has no text input, and a focused turn or the scrolling
    # timeline must not take the player's keys (home, arrows, space) for itself.
    BINDINGS = [
        Binding("space", "toggle_play", "Play/pause", priority=True),
        Binding("right,n", "next_turn", "Next turn", priority=True),
        Binding("left,p", "previous_turn", "Previous turn", priority=True),
        Binding("home,g", "start", "Start", priority=True),
        Binding("end,G", "end", "End", priority=True),
        Binding("plus,equals_sign,f", "faster", "Faster", priority=True),
        Binding("minus,s", "slower", "Slower", priority=True),
        Binding("q,escape", "leave", "Leave"),
    ]

    def __init__(self, path: Path, *, speed: float = 1.0) -> None:
        super().__init__(path, f"replay · {path.parent.name}")
        # Opened at its end: index the last few MB, draw them, index the rest in a
        # thread (see _index_head). Played from the start: the whole index first.
        self.index = (
            EventIndex.build_tail(path, TAIL_FIRST_BYTES) if speed <= 0 else EventIndex.build(path)
        )
        self._head: asyncio.Task[None] | None = None
        self._drawn: AwaitMount | None = None  # the blocks the last jump mounts
        # No live loopdeck process writes the file: what its end leaves open (a turn,
        # a tool call, a permission request) never finishes and is drawn interrupted.
        self.finished = in_use_by(path.parent) is None
        self.speed = speed
        self.position = 0  # events shown so far (the next one to show)
        self.playing = speed > 0
        self._player: asyncio.Task[None] | None = None
        self._cache_start = 0
        self._cache: list[Event | None] = []
        self._gap_note = ""

    def on_mount(self) -> None:
        if self.speed <= 0:
            self.jump_to(len(self.index))
        else:
            self._start_player()
        if self.index.start > 0:
            self._head = asyncio.create_task(self._index_head())
        self._update_bar()

    async def _index_head(self) -> None:
        """Index the lines before the tail off the event loop, then splice them in:
        positions move by what was added, and the window shown is drawn again so
        its turn numbers count the whole log."""
        # After the tail is on screen: the thread would take turns with drawing it.
        drawn, self._drawn = self._drawn, None
        if drawn is not None:
            await drawn
            await until_drawn(self, self.timeline.children[-1])
        head = await asyncio.to_thread(self.index.head)
        shift = self.index.splice_head(head)
        self.position += shift
        self._cache_start += shift
        if not self.playing:
            self.jump_to(self.position)
        self._update_bar()

    # --- playback ----------------------------------------------------------------

    def _start_player(self) -> None:
        if self._player is None or self._player.done():
            self._player = asyncio.create_task(self._play())

    def on_unmount(self) -> None:
        if self._player is not None:
            self._player.cancel()
        if self._head is not None:
            self._head.cancel()

    async def _play(self) -> None:
        times = self.index.times
        while self.playing and self.position < len(self.index):
            if self.position > 0:
                delay = pacing(times[self.position - 1], times[self.position], self.speed)
                if delay.shortened_from is not None:
                    gap = duration(delay.shortened_from)
                    self._gap_note = f"⏩ {gap} pause shortened"
                    self.timeline.mark(f"⏩ {gap} without events — shortened")
                if delay.seconds:
                    self._update_bar()
                    await asyncio.sleep(delay.seconds)
                    if not self.playing:
                        break
            self._show_next()
        if self.position >= len(self.index):
            self.playing = False
        self._update_bar()

    def _event_at(self, position: int) -> Event | None:
        offset = position - self._cache_start
        if not 0 <= offset < len(self._cache):
            self._cache_start = position
            self._cache = self.index.read_slots(position, position + READ_CHUNK)
            offset = 0
        return self._cache[offset] if offset < len(self._cache) else None

    def _show_next(self) -> None:
        event = self._event_at(self.position)
        self.position += 1
        self.timeline.apply(event if event is not None else unreadable_row("unreadable line"))
        if self.finished and self.position == len(self.index):
            self.timeline.finish_file()
        self._gap_note = ""
        self._update_bar()

    def jump_to(self, position: int) -> None:
        """Show the log up to ``position``, parsing only a window of recent turns."""
        position = max(0, min(position, len(self.index)))
        turns_before = self.index.turn_of(position)
        first_turn = max(0, turns_before - WINDOW_TURNS)
        start = self.index.turn_starts[first_turn] if turns_before > WINDOW_TURNS else 0
        transcript = Transcript()
        transcript.turns = first_turn  # keep turn numbers true to the whole log
        seed_usage(transcript, self.index, start)
        self.timeline.reset(transcript)
        if start > 0:
            keep_scrollbar_room(self.timeline)
            self.timeline.mark(f"… {first_turn} earlier turns not loaded (press g to start over)")
        at_end = self.finished and position == len(self.index)
        self._drawn = self.timeline.load(self.index.read_rows(start, position), finished=at_end)
        self.position = position
        self._cache, self._cache_start = [], 0
        self._update_bar()

    # --- controls -----------------------------------------------------------------

    def action_toggle_play(self) -> None:
        if self.position >= len(self.index):
            self.jump_to(0)
        self.playing = not self.playing
        if self.playing:
            if self.speed <= 0:
                self.speed = SPEEDS[0]
            self._start_player()
        self._update_bar()

    def action_next_turn(self) -> None:
        """Show through the end of the next turn (up to the turn after it)."""
        self.playing = False
        starts = self.index.turn_starts
        end = len(self.index)
        begin = next((p for p in starts if p >= self.position), None)
        target = end if begin is None else next((p for p in starts if p > begin), end)
        while self.position < target:
            self._show_next()

    def action_previous_turn(self) -> None:
        self.playing = False
        done = self.index.turn_of(self.position)
        target = self.index.turn_starts[done - 1] if done >= 1 else 0
        self.jump_to(target)

    def action_start(self) -> None:
        self.playing = False
        self.jump_to(0)

    def action_end(self) -> None:
        self.playing = False
        self.jump_to(len(self.index))

    def action_faster(self) -> None:
        self._set_speed(+1)

    def action_slower(self) -> None:
        self._set_speed(-1)

    def _set_speed(self, step: int) -> None:
        current = SPEEDS.index(self.speed) if self.speed in SPEEDS else 0
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, current + step))]
        if self.speed <= 0 and self.playing:
            self.jump_to(len(self.index))
            self.playing = False
        self._update_bar()

    def _update_bar(self) -> None:
        total_turns = len(self.index.turn_starts)
        turn = self.index.turn_of(self.position)
        elapsed = self.index.elapsed(max(0, self.position - 1))
        whole = self.index.elapsed(len(self.index) - 1)
        state = (
            "▶ playing"
            if self.playing
            else ("■ end" if self.position >= len(self.index) else "❚❚ paused")
        )
        text = Text.assemble(
            (state, "bold"),
            f"  turn {turn} of {total_turns}",
            f"  ·  {duration(elapsed) or '0s'} of {duration(whole) or '0s'}",
            f"  ·  event {self.position}/{len(self.index)}",
            ("  ·  " + speed_label(self.speed), "bold"),
        )
        if self._gap_note:
            text.append(f"  ·  {self._gap_note}", style="italic")
        if self.index.start > 0:
            text.append("  ·  indexing the earlier log…", style="dim italic")
        text.append(
            "\nspace play/pause · ←/→ turn · +/- speed · g/G start/end · q leave", style="dim"
        )
        self.bar.update(text)
        self.refresh_status(busy=self.playing)


class WatchScreen(ViewerScreen):
    """Follows a session another process is writing, drawing events as they land."""

    BINDINGS = [Binding("q,escape", "leave", "Leave")]

    def __init__(self, path: Path) -> None:
        super().__init__(path, f"watch · {path.parent.name}")
        self.follower = LogFollower(path)
        self.problems = 0
        # Its writer is known to be gone (its lock says so): what the log leaves open
        # never finishes, and is drawn interrupted as replay draws it.
        self.ended = False

    def on_mount(self) -> None:
        index = EventIndex.build(self.path)
        turns = len(index.turn_starts)
        start = index.turn_starts[turns - WINDOW_TURNS] if turns > WINDOW_TURNS else 0
        transcript = Transcript()
        transcript.turns = max(0, turns - WINDOW_TURNS)
        seed_usage(transcript, index, start)
        self.timeline.reset(transcript)
        self.ended = writer_alive(self.path.parent) is False
        self.timeline.load(index.read_rows(start, len(index)), finished=self.ended)
        self.follower.skip_to(index.size)
        self.set_interval(POLL_SECONDS, self.poll)  # stops with the screen
        self._update_bar()

    def poll(self) -> None:
        new = 0
        was_partial = bool(self.follower.pending_partial)
        for line in self.follower.poll():
            try:
                event = event_from_json(line)
            except ValueError:
                self.problems += 1
                self.timeline.mark("⚠ an unreadable line in the log was skipped")
                continue
            self.timeline.apply(event)
            new += 1
        if new:
            self.timeline.transcript.finish_replay()
        ended = not self.ended and writer_alive(self.path.parent) is False
        if ended:
            self.ended = True
            self.timeline.finish_file()
        # A half-written line alone (a writer that died mid-line) changes the bar too.
        if new or ended or bool(self.follower.pending_partial) != was_partial:
            self._update_bar()

    def _update_bar(self) -> None:
        busy = self.timeline.transcript.busy and not self.ended
        state = ("● live — the agent is working", "bold") if busy else ("○ idle", "")
        if self.ended:
            state = ("○ ended — no process writes it any more", "")
        text = Text.assemble(state, f"   following {self.follower.path}", ("   q leave", "dim"))
        if self.follower.pending_partial:
            text.append("   (a line is being written)", style="dim italic")
        self.bar.update(text)
        self.refresh_status(busy=busy)


def seed_usage(transcript: Transcript, index: EventIndex, start: int) -> None:
    """A window that starts mid-log: the usage recorded before it still counts (and
    the window's first turn gets only its own)."""
    if start > 0:
        checkpoint = index.last_before("session.usage_checkpoint", start)
        if checkpoint is not None:
            transcript.apply(checkpoint)
