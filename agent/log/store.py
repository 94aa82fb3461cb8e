"""Session-state folders: ``$LOOPDECK_HOME/session-state/<id>/events.jsonl``.

One writer per session appends persisted events in batches
(:class:`~agent.log.writer.SessionWriter`). The reader tolerates what crashes
leave behind: a torn last line, blank lines, corrupt lines and unknown event types.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.events.schema import Event
    from agent.log.listing_cache import ListingCache
    from agent.log.writer import SessionWriter

from agent.log.places import EVENTS_FILE, META_FILE, make_private_dirs
from agent.log.session_row import SessionSummary

# The event models (pydantic) are imported where events are read or written, not
# here: a listing of sessions with metadata never needs them (their import costs
# more than the whole listing).

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
    from agent.events.schema import event_from_json

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
    from agent.events.schema import Event, SessionWarningData

    where = f"events.jsonl line {line}" if line is not None else "events.jsonl"
    message = f"{where}: {reason} (the line is kept in the file)"
    return Event.new(SessionWarningData(warning_type="unreadable_line", message=message), None)


def read_events(path: Path) -> ReadResult:
    """Read a whole ``events.jsonl`` (a folder holding one is accepted too)."""
    if path.is_dir():
        path = path / EVENTS_FILE
    return parse_lines(path.read_text(encoding="utf-8", errors="replace"))


# --- the store -----------------------------------------------------------------


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
        from agent.log.writer import SessionWriter

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
        # only the lines summarize_events reads are parsed, as plain JSON), unless it
        # has not changed since the last listing read it.
        cache = self.listing_cache
        cached = cache.get(session_id, path) if cache is not None else None
        if cached is not None:
            return cached
        from agent.log.scan import listing_events
        from agent.log.summary import LISTING_TYPES, summarize_events

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
