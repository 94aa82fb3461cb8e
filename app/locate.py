"""Finding a recorded session from what a user types: an id, a prefix, or a path."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from agent.log.places import copilot_home, loopdeck_home
from agent.log.replay import events_file
from agent.log.store import SessionNotFound, SessionStore


def locate_session(spec: str) -> Path:
    """The ``events.jsonl`` of a loopdeck or Copilot CLI session."""
    path = Path(spec).expanduser()
    if path.exists():
        found = events_file(path)
        if not found.is_file():
            raise SessionNotFound(f"{path} holds no events.jsonl")
        return found
    problems: list[str] = []
    for store in (SessionStore(loopdeck_home()), SessionStore(copilot_home())):
        try:
            return store.events_path(store.resolve(spec))
        except SessionNotFound as exc:
            problems.append(str(exc))
    # Ambiguity is worth reporting as is; otherwise say where we looked.
    ambiguous = [p for p in problems if "matches" in p and "sessions" in p]
    if ambiguous:
        raise SessionNotFound(ambiguous[0])
    raise SessionNotFound(
        f"no session {spec!r} in {loopdeck_home()} or {copilot_home()} "
        "(give an id, an id prefix, or a path to events.jsonl)"
    )


@dataclass(frozen=True, slots=True)
class ResumeTarget:
    """What ``--resume SPEC`` continues: a session of loopdeck's store, resumed in
    place (``session_id``), or a log anywhere else, forked (``fork_from``)."""

    session_id: str | None = None
    fork_from: Path | None = None  # an events.jsonl loopdeck never writes to


def resume_target(spec: str, store: SessionStore) -> ResumeTarget:
    """An id or prefix of loopdeck's sessions, then of Copilot CLI's, or a path.

    Only a session whose folder really is in ``store`` is resumed in place; anything
    else (a Copilot session, a log copied elsewhere, a link out of the store) is
    forked into a new session, so nothing outside the store is ever written.
    """
    path = Path(spec).expanduser()
    if "/" in spec or spec in (".", "..") or path.exists():
        if not path.exists():
            raise SessionNotFound(f"{path}: no such file or folder")
        found = events_file(path)
        if not found.is_file():
            raise SessionNotFound(f"{path} holds no events.jsonl")
        own = store.id_of_path(found)
        return ResumeTarget(session_id=own) if own else ResumeTarget(fork_from=found)
    try:
        session_id = store.resolve(spec)
    except SessionNotFound as exc:
        copilot = SessionStore(copilot_home())
        try:
            return ResumeTarget(fork_from=copilot.events_path(copilot.resolve(spec)))
        except SessionNotFound as copilot_exc:
            if _ambiguous(copilot_exc):
                raise copilot_exc from None
        if _ambiguous(exc):
            raise
        raise SessionNotFound(
            f"no session {spec!r} in {store.root} or {copilot.root} "
            "(give an id, an id prefix, or a path to a folder with an events.jsonl)"
        ) from None
    if not store.owns(session_id):
        return ResumeTarget(fork_from=store.events_path(session_id))
    return ResumeTarget(session_id=session_id)


def _ambiguous(exc: SessionNotFound) -> bool:
    """A prefix that matches several sessions (worth saying as is)."""
    text = str(exc)
    return "matches" in text and "sessions (" in text


def target_of_args(args: argparse.Namespace, store: SessionStore, cwd: Path) -> ResumeTarget | None:
    """What the flags resume (in place) or fork, or None for a new session."""
    if args.continue_ or args.resume == "":
        latest = store.latest(cwd)
        if not store.owns(latest):  # a link out of the store: forked, never written
            return ResumeTarget(fork_from=store.events_path(latest))
        return ResumeTarget(session_id=latest)
    if args.resume:
        return resume_target(args.resume, store)
    return None
