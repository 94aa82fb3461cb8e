"""``/fork``: a new session that starts with this one's history.

The new log is a copy of this one's persisted events under a fresh
``session.start``; the original folder is only read, never changed.
"""

from __future__ import annotations

import os
import uuid

from agent.events import Event, SessionStartData, now_iso
from agent.store import EVENTS_FILE, SessionStore, make_private_dirs, read_events


def fork_log(store: SessionStore, session_id: str) -> str:
    """Copy session ``session_id``'s log into a new session; return the new id."""
    events = read_events(store.events_path(session_id)).events
    new_id = str(uuid.uuid4())
    start_data: SessionStartData | None = None
    for event in events:
        if isinstance(event.data, SessionStartData):
            start_data = event.data.model_copy(
                update={"session_id": new_id, "start_time": now_iso()}
            )
            break
    if start_data is None:
        raise ValueError(f"session {session_id} has no session.start to fork from")
    start = Event.new(start_data, None)
    lines = [start.to_json()]
    previous = start.id
    first = True
    for event in events:
        if isinstance(event.data, SessionStartData):
            continue
        if first:
            # The chain hangs off the new start instead of the old one.
            event = event.model_copy(update={"parent_id": previous})
            first = False
        lines.append(event.to_json())
    folder = store.session_dir(new_id)
    make_private_dirs(folder)
    path = folder / EVENTS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    meta = store.read_meta(session_id)
    if meta:  # the listing shows the fork before it is first written to
        store.write_meta(new_id, {**meta, "id": new_id, "startedAt": start_data.start_time})
    return new_id
