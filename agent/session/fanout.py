"""Who hears a session's events: its subscribers (the app, ``-p``'s printer, an SDK
client), and the backlog kept for the first one that comes late.

Events reach subscribers once written (the writer hands each batch over) or at once
when nothing is written. A subscriber that raises is logged and the others still get
the event: one broken renderer must not stop the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

from agent.events.schema import Event

log = logging.getLogger("agent.session.session")

Subscriber = Callable[[Event], None]


class EventFanout:
    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        # Events from before anyone could subscribe (a resumed log, resume notices),
        # handed to the first ``subscribe(..., replay=True)``; dropped at first send.
        self.backlog: list[Event] | None = []
        # Events already shown when they were emitted (a held opening, written later).
        self._shown: set[str] = set()

    def deliver(self, events: list[Event]) -> None:
        """Hand written events (and the ephemeral ones between them) to subscribers."""
        for event in events:
            if event.id in self._shown:
                self._shown.discard(event.id)  # held, shown when it was emitted
                continue
            # MCP servers' status is ephemeral, yet a subscriber that comes after the
            # servers started (the app's first frame, -p's printer) must see it.
            keep = not event.ephemeral or event.type.startswith("session.mcp_")
            if self.backlog is not None and keep:
                self.backlog.append(event)
            for subscriber in list(self._subscribers):
                try:
                    subscriber(event)
                except Exception:
                    log.exception("event subscriber failed")

    def shown_already(self, event: Event) -> None:
        """``event`` was delivered when it was emitted: its written copy is not again."""
        self._shown.add(event.id)

    def subscribe(self, callback: Subscriber, *, replay: bool = False) -> Callable[[], None]:
        if replay and self.backlog:
            for event in self.backlog:
                callback(event)
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    async def events(self) -> AsyncIterator[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        unsubscribe = self.subscribe(queue.put_nowait)
        try:
            while True:
                yield await queue.get()
        finally:
            unsubscribe()
