"""Appending to a session's ``events.jsonl``: one writer per session, in batches.

Events are written per batch (flushed, so a killed process loses none), fsynced at
each turn end (turn ends in quick succession share one fsync, at most
:data:`TURN_END_SYNC_INTERVAL` later), before any tool that changes the workspace and
before the loop goes idle, and handed to the subscribers only once their batch is
written. Before the first append a torn last
line (a writer that died mid-line) is set aside, so no new event is glued onto it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.events.schema import Event

log = logging.getLogger(__name__)


def set_aside_torn_tail(path: Path) -> Path | None:
    """Move an unterminated, unparseable last line out of ``path`` before appending.

    Appending after a torn line would glue a new event onto it. The fragment is
    kept beside the log (nothing lost) and the log is cut back to its last newline.
    Returns where the fragment went, or None when the tail was sound.
    """
    from agent.events.schema import event_from_json

    if not path.exists():
        return None
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return None
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        # Walk back to the last newline; logs are line-oriented so this is short.
        pos = size
        block = 4096
        tail = b""
        while pos > 0:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            tail = fh.read(step) + tail
            cut = tail.rfind(b"\n")
            if cut != -1:
                pos += cut + 1
                tail = tail[cut + 1 :]
                break
        fragment = tail.decode("utf-8", errors="replace")
        try:
            event_from_json(fragment)
        except ValueError:
            pass
        else:
            # A whole event that only lacks its newline: keep it, terminate it.
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
            return None
        aside = _keep_fragment(path, tail)
        fh.truncate(pos)
    return aside


def _keep_fragment(path: Path, fragment: bytes) -> Path:
    """Write ``fragment`` to a new private file beside ``path`` (never over another)."""
    stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
    for n in itertools.count():
        aside = path.with_name(f"{path.stem}.torn-{stamp}{f'-{n}' if n else ''}.jsonl")
        try:
            fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(fragment)
        return aside
    raise AssertionError("unreachable")  # pragma: no cover


Deliver = Callable[[list["Event"]], None]

# The largest batch :meth:`SessionWriter.written` writes in the caller's thread.
INLINE_WRITE_MAX = 64 * 1024
# Turn ends closer together than this share one fsync (group commit), started at most
# this long after the first of them. A turn end after a quiet spell is fsynced at
# once, as is everything before a side effect (``sync``) and before idle (``drain``).
TURN_END_SYNC_INTERVAL = 0.05


class LogWriteError(Exception):
    """A write to the log failed (a full disk, a read-only or vanished filesystem).

    The writer stops writing; what it wrote before stays whole lines.
    """

    def __init__(self, path: Path, cause: OSError) -> None:
        self.path = path
        self.cause = cause
        super().__init__(f"cannot write {path}: {cause.strerror or cause}")


class SessionWriter:
    """Appends persisted events to one ``events.jsonl``, in batches, and hands every
    event on (``deliver``) once the batch that holds it is written.

    ``append`` never blocks the loop: it queues the event and wakes a writer task
    that writes everything queued so far in one call (flushed: in the kernel, so a
    killed process loses none of it), then delivers the batch in order. Ephemeral
    events are never written but keep their place: one emitted behind a persisted
    event waits for that event's batch, so subscribers see the stream in emit order;
    with nothing in flight it is delivered at once. ``sync`` is the fsync barrier.

    A failed write stops writing for good (``error``, ``on_failure``): the torn
    bytes of the failed batch are cut back to its last whole line. The failed batch
    and every later event are still delivered, never written, each marked
    ``unsaved`` (ephemeral ones are never written anyway): nobody is shown an event
    as recorded that is not in the log.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # Set by the owner before the first append: who gets the events once written.
        self.deliver: Deliver = _drop
        self.on_failure: Callable[[LogWriteError], None] | None = None
        self._queue: list[tuple[Event, str | None]] = []
        self._in_flight = False  # a batch taken from the queue is not delivered yet
        self._sync_wanted = False
        # When the next turn end's fsync may start (loop time), and the timer that
        # wakes the writer then: see TURN_END_SYNC_INTERVAL.
        self._sync_due = 0.0
        self._sync_timer: asyncio.TimerHandle | None = None
        self._dirty = False  # written since the last fsync
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        # Sequence numbers of queued events: appended, written, known fsynced.
        self._seq = self._written = self._synced = 0
        self._sync_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._write_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._fsyncing: asyncio.Task[None] | None = None
        self._closing = False
        self._fd: int | None = None
        self._task: asyncio.Task[None] | None = None
        self.error: LogWriteError | None = None
        self.torn_tail_moved_to: Path | None = None

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.torn_tail_moved_to = set_aside_torn_tail(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._task = asyncio.create_task(self._run(), name=f"writer:{self.path.parent.name}")

    def append(self, event: Event, *, durable: bool = False) -> None:
        """Queue ``event``: written unless ephemeral, delivered after its batch.

        ``durable`` asks for an fsync after the batch that holds it: at once, or
        together with the next ones within :data:`TURN_END_SYNC_INTERVAL` of the
        last fsync (``sync`` and ``drain`` do not wait for that).
        """
        if event.ephemeral and not self._queue and not self._in_flight:
            self.deliver([event])  # nothing ahead of it to wait for
            return
        self._seq += 1
        self._queue.append((event, None if event.ephemeral else event.to_json() + "\n"))
        self._sync_wanted = self._sync_wanted or durable
        self._idle.clear()
        self._wake.set()

    async def sync(self) -> None:
        """Return once everything appended so far is written and fsynced.

        Raises :class:`LogWriteError` if the log can no longer be written.
        """
        target = self._seq
        if self.error is None and target > self._synced:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._sync_waiters.append((target, waiter))
            self._idle.clear()
            self._wake.set()
            await self._unless_stopped(waiter)
        if self.error is not None:
            raise self.error

    async def written(self) -> None:
        """Return once everything appended so far is written (not fsynced): the
        loop's barrier before each turn, so it never runs ahead of a log that can
        no longer be written.

        A small batch with no write in flight is written here and now, in the
        caller's thread: a write to the page cache costs microseconds, a round trip
        through the writer's thread (at each turn) far more. A larger one, or one
        behind a write in flight, is waited for.

        Raises :class:`LogWriteError` if the log can no longer be written.
        """
        target = self._seq
        if (
            self.error is None
            and self._queue
            and not self._in_flight
            and self._fd is not None
            and sum(len(line) for _, line in self._queue if line) <= INLINE_WRITE_MAX
        ):
            batch, self._queue = self._queue, []
            upto = self._seq
            data = "".join(line for _, line in batch if line is not None).encode("utf-8")
            if data:
                try:
                    _write_all(self._fd, data)
                except _PartialWrite as partial:
                    self._fail(partial.cause, data[: partial.written])
                else:
                    self._dirty = True
            self._batch_done(batch, upto)
            self._wake.set()  # the writer task fsyncs it if a turn end asked for that
        if self.error is None and target > self._written:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._write_waiters.append((target, waiter))
            await self._unless_stopped(waiter)
        if self.error is not None:
            raise self.error

    def _batch_done(self, batch: list[tuple[Event, str | None]], upto: int) -> None:
        """A batch was written (or failed, or came after a failure): deliver it."""
        self._written = upto
        if self.error is not None:
            for event, line in batch:
                if line is not None:
                    event.unsaved = True
        self._release_write_waiters()
        try:
            self.deliver([event for event, _ in batch])
        except Exception:  # the writer must go on: drain and close wait for it
            log.exception("delivering events failed")

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._queue:
                batch, self._queue = self._queue, []
                upto = self._seq
                self._in_flight = True
                data = "".join(line for _, line in batch if line is not None)
                if data and self.error is None:
                    await self._write(data.encode("utf-8"))
                self._in_flight = False
                self._batch_done(batch, upto)
            if (self._sync_wanted or self._sync_waiters) and self._fsyncing is None:
                now = asyncio.get_running_loop().time()
                if self._sync_waiters or now >= self._sync_due:
                    self._sync_wanted = False
                    if self._dirty and self.error is None:
                        # In the background: later batches are written and delivered
                        # meanwhile, not held behind the disk's flush.
                        self._sync_due = now + TURN_END_SYNC_INTERVAL
                        self._fsyncing = asyncio.create_task(self._fsync(self._written))
                    else:
                        self._synced = self._written
                        self._release_sync_waiters()
                elif self._sync_timer is None:
                    # Turn ends in quick succession (a loop whose model and tools
                    # answer at once): one fsync for them, a little later.
                    self._sync_timer = asyncio.get_running_loop().call_at(
                        self._sync_due, self._sync_timer_fired
                    )
            if not (self._queue or self._sync_waiters or self._sync_wanted or self._fsyncing):
                self._idle.set()
                if self._closing:
                    return

    def _sync_timer_fired(self) -> None:
        self._sync_timer = None
        self._wake.set()

    def _sync_now(self) -> None:
        """A turn end's fsync waiting for its group starts now."""
        if self._sync_wanted:
            self._sync_due = 0.0
            self._wake.set()

    def _release_write_waiters(self) -> None:
        waiting = []
        for target, waiter in self._write_waiters:
            if waiter.done():
                continue
            if target <= self._written or self.error is not None:
                waiter.set_result(None)
            else:
                waiting.append((target, waiter))
        self._write_waiters = waiting

    def _release_sync_waiters(self) -> None:
        waiting = []
        for target, waiter in self._sync_waiters:
            if waiter.done():
                continue
            if target <= self._synced or self.error is not None:
                waiter.set_result(None)
            else:
                waiting.append((target, waiter))
        self._sync_waiters = waiting

    async def _write(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            await asyncio.to_thread(_write_all, self._fd, data)
        except _PartialWrite as partial:
            self._fail(partial.cause, data[: partial.written])
        else:
            self._dirty = True

    async def _fsync(self, covered: int) -> None:
        """fsync everything written up to event ``covered``; wakes the writer after."""
        assert self._fd is not None
        try:
            await asyncio.to_thread(os.fsync, self._fd)
        except OSError as exc:
            self._fail(exc, b"")
        else:
            if self._written == covered:
                self._dirty = False  # nothing was written while it ran
            self._synced = max(self._synced, covered)
        finally:
            self._fsyncing = None
            self._release_sync_waiters()
            self._wake.set()

    def _fail(self, cause: OSError, torn: bytes) -> None:
        """Stop writing. A batch cut off mid-line is cut back to its last whole line,
        so the log stays whole lines and a resume appends after them."""
        assert self._fd is not None
        cut = len(torn) - (torn.rfind(b"\n") + 1)
        if cut:
            with contextlib.suppress(OSError):  # else resume sets the torn tail aside
                os.ftruncate(self._fd, os.fstat(self._fd).st_size - cut)
        self.error = LogWriteError(self.path, cause)
        if self.on_failure is not None:
            self.on_failure(self.error)

    async def drain(self) -> None:
        """Wait until everything appended so far is written and delivered (and, if a
        turn end asked for it, fsynced)."""
        self._sync_now()
        if not self._idle.is_set():
            await self._unless_stopped(self._idle.wait())

    async def _unless_stopped(self, waiting: Awaitable[object]) -> None:
        """Await ``waiting``, or only until the writer task has ended: a writer
        cancelled with its event loop (torn down without ``close``) never wakes it."""
        future = asyncio.ensure_future(waiting)
        task = self._task
        try:
            if task is None or task.done():
                return
            await asyncio.wait((future, task), return_when=asyncio.FIRST_COMPLETED)
        finally:
            future.cancel()

    async def close(self) -> None:
        if self._task is None:
            return
        self._closing = True
        self._sync_now()
        self._wake.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


class _PartialWrite(Exception):
    def __init__(self, written: int, cause: OSError) -> None:
        self.written = written
        self.cause = cause


def _write_all(fd: int, data: bytes) -> int:
    """``os.write`` until all of ``data`` is written; a failure says how much was."""
    view = memoryview(data)
    written = 0
    while written < len(data):
        try:
            written += os.write(fd, view[written:])
        except OSError as exc:
            raise _PartialWrite(written, exc) from exc
    return written


def _drop(events: list[Event]) -> None:
    pass
