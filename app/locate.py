"""Finding a recorded session from what a user types: an id, a prefix, or a path."""

from __future__ import annotations

from pathlib import Path

from agent.replay import copilot_home, events_file
from agent.store import SessionNotFound, SessionStore, loopdeck_home


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
