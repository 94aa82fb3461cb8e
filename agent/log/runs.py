"""The runs on this machine, for the board (``loopdeck runs``): every session that
is running or ended recently, in loopdeck's store and Copilot CLI's, each followed
as its log grows.

Each log is read once and then only what is appended (:class:`LogFollower`, as
``watch`` follows one), line by line into its row (:mod:`agent.log.run_fold`). The
folders are listed again every few seconds to find new runs. Whether a run's
writer is alive is read from its session lock (agent/log/lock.py), never guessed
from how long its log has been quiet. Copilot's folders are only ever read.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.log.lock import LOCK_FILE, in_use_by
from agent.log.places import EVENTS_FILE, META_FILE
from agent.log.replay import LogFollower
from agent.log.run_fold import IDLE, ORDER, RUNNING, RunRow, fold_line, row_state
from agent.log.store import pid_alive

RECENT_SECONDS = 24 * 3600  # an ended run stays on the board this long (default)
RESCAN_SECONDS = 2.0  # how often the session folders are listed again
FIRST_READ_CHUNK = 4 << 20  # bytes read at a time when a log is first seen
LOOPDECK = "loopdeck"
COPILOT = "copilot"
# What Copilot CLI leaves in a session folder a process has open is not documented:
# a lock-like file naming a pid is taken as that process (checked alive); none found
# means the fold alone decides.
_PID_IN_NAME = re.compile(r"(\d{2,})")


@dataclass(frozen=True, slots=True)
class RunView:
    """One row of the board as shown now."""

    row: RunRow
    state: str
    source: str  # LOOPDECK or COPILOT
    path: Path  # the events.jsonl
    writer_alive: bool | None

    @property
    def session_id(self) -> str:
        return self.row.session_id or self.path.parent.name

    @property
    def read_only(self) -> bool:
        return self.source != LOOPDECK


class RunTracker:
    """One run's log, followed: its row, refolded only from new lines."""

    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source
        self.row = RunRow(session_id=path.parent.name)
        self.follower = LogFollower(path)
        self._meta_stamp: tuple[int, int] | None = None
        self.writer_alive: bool | None = None
        self._read_once = False

    def poll(self) -> bool:
        """Read what was appended; whether the row changed."""
        before = self.row.lines + self.row.problems
        if not self._read_once:
            self._read_once = True
            self._first_read()
        for line in self.follower.poll():
            fold_line(self.row, line)
        changed = self.row.lines + self.row.problems != before
        if self.source == LOOPDECK:
            changed = self._read_meta() or changed
        alive = self._alive()
        changed = changed or alive != self.writer_alive
        self.writer_alive = alive
        return changed

    def _first_read(self) -> None:
        """The log as it is, a chunk at a time (a long log is not held whole in
        memory); the follower goes on from the end of its last whole line."""
        try:
            fh = self.path.open("rb")
        except OSError:
            return
        offset, rest = 0, b""
        with fh:
            while chunk := fh.read(FIRST_READ_CHUNK):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for raw in lines:
                    offset += len(raw) + 1
                    fold_line(self.row, raw.decode("utf-8", "replace"))
        self.follower.skip_to(offset)

    def view(self) -> RunView:
        state = row_state(self.row, self.writer_alive)
        return RunView(self.row, state, self.source, self.path, self.writer_alive)

    def _alive(self) -> bool | None:
        return writer_alive(self.path.parent)

    def _read_meta(self) -> bool:
        """Loopdeck's metadata: the nudge cap and the context window, which the log
        does not record. Read again only when the file changed."""
        meta_path = self.path.parent / META_FILE
        try:
            info = meta_path.stat()
        except OSError:
            return False
        stamp = (info.st_size, info.st_mtime_ns)
        if stamp == self._meta_stamp:
            return False
        self._meta_stamp = stamp
        try:
            meta = json.loads(meta_path.read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return False
        if not isinstance(meta, dict):
            return False
        cap, window = meta.get("maxAutopilotContinues"), meta.get("contextWindow")
        self.row.nudge_cap = cap if isinstance(cap, int) and not isinstance(cap, bool) else None
        self.row.context_window = (
            window if isinstance(window, int) and not isinstance(window, bool) else None
        )
        return True


def writer_alive(folder: Path) -> bool | None:
    """Whether the process writing this session folder still runs. A loopdeck
    session (its lock or its metadata file there: every loopdeck writer takes the
    lock) is judged by its lock's holder, however the writer died; else a Copilot CLI
    lock-like file naming a pid decides; None when nothing tells (a bare log)."""
    if (folder / LOCK_FILE).exists() or (folder / META_FILE).exists():
        return in_use_by(folder) is not None
    return copilot_alive(folder)


def copilot_alive(folder: Path) -> bool | None:
    """Whether a Copilot CLI process has this session open: True when a lock-like
    file in its folder names a live pid, False when such files name only dead ones,
    None when there is none (nothing to tell by)."""
    found = False
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    for entry in entries:
        name = entry.name
        if not (name.endswith(".lock") or name.startswith("inuse")):
            continue
        pid = _pid_of(entry.path, name)
        if pid is None:
            continue
        found = True
        if pid_alive(pid):
            return True
    return False if found else None


def _pid_of(path: str, name: str) -> int | None:
    match = _PID_IN_NAME.search(name)
    if match is not None:
        return int(match.group(1))
    try:
        text = Path(path).read_text("utf-8", "replace")[:200]
    except OSError:
        return None
    match = re.search(r'"?pid"?\s*[:=]\s*(\d+)', text) or re.fullmatch(r"\s*(\d+)\s*", text)
    return int(match.group(1)) if match is not None else None


class RunBoard:
    """Every run on the machine that is live or was active within ``recent``
    seconds, from the given session-state folders (``(root, source)`` pairs)."""

    def __init__(
        self,
        roots: list[tuple[Path, str]],
        *,
        recent: float = RECENT_SECONDS,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.roots = roots
        self.recent = recent
        self._now = clock or time.time
        self.trackers: dict[Path, RunTracker] = {}
        self._scanned_at: float | None = None

    def poll(self, *, rescan: bool | None = None) -> bool:
        """Find new runs (every :data:`RESCAN_SECONDS`, or when asked) and read
        what each log appended; whether anything changed."""
        now = time.monotonic()
        changed = False
        if rescan or (
            rescan is None
            and (self._scanned_at is None or now - self._scanned_at >= RESCAN_SECONDS)
        ):
            self._scanned_at = now
            changed = self._scan()
        for tracker in self.trackers.values():
            changed = tracker.poll() or changed
        return changed

    def views(self) -> list[RunView]:
        """The rows, what needs a person first, then what runs, then what ended.
        Within a group the newest first: runs that are working by when they started
        (their order stays put while they write), the others by their last event."""
        views = [tracker.view() for tracker in self.trackers.values()]
        views.sort(key=_order)
        return views

    def _scan(self) -> bool:
        oldest = self._now() - self.recent
        gone = [log for log in self.trackers if not log.exists()]  # deleted sessions
        for log in gone:
            del self.trackers[log]
        added = bool(gone)
        for root, source in self.roots:
            try:
                folders = list(os.scandir(root))
            except OSError:
                continue
            for entry in folders:
                log = Path(entry.path) / EVENTS_FILE
                if log in self.trackers:
                    continue
                try:
                    modified = log.stat().st_mtime
                except OSError:
                    continue
                if modified < oldest and not _held(Path(entry.path), source):
                    continue
                self.trackers[log] = RunTracker(log, source)
                added = True
        return added


def _order(view: RunView) -> tuple[int, float, str]:
    row = view.row
    when = row.started if view.state in RUNNING or view.state == IDLE else row.updated
    return (ORDER.get(view.state, 5), -(when or 0.0), view.session_id)


def _held(folder: Path, source: str) -> bool:
    """A run quiet for longer than the window still shows while its writer lives."""
    return writer_alive(folder) is True
