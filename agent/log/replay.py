"""Replaying a recorded session: an index of the log, and the pacing of playback.

:class:`EventIndex` scans an ``events.jsonl`` once for line offsets, types and
timestamps without building events, so a 50,000-event log opens fast and only the
part being shown is ever parsed. :class:`Pacing` turns event timestamps into
playback delays at a given speed, shortening long idle gaps.
"""

from __future__ import annotations

import mmap
import os
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agent.log.line_heads import LINE_HEAD
from agent.log.places import EVENTS_FILE
from agent.log.store import unreadable_row

if TYPE_CHECKING:
    from agent.events.schema import Event

_TYPE = re.compile(rb'"type"\s*:\s*"([^"]+)"')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"([^"]+)"')

SPEEDS: tuple[float, ...] = (1.0, 2.0, 4.0, 16.0, 0.0)  # 0 = instant
GAP_LIMIT = 3.0  # seconds: longer pauses are shortened to this, and marked


def events_file(path: Path) -> Path:
    return path / EVENTS_FILE if path.is_dir() else path


@dataclass(slots=True)
class EventIndex:
    """Per line: byte offset, event type and timestamp (seconds since the epoch)."""

    path: Path
    offsets: array[int] = field(default_factory=lambda: array("q"))  # 8 bytes per line
    types: list[str] = field(default_factory=list)
    times: Stamps = field(init=False)  # read from the log line by line when asked
    turn_starts: list[int] = field(default_factory=list)  # positions of turn_start lines
    size: int = 0  # bytes indexed (up to the last complete line)
    start: int = 0  # byte offset of the first line indexed (see build_tail)

    def __post_init__(self) -> None:
        self.times = Stamps(self)

    @classmethod
    def build(cls, path: Path) -> EventIndex:
        index = cls(events_file(path))
        index.extend()
        return index

    @classmethod
    def build_tail(cls, path: Path, nbytes: int) -> EventIndex:
        """An index of the last ``nbytes`` of the log (from the first line that starts
        in them): enough to draw its end while the rest is indexed (see
        :meth:`head` and :meth:`splice_head`). ``start`` is where it begins."""
        index = cls(events_file(path))
        with index.path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > nbytes:
                fh.seek(size - nbytes - 1)
                fh.readline()  # the end of the line the window starts in (or its newline)
                index.size = fh.tell()
        index.start = index.size
        index.extend()
        return index

    def head(self) -> EventIndex:
        """An index of the lines before :attr:`start` (blocking: run it in a thread)."""
        head = EventIndex(self.path)
        head.extend(stop=self.start)
        return head

    def splice_head(self, head: EventIndex) -> int:
        """Put ``head`` (the lines before :attr:`start`) first. Returns how many lines
        it added: every position held before moves by that much."""
        shift = len(head)
        self.offsets[:0] = head.offsets
        self.types[:0] = head.types
        self.times.splice_before(head.times)
        self.turn_starts = head.turn_starts + [p + shift for p in self.turn_starts]
        self.start = 0
        return shift

    def extend(self, stop: int | None = None) -> int:
        """Index lines appended since the last call. Returns how many were added.
        ``stop``: a line start to stop at (the rest is indexed another way).

        The file is mapped a window at a time (never read line by line, never held
        whole), and of each line only the head (its type) and the tail (its
        timestamp, read only when asked: see :class:`Stamps`) are looked at: a 230 MB
        log indexes in a fraction of a second."""
        added = 0
        with self.path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if stop is not None:
                size = min(size, stop)
            window = _WINDOW
            while self.size < size:
                # Windows start on the mapping granularity, at or before the next line.
                first = self.size - self.size % mmap.ALLOCATIONGRANULARITY
                length = min(window, size - first)
                with mmap.mmap(fh.fileno(), length, access=mmap.ACCESS_READ, offset=first) as mm:
                    count, self.size, _ = self._scan(mm, first, self.size - first)
                added += count
                if count == 0:
                    if first + length >= size:
                        break  # only a line still being written: index it when whole
                    window *= 2  # one line longer than a window
                else:
                    window = _WINDOW
        return added

    def _scan(self, buf: mmap.mmap, base: int, start: int) -> tuple[int, int, int]:
        """Index the whole lines of ``buf`` (byte ``base`` of the file) from ``start``:
        (lines added, file offset after the last whole line, its index in ``buf``)."""
        find, search = buf.find, _TYPE.search
        offsets, types, turn_starts = self.offsets, self.types, self.turn_starts
        head, after = LINE_HEAD, len(LINE_HEAD)
        added = 0
        while True:
            end = find(b"\n", start)
            if end < 0:
                break  # the rest: a line still being written, or one the next chunk ends
            # Writers put ``type`` first (as loopdeck and Copilot write it, the line
            # starts with it: read it there) and ``timestamp`` after ``data``, which is
            # most of a long line: look at the head, then (rarely) the whole line.
            quote = find(b'"', start + after, end) if buf[start : start + after] == head else -1
            if quote > start + after:
                name = buf[start + after : quote]
                etype = _TYPE_NAMES.get(name) or _type_name(name)
            else:
                found = search(buf, start, min(end, start + _HEAD)) or search(buf, start, end)
                if found is None and not buf[start:end].strip():
                    start = end + 1
                    continue  # a blank line
                if found is not None:
                    name = found.group(1)
                    etype = _TYPE_NAMES.get(name) or _type_name(name)
                else:
                    etype = "?"
            # A sub-agent's turn (its line carries an agentId) is not a turn of the session.
            if etype == "assistant.turn_start" and buf.find(b'"agentId"', start, end) < 0:
                turn_starts.append(len(offsets))
            offsets.append(base + start)
            types.append(etype)
            added += 1
            start = end + 1
        return added, base + start, start

    def __len__(self) -> int:
        return len(self.offsets)

    def stamp_bytes(self, position: int) -> bytes | None:
        """The timestamp (undecoded) of the line at ``position``, from the log."""
        start = self.offsets[position]
        end = self.offsets[position + 1] if position + 1 < len(self.offsets) else self.size
        with self.path.open("rb") as fh:
            # The line's tail first (the envelope's timestamp comes after its data).
            head = max(start, end - _TAIL - 2)
            fh.seek(head)
            line = fh.read(end - head).rstrip()
            stamp = _envelope_stamp(line, whole=head == start)
            if stamp is None and head > start:
                fh.seek(start)
                stamp = _envelope_stamp(fh.read(end - start).rstrip(), whole=True)
        return stamp

    def read(self, start: int, stop: int) -> list[Event]:
        """Parse lines ``start:stop``; corrupt ones are skipped, as the reader does."""
        return [event for event in self.read_slots(start, stop) if event is not None]

    def read_slots(self, start: int, stop: int) -> list[Event | None]:
        """Lines ``start:stop``, one slot per indexed line (None where it is corrupt),
        so positions keep matching the index."""
        # The event models load here, not with the index: resume starts reading a
        # log's tail before they are needed.
        from agent.events.schema import EventParseError, event_from_json

        stop = min(stop, len(self.offsets))
        if start >= stop:
            return []
        end = self.offsets[stop] if stop < len(self.offsets) else self.size
        with self.path.open("rb") as fh:
            fh.seek(self.offsets[start])
            chunk = fh.read(end - self.offsets[start])
        slots: list[Event | None] = []
        for raw in chunk.split(b"\n"):
            if not raw.strip():
                continue  # blank lines are not indexed either
            try:
                slots.append(event_from_json(raw.decode("utf-8", "replace")))
            except (ValueError, EventParseError):
                slots.append(None)
        return slots

    def last_before(self, etype: str, position: int) -> Event | None:
        """The last event of type ``etype`` before ``position``, parsed (or None)."""
        for i in range(min(position, len(self.types)) - 1, -1, -1):
            if self.types[i] == etype:
                found = self.read(i, i + 1)
                return found[0] if found else None
        return None

    def read_rows(self, start: int, stop: int) -> list[Event]:
        """Lines ``start:stop``, a warning row in place of each corrupt one."""
        return [
            event if event is not None else unreadable_row("unreadable line")
            for event in self.read_slots(start, stop)
        ]

    def turn_of(self, position: int) -> int:
        """How many turns have started before ``position`` (0-based count)."""
        return bisect_left(self.turn_starts, position)

    def elapsed(self, position: int) -> float:
        """Recorded seconds from the first event to the event at ``position``."""
        times = self.times
        first = next((t for t in times if t is not None), None)
        if first is None:
            return 0.0
        # Walk back from ``position`` without copying the list (called per event shown).
        for i in range(min(position, len(times) - 1), -1, -1):
            t = times[i]
            if t is not None:
                return max(0.0, t - first)
        return 0.0


_WINDOW = 16 << 20  # bytes mapped at a time while indexing
_HEAD = 256  # bytes from a line's start that hold its type
_TAIL = 256  # bytes from its end that hold its timestamp (and parentId, ephemeral)


def _envelope_stamp(line: bytes, *, whole: bool) -> bytes | None:
    """The envelope's timestamp (undecoded) in ``line``: the whole line, or (not
    ``whole``) only its tail, where None means the whole line is needed.

    Taken from the line's tail when the last ``"timestamp"`` there is the envelope's:
    only scalar fields (no braces or brackets) and the envelope's closing brace follow
    it. Otherwise (another key order, say) the first one in the whole line.
    """
    at = line.rfind(b'"timestamp"')
    if at >= 0:
        found = _TIMESTAMP.match(line, at)
        if found:
            rest = line[found.end() :]
            if rest.count(b"}") == 1 and b"{" not in rest and b"[" not in rest:
                return found.group(1)
    if not whole:
        return None
    stamp = _TIMESTAMP.search(line)
    return stamp.group(1) if stamp else None


class Stamps:
    """Timestamps by line, read from the log and parsed when asked: most are never
    looked at (a replay opened at its end, a resume), so indexing does not read them."""

    __slots__ = ("_index", "_seconds")

    def __init__(self, index: EventIndex) -> None:
        self._index = index
        self._seconds: dict[int, float | None] = {}

    def __len__(self) -> int:
        return len(self._index.offsets)

    def __getitem__(self, position: int) -> float | None:
        count = len(self._index.offsets)
        if position < 0:
            position += count
        if not 0 <= position < count:
            raise IndexError("timestamp position out of range")
        if position in self._seconds:
            return self._seconds[position]
        raw = self._index.stamp_bytes(position)
        seconds = _epoch(raw.decode("ascii", "replace")) if raw is not None else None
        self._seconds[position] = seconds
        return seconds

    def __iter__(self) -> Iterator[float | None]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Stamps | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def splice_before(self, head: Stamps) -> None:
        """``head`` (the lines before these) was put first in the index: what was
        read moves by its length."""
        shift = len(head)
        moved = {i + shift: v for i, v in self._seconds.items()}
        moved.update(head._seconds)
        self._seconds = moved


_TYPE_NAMES: dict[bytes, str] = {}  # one str per event type, shared by every index
_TYPE_NAMES_MAX = 1024  # a corrupt log with endless made-up types must not grow it forever


def _type_name(raw: bytes) -> str:
    name = _TYPE_NAMES.get(raw)
    if name is None:
        name = raw.decode("utf-8", "replace")
        if len(_TYPE_NAMES) < _TYPE_NAMES_MAX:
            _TYPE_NAMES[raw] = name
    return name


def _epoch(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except (ValueError, OverflowError):  # not a date, or out of the platform's range
        return None


@dataclass(frozen=True, slots=True)
class Delay:
    seconds: float  # how long to wait before showing the event
    shortened_from: float | None = None  # the recorded gap, when it was cut


def pacing(previous: float | None, current: float | None, speed: float) -> Delay:
    """The wait before an event recorded at ``current`` after one at ``previous``."""
    if speed <= 0 or previous is None or current is None:
        return Delay(0.0)
    gap = max(0.0, current - previous)
    if gap > GAP_LIMIT:
        return Delay(GAP_LIMIT / speed, shortened_from=gap)
    return Delay(gap / speed)


def speed_label(speed: float) -> str:
    return "instant" if speed <= 0 else f"{speed:g}×"


def parse_speed(text: str) -> float:
    """``2``, ``2x``, ``16×`` or ``instant``."""
    cleaned = text.strip().lower().rstrip("x×")
    if cleaned in ("instant", "max", "0"):
        return 0.0
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"unknown speed {text!r}: use 1, 2, 4, 16 or instant") from None
    if value <= 0:
        raise ValueError("speed must be positive (or 'instant')")
    return value


# --- following a log another process writes ------------------------------------


class LogFollower:
    """Reads whole lines appended to a log, tolerating a writer that dies mid-line.

    A partial last line is held back until its newline arrives; if the file is
    truncated or replaced, reading starts over from the beginning.
    """

    def __init__(self, path: Path) -> None:
        self.path = events_file(path)
        self._offset = 0  # end of the last whole line read
        self._partial = b""
        self._inode: int | None = None

    def poll(self) -> Iterator[str]:
        try:
            stat = self.path.stat()
        except OSError:  # gone, or unreadable: nothing to read now
            return
        if self._inode is not None and (stat.st_ino != self._inode or stat.st_size < self._offset):
            self._offset, self._partial = 0, b""  # replaced or truncated: start over
        self._inode = stat.st_ino
        if stat.st_size == self._offset and not self._partial:
            return
        # Read from the end of the last whole line: an unfinished line is read again
        # rather than kept, so one a new writer set aside (log_writer.set_aside_torn_tail
        # cuts the log back to its last newline) is not glued to what it appends.
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:  # deleted or made unreadable since the stat: try next time
            return
        lines = data.split(b"\n")
        self._partial = lines.pop()
        self._offset += len(data) - len(self._partial)
        for raw in lines:
            if raw.strip():
                yield raw.decode("utf-8", "replace")

    def skip_to(self, offset: int) -> None:
        """Start following from ``offset`` (what was already read another way)."""
        self._offset, self._partial = offset, b""
        try:
            self._inode = self.path.stat().st_ino
        except FileNotFoundError:
            self._inode = None

    @property
    def pending_partial(self) -> str:
        """Bytes of an unfinished last line (a writer mid-line, or one that crashed)."""
        return self._partial.decode("utf-8", "replace")
