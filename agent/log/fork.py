"""Forking a session loopdeck does not own into a new session of its own store.

A GitHub Copilot CLI session (or any ``events.jsonl`` outside loopdeck's store) is
never written to: resuming one makes a new loopdeck session whose log is

1. its own ``session.start`` (the new id, the model that continues, the workspace),
2. ``session.handoff`` naming the origin (its session id and the path of its log),
3. the origin's events, copied byte for byte,

and then whatever the new session does (``Session.resume`` closes what the origin
left open and appends ``session.resume``). Copying rather than referring keeps the
fork whole: replay, export and the model's history read one file, and the origin
can change or vanish later without changing the fork. The origin is opened for
reading only, once.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agent import __version__
from agent.events.base import now_iso
from agent.events.schema import (
    Event,
    SessionHandoffData,
    SessionStartData,
    SessionWarningData,
    WorkingDirectoryContext,
)
from agent.log.places import EVENTS_FILE, make_private_dirs
from agent.log.store import SessionStore

# The producer names loopdeck shows for an origin's ``session.start`` producer.
_PRODUCERS = {"copilot-agent": "GitHub Copilot CLI", "loopdeck": "loopdeck"}


@dataclass(frozen=True, slots=True)
class ForkOrigin:
    """What a fork records about the session it continues."""

    path: Path  # the origin's events.jsonl
    session_id: str
    producer: str  # its session.start's producer ("copilot-agent"), or ""
    cwd: str  # its session.start's working directory, or ""

    @property
    def label(self) -> str:
        return _PRODUCERS.get(self.producer, self.producer or "another program's")

    def meta(self) -> dict[str, str]:
        """The ``forkedFrom`` entry of the fork's metadata file."""
        return {
            "sessionId": self.session_id,
            "producer": self.producer,
            "path": str(self.path),
        }


@dataclass(frozen=True, slots=True)
class Fork:
    session_id: str
    origin: ForkOrigin
    copied: int  # events copied from the origin
    skipped: int  # lines of the origin that are not events (left out, with a warning)


def origin_of(path: Path, data: bytes | None = None) -> ForkOrigin:
    """The origin's id, producer and workspace, from its first ``session.start``."""
    if data is None:
        with path.open("rb") as fh:
            data = fh.read(1 << 20)  # session.start is the first line: far less than this
    session_id, producer, cwd = path.parent.name, "", ""
    for raw in data.split(b"\n"):
        obj = _envelope(raw)
        if obj is None or obj["type"] != "session.start":
            continue
        start = obj["data"]
        session_id = _text(start.get("sessionId")) or session_id
        producer = _text(start.get("producer"))
        context = start.get("context")
        cwd = _text(context.get("cwd")) if isinstance(context, dict) else ""
        break
    return ForkOrigin(path=path, session_id=session_id, producer=producer, cwd=cwd)


def fork_cwd(origin: ForkOrigin, fallback: Path) -> Path:
    """Where the fork works: the origin's workspace when it exists here, else ``fallback``."""
    if origin.cwd and "\0" not in origin.cwd:
        recorded = Path(origin.cwd)
        if recorded.is_absolute() and recorded.is_dir():
            return recorded
    return fallback


def fork_session(store: SessionStore, source: Path, *, model: str, cwd: Path) -> Fork:
    """Write a new session into ``store`` that continues the log at ``source``.

    ``source`` is read once, line by line (a log of any size), and never written.
    Returns the new session; its log is complete (written to a temporary name,
    synced, then renamed) before it exists under its id, so a crash leaves no
    half-copied session.
    """
    origin = origin_of(source)
    fork_id = str(uuid.uuid4())
    started = now_iso()
    start = Event.new(
        SessionStartData(
            session_id=fork_id,
            copilot_version=__version__,
            start_time=started,
            selected_model=model,
            context=WorkingDirectoryContext(cwd=str(cwd)),
        ),
        None,
    )
    handoff = Event.new(
        SessionHandoffData(
            handoff_time=started,
            source_type="local",
            remote_session_id=origin.session_id,
            context=str(source),
            summary=(
                f"Forked from {origin.label} session {origin.session_id}; "
                "its files are left as they were."
            ),
        ),
        start.id,
    )
    folder = store.session_dir(fork_id)
    make_private_dirs(folder)
    copied = 0
    notes: list[str] = []
    with _new_file(folder / EVENTS_FILE) as out, source.open("rb") as lines:
        out.write(_line(start) + _line(handoff))
        for number, raw in enumerate(lines, start=1):
            body = raw.rstrip(b"\r\n")
            if not body.strip():
                continue
            if _envelope(body) is None:
                notes.append(f"line {number}")  # not an event (or torn mid-write)
                continue
            out.write(body + b"\n")
            copied += 1
        if notes:
            more = f" and {len(notes) - 5} more" if len(notes) > 5 else ""
            warning = SessionWarningData(
                warning_type="fork_skipped_lines",
                message=(
                    f"{source}: {', '.join(notes[:5])}{more} not copied (not a session "
                    "event); they are still in the original"
                ),
            )
            out.write(_line(Event.new(warning, None)))
    store.write_meta(
        fork_id,
        {
            "id": fork_id,
            "cwd": str(cwd),
            "startedAt": started,
            "updatedAt": started,
            "producer": "loopdeck",
            "forkedFrom": origin.meta(),
        },
    )
    return Fork(fork_id, origin, copied, len(notes))


def _envelope(raw: bytes) -> dict[str, Any] | None:
    """The parsed line when it is a whole event envelope (what the official parser
    reads: a type, a data object, an id and a timestamp), else None."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    fields = (obj.get("type"), obj.get("id"), obj.get("timestamp"))
    if not all(isinstance(value, str) for value in fields) or not isinstance(obj.get("data"), dict):
        return None
    return obj


def _line(event: Event) -> bytes:
    return (event.to_json() + "\n").encode("utf-8")


@contextlib.contextmanager
def _new_file(path: Path) -> Iterator[BinaryIO]:
    """A file written under a temporary name, synced and renamed to ``path`` when the
    block ends without error (removed when it fails)."""
    tmp = path.with_name(f".{path.name}.fork-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def fork_log(store: SessionStore, session_id: str, *, model: str, cwd: Path) -> str:
    """``/fork``: a new session of ``store`` that starts with session ``session_id``'s
    history (its log copied after the new start and a handoff naming it); the
    original is only read. Returns the new session's id."""
    return fork_session(store, store.events_path(session_id), model=model, cwd=cwd).session_id
