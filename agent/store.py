"""Session-state folders: ``$LOOPDECK_HOME/session-state/<id>/events.jsonl``.

One writer per session appends persisted events in batches (written per batch,
fsynced at each turn end and before any tool that changes the workspace), and
hands each event to the subscribers only once its batch is written. The reader
tolerates what crashes leave behind: a torn last line, blank lines, corrupt lines
and unknown event types.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.events import Event
    from agent.listing_cache import ListingCache

# The event models (pydantic) are imported where events are read or written, not
# here: a listing of sessions with metadata never needs them (their import costs
# more than the whole listing).

log = logging.getLogger(__name__)

EVENTS_FILE = "events.jsonl"
META_FILE = "session.json"


def loopdeck_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("LOOPDECK_HOME")
    return Path(home).expanduser() if home else Path.home() / ".loopdeck"


def copilot_home(env: Mapping[str, str] | None = None) -> Path:
    """GitHub Copilot CLI's home: read (listed, replayed, forked), never written."""
    env = os.environ if env is None else env
    home = env.get("COPILOT_HOME")
    return Path(home).expanduser() if home else Path.home() / ".copilot"


# --- reading -------------------------------------------------------------------


@dataclass(slots=True)
class ReadProblem:
    line: int
    reason: str


@dataclass(slots=True)
class ReadResult:
    events: list[Event] = field(default_factory=list)
    problems: list[ReadProblem] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # the line number of each event
    # Bytes of an unterminated last line that did not parse: a writer died mid-line.
    torn_tail: str | None = None


def parse_lines(text: str, *, first_line: int = 1) -> ReadResult:
    """Parse JSONL text. Corrupt lines become problems; nothing raises."""
    from agent.events import event_from_json

    result = ReadResult()
    lines = text.split("\n")
    # A file that ends with "\n" splits into a trailing "": the last line is whole.
    last_is_whole = lines[-1] == ""
    if last_is_whole:
        lines.pop()
    for offset, line in enumerate(lines):
        number = first_line + offset
        if not line.strip():
            continue
        try:
            result.events.append(event_from_json(line))
            result.lines.append(number)
        except ValueError as exc:
            is_last = offset == len(lines) - 1
            if is_last and not last_is_whole:
                result.torn_tail = line
                result.problems.append(
                    ReadProblem(number, "torn last line (writer stopped mid-line)")
                )
            else:
                result.problems.append(ReadProblem(number, f"unreadable line: {exc}"))
    return result


def with_unreadable_rows(result: ReadResult) -> list[Event]:
    """The events, with a warning in place of each line that could not be read.

    For renderers: the rows say where the log is damaged (the lines stay in the
    file). These warnings are never written anywhere.
    """
    if not result.problems:
        return list(result.events)
    out: list[Event] = []
    problems = iter(result.problems)
    problem = next(problems, None)
    for line, event in zip(result.lines, result.events, strict=True):
        while problem is not None and problem.line < line:
            out.append(unreadable_row(problem.reason, problem.line))
            problem = next(problems, None)
        out.append(event)
    while problem is not None:
        out.append(unreadable_row(problem.reason, problem.line))
        problem = next(problems, None)
    return out


def unreadable_row(reason: str, line: int | None = None) -> Event:
    """A warning to show where a line of the log could not be read."""
    from agent.events import Event, SessionWarningData

    where = f"events.jsonl line {line}" if line is not None else "events.jsonl"
    message = f"{where}: {reason} (the line is kept in the file)"
    return Event.new(SessionWarningData(warning_type="unreadable_line", message=message), None)


def read_events(path: Path) -> ReadResult:
    """Read a whole ``events.jsonl`` (a folder holding one is accepted too)."""
    if path.is_dir():
        path = path / EVENTS_FILE
    return parse_lines(path.read_text(encoding="utf-8", errors="replace"))


def set_aside_torn_tail(path: Path) -> Path | None:
    """Move an unterminated, unparseable last line out of ``path`` before appending.

    Appending after a torn line would glue a new event onto it. The fragment is
    kept beside the log (nothing lost) and the log is cut back to its last newline.
    Returns where the fragment went, or None when the tail was sound.
    """
    from agent.events import event_from_json

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


# --- writing -------------------------------------------------------------------

Deliver = Callable[[list["Event"]], None]


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
    bytes of the failed batch are cut back to its last whole line, and later events
    are still delivered, never written.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # Set by the owner before the first append: who gets the events once written.
        self.deliver: Deliver = _drop
        self.on_failure: Callable[[LogWriteError], None] | None = None
        self._queue: list[tuple[Event, str | None]] = []
        self._in_flight = False  # a batch taken from the queue is not delivered yet
        self._sync_wanted = False
        self._dirty = False  # written since the last fsync
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        # Sequence numbers of queued events: appended, written, known fsynced.
        self._seq = self._written = self._synced = 0
        self._sync_waiters: list[tuple[int, asyncio.Future[None]]] = []
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

        ``durable`` asks for an fsync after the batch that holds it.
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
                self._written = upto
                self._in_flight = False
                try:
                    self.deliver([event for event, _ in batch])
                except Exception:  # the writer must go on: drain and close wait for it
                    log.exception("delivering events failed")
            if (self._sync_wanted or self._sync_waiters) and self._fsyncing is None:
                self._sync_wanted = False
                if self._dirty and self.error is None:
                    # In the background: later batches are written and delivered
                    # meanwhile, not held behind the disk's flush.
                    self._fsyncing = asyncio.create_task(self._fsync(self._written))
                else:
                    self._synced = self._written
                    self._release_sync_waiters()
            if not (self._queue or self._sync_waiters or self._sync_wanted or self._fsyncing):
                self._idle.set()
                if self._closing:
                    return

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
        """Wait until everything appended so far is written and delivered."""
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
        self._wake.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
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


# --- the store -----------------------------------------------------------------


@dataclass(slots=True)
class SessionSummary:
    id: str
    path: Path
    started: str = ""
    updated: str = ""
    cwd: str = ""
    model: str = ""
    mode: str = "interactive"
    turns: int = 0
    first_prompt: str = ""
    title: str = ""  # set by /rename (session.title_changed)
    tool_calls: int = 0
    # completed / error / aborted / stopped / in progress / interrupted (process gone)
    outcome: str = "in progress"
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    # A fork's origin, e.g. "copilot 6a23e131" (the metadata's ``forkedFrom``).
    origin: str = ""

    @property
    def duration(self) -> float | None:
        """Seconds from start to the last recorded activity."""
        try:
            start = datetime.fromisoformat(self.started)
            end = datetime.fromisoformat(self.updated)
            return max(0.0, (end - start).total_seconds())
        except (ValueError, TypeError):  # TypeError: one stamp has a zone, the other not
            return None


class SessionNotFound(LookupError):
    pass


class ForeignSession(SessionNotFound):
    """A session folder that is not loopdeck's to write (it leads out of the store)."""


def is_session_name(text: str) -> bool:
    """Whether ``text`` can name a folder in the store: one path component, so that
    no id (an absolute path, ``..``) can lead a write out of the store."""
    return bool(text) and text not in (".", "..") and "/" not in text and "\0" not in text


class SessionStore:
    """The ``session-state`` folder under a loopdeck home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.root = home / "session-state"
        # Summaries read from logs without metadata, kept between listings (Copilot's).
        self.listing_cache: ListingCache | None = None

    def session_dir(self, session_id: str) -> Path:
        if not is_session_name(session_id):
            raise SessionNotFound(f"not a session id: {session_id!r}")
        return self.root / session_id

    def owns(self, session_id: str) -> bool:
        """Whether the session's folder really is in this store: a folder (or its
        log) that is a link to somewhere else is not ours to write."""
        folder = self.session_dir(session_id)
        try:
            root = self.root.resolve(strict=True)
            inside = folder.resolve(strict=True)
            log_file = (folder / EVENTS_FILE).resolve()
        except (OSError, RuntimeError):
            return False
        return inside.parent == root and log_file.parent == inside

    def check_owned(self, session_id: str) -> None:
        """Raise :class:`ForeignSession` when the session's folder leads out of the
        store (a missing one is left to the caller's own error)."""
        if os.path.lexists(self.session_dir(session_id)) and not self.owns(session_id):
            raise ForeignSession(
                f"{self.session_dir(session_id)} leads out of {self.root}: loopdeck writes "
                "only in its own store (resume it by its path to continue it as a new session)"
            )

    def id_of_path(self, path: Path) -> str | None:
        """The id of the session whose folder (or ``events.jsonl``) ``path`` is, when
        it is one of this store's own; None for anything else."""
        folder = path.parent if path.name == EVENTS_FILE and not path.is_dir() else path
        try:
            target = folder.resolve(strict=True)
            root = self.root.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if target.parent != root or not (target / EVENTS_FILE).is_file():
            return None
        return target.name if self.owns(target.name) else None

    def events_path(self, session_id: str) -> Path:
        return self.session_dir(session_id) / EVENTS_FILE

    async def open_writer(self, session_id: str) -> SessionWriter:

        self.check_owned(session_id)
        make_private_dirs(self.root)
        with contextlib.suppress(OSError):
            os.chmod(self.home, 0o700)
        writer = SessionWriter(self.events_path(session_id))
        await writer.open()
        return writer

    def write_meta(self, session_id: str, meta: dict[str, Any]) -> None:
        self.check_owned(session_id)
        path = self.session_dir(session_id) / META_FILE
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(meta, fh, indent=2)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a full disk: no half-written file left beside the log
            raise

    def read_meta(self, session_id: str) -> dict[str, Any]:
        """The metadata file, or {} when it is missing, unreadable or not an object."""
        try:
            data = json.loads((self.session_dir(session_id) / META_FILE).read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        return data if isinstance(data, dict) else {}

    def _ids(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            if (entry / EVENTS_FILE).is_file():
                yield entry.name

    def list_sessions(self) -> list[SessionSummary]:
        """Every session, most recently updated first."""
        out = [self.summary(sid) for sid in self._ids()]
        out.sort(key=lambda s: s.updated or s.started, reverse=True)
        if self.listing_cache is not None:
            self.listing_cache.save({str(s.path) for s in out})
        return out

    def summary(self, session_id: str) -> SessionSummary:
        path = self.events_path(session_id)
        meta = self.read_meta(session_id)
        summary = SessionSummary(id=session_id, path=path)
        if meta and _meta_fits(meta):
            summary.started = str(meta.get("startedAt", ""))
            summary.updated = str(meta.get("updatedAt", ""))
            summary.cwd = str(meta.get("cwd", ""))
            summary.model = str(meta.get("model", ""))
            summary.mode = str(meta.get("mode", "interactive"))
            summary.turns = int(meta.get("turns", 0))
            summary.first_prompt = str(meta.get("firstPrompt", ""))
            summary.origin = _origin(meta.get("forkedFrom"))
            summary.title = str(meta.get("title") or "")
            if "outcome" in meta:
                summary.tool_calls = int(meta.get("toolCalls", 0))
                summary.input_tokens = _int(meta.get("inputTokens"))
                summary.output_tokens = _int(meta.get("outputTokens"))
                summary.cost = _float(meta.get("cost"))
                summary.outcome = str(meta["outcome"])
                if summary.outcome == "in progress" and not pid_alive(meta.get("pid")):
                    summary.outcome = "interrupted"  # its process is gone
                return summary
        # No (or older) metadata, or a foreign log: the log itself tells (read cheaply:
        # only the lines summarize_events reads are parsed), unless it has not changed
        # since the last listing read it.
        cache = self.listing_cache
        cached = cache.get(session_id, path) if cache is not None else None
        if cached is not None:
            return cached
        from agent.log_scan import listing_events

        events, first, last = listing_events(path, LISTING_TYPES)
        # A log without session.start began with its first line (summarize_events says
        # the same of the events it reads).
        summary = summarize_events(events, SessionSummary(id=session_id, path=path, started=first))
        summary.updated = last or summary.updated
        if cache is not None:
            cache.put(path, summary)
        return summary

    def resolve(self, id_or_prefix: str) -> str:
        """A full id from an id or a unique prefix of one (never a path)."""
        if not is_session_name(id_or_prefix):
            raise SessionNotFound(f"{id_or_prefix!r} is not a session id or prefix")
        if (self.root / id_or_prefix / EVENTS_FILE).is_file():
            return id_or_prefix
        matches = [sid for sid in self._ids() if sid.startswith(id_or_prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionNotFound(f"no session matches {id_or_prefix!r} in {self.root}")
        shown = ", ".join(sorted(m[:12] for m in matches)[:5])
        raise SessionNotFound(f"{id_or_prefix!r} matches {len(matches)} sessions ({shown}…)")

    def latest(self, cwd: Path | None = None) -> str:
        """The most recent session (of ``cwd`` when given)."""
        sessions = self.list_sessions()
        if cwd is not None:
            sessions = [s for s in sessions if s.cwd == str(cwd)]
            if not sessions:
                raise SessionNotFound(
                    f"no sessions in {cwd} yet (loopdeck sessions --all lists the others)"
                )
        if not sessions:
            raise SessionNotFound(f"no sessions yet in {self.root}")
        return sessions[0].id

    def delete(self, session_id: str) -> None:
        self.check_owned(session_id)
        shutil.rmtree(self.session_dir(session_id))


# The types summarize_events reads (and those that may close what is open): a listing
# parses only lines of these types (agent/log_scan.py). A case added there needs its
# type here.
LISTING_TYPES = frozenset(
    {
        "session.start",
        "session.resume",
        "session.shutdown",
        "session.mode_changed",
        "session.task_complete",
        "session.title_changed",
        "session.error",
        "session.autopilot_stopped",
        "session.usage_checkpoint",
        "user.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.message",
        "tool.execution_complete",
        "permission.requested",
        "permission.completed",
        "abort",
        "result",  # the end of a `copilot -p` run (agent/stream_fold.py)
    }
)


def summarize_events(events: list[Event], summary: SessionSummary) -> SessionSummary:
    from agent.events import (
        AbortData,
        AssistantMessageData,
        AssistantTurnEndData,
        AssistantTurnStartData,
        SessionAutopilotStoppedData,
        SessionErrorData,
        SessionModeChangedData,
        SessionResumeData,
        SessionShutdownData,
        SessionStartData,
        SessionTaskCompleteData,
        SessionTitleChangedData,
        SessionUsageCheckpointData,
        ToolExecutionCompleteData,
        UserMessageData,
    )
    from agent.stream_fold import run_result_of
    from agent.usage import totals_of

    open_turn = False
    checkpointed = False
    message_tokens = 0  # what a log without usage checkpoints says (as replay shows it)
    for event in events:
        if event.agent_id is not None:
            continue  # a sub-agent's run: its prompt, turns and calls are not the session's
        match event.data:
            case SessionStartData(start_time=started, context=ctx, selected_model=model):
                if open_turn:  # a second session in one file: the first one's turn is over
                    summary.outcome, open_turn = "interrupted", False
                summary.started = started
                summary.cwd = ctx.cwd if ctx else ""
                summary.model = model or ""
            case SessionShutdownData() | SessionResumeData() if open_turn:
                # The process ended (or was replaced) mid-turn: the turn never finishes.
                summary.outcome, open_turn = "interrupted", False
            case SessionTitleChangedData(title=title):
                summary.title = title
            case UserMessageData(content=content, agent_mode=mode):
                if not summary.first_prompt:
                    summary.first_prompt = content
                if mode and mode != "shell":
                    summary.mode = mode
            case SessionModeChangedData(new_mode=mode):
                summary.mode = mode
            case AssistantTurnStartData():
                summary.turns += 1
                open_turn = True
            case AssistantTurnEndData():
                open_turn = False
            case ToolExecutionCompleteData(is_user_requested=by_user) if not by_user:
                summary.tool_calls += 1  # the model's calls: a user's !command is none
            case SessionTaskCompleteData():
                summary.outcome = "completed"
            case SessionErrorData():
                summary.outcome = "error"
            case AbortData():
                summary.outcome = "aborted"
            case SessionAutopilotStoppedData():
                summary.outcome = "stopped"
            case AssistantMessageData(tool_requests=requests, output_tokens=out, model=model):
                message_tokens += out or 0
                if not requests:
                    summary.outcome = "completed"
                if model and not summary.model:
                    summary.model = model  # a log without session.start (Copilot's -p output)
            case SessionUsageCheckpointData() as checkpoint if (
                "provider_model_metrics" in checkpoint.model_fields_set  # else it counts nothing
            ):
                checkpointed = True
                totals = totals_of(checkpoint)  # cumulative: the latest one is the session's
                summary.input_tokens, summary.output_tokens = (
                    totals.input_tokens,
                    totals.output_tokens,
                )
                summary.cost = totals.cost
            case _:
                run = run_result_of(event)
                if run is not None:  # the end of a `copilot -p` run: nothing is left open
                    open_turn = False
                    if run.exit_code:
                        summary.outcome = "error"
        if event.timestamp:
            summary.started = summary.started or event.timestamp
            summary.updated = event.timestamp
    if open_turn:
        summary.outcome = "in progress"
    if not checkpointed:
        summary.output_tokens = message_tokens
    return summary


def _origin(value: object) -> str:
    """The metadata's ``forkedFrom`` as a short label: producer and id prefix."""
    if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
        return ""
    producer = value.get("producer")
    who = {"copilot-agent": "copilot"}.get(producer, producer) if isinstance(producer, str) else ""
    return f"{who or 'fork of'} {value['sessionId'][:8]}"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


_META_TYPES: dict[str, type | tuple[type, ...]] = {
    "startedAt": str,
    "updatedAt": str,
    "cwd": str,
    "model": str,
    "mode": str,
    "turns": int,
    "firstPrompt": str,
    "toolCalls": int,
    "outcome": str,
    "pid": (int, type(None)),
}


def _meta_fits(meta: dict[str, Any]) -> bool:
    """Whether every field the listing reads has its type; a damaged metadata file is
    ignored and the listing reads the log instead."""
    for key, kind in _META_TYPES.items():
        value = meta.get(key)
        if key in meta and (not isinstance(value, kind) or isinstance(value, bool)):
            return False
    return True


def make_private_dirs(path: Path) -> None:
    """``mkdir -p`` where every folder it creates is 0700 (``Path.mkdir`` gives the
    parents the umask's mode)."""
    missing: list[Path] = []
    for part in (path, *path.parents):
        if part.exists():
            break
        missing.append(part)
    for part in reversed(missing):
        part.mkdir(exist_ok=True, mode=0o700)


def pid_alive(pid: object) -> bool:
    """Whether a process with this pid exists (one we may not signal counts)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    return True
