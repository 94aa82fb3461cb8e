"""``session.lifecycle`` notifications: every client of the runtime hears when a
session is created, updated or deleted, whichever connection did it.

"Updated" follows the session's own state changes (mode, model, title, plan,
compaction) and the end of each turn (``session.idle``), not every event.
"""

from __future__ import annotations

import time
from typing import Any

from agent.events.base import Event
from agent.session.session import Session
from app.server.rpc import Connection

# The events after which a session counts as updated.
_UPDATING = frozenset(
    {
        "session.idle",
        "session.mode_changed",
        "session.model_change",
        "session.title_changed",
        "session.plan_changed",
        "session.compaction_complete",
        "session.context_cleared",
    }
)


class Lifecycle:
    """The runtime's connections, and what each hears of the sessions' lives."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []

    def join(self, conn: Connection) -> None:
        if conn not in self.connections:
            self.connections.append(conn)

    def leave(self, conn: Connection) -> None:
        if conn in self.connections:
            self.connections.remove(conn)

    def announce(self, kind: str, session_id: str, session: Session | None = None) -> None:
        params: dict[str, Any] = {"type": kind, "sessionId": session_id}
        if session is not None:
            now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
            metadata: dict[str, Any] = {"startTime": session.started_at, "modifiedTime": now}
            if session.title:
                metadata["summary"] = session.title
            params["metadata"] = metadata
        for conn in list(self.connections):
            if not conn.closed:
                conn.notify("session.lifecycle", params)

    def on_event(self, session: Session, event: Event) -> None:
        if not event.ephemeral and event.type in _UPDATING:
            self.announce("session.updated", session.id, session)
