"""``session.eventLog.*``: an app pages through a hosted session's events with a cursor.

The events are the session's durable ones, in order (what its ``events.jsonl``
holds, kept by the hosted session); ephemeral ones (deltas) are not kept, so a
read never returns them. A cursor is ``f:N`` (forward: the next read starts at
event N) or ``b:N`` (backward: the next read ends before event N); one that no
longer fits (the history was truncated) or cannot be read is ``expired`` and the
read starts again from the boundary. A forward read at the tail may wait
(``waitMs``, at most 30 s) for the next event.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from agent.events.base import Event
from app.server.rpc import INVALID_PARAMS, RpcError

MAX_WAIT_MS = 30_000
DEFAULT_MAX = 200


class EventLog:
    """The reader's side of a hosted session's events."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events  # shared with the hosted session, which appends to it
        self._waiters: list[asyncio.Future[None]] = []
        self.interests: dict[str, str] = {}  # handle -> event type

    def appended(self) -> None:
        """A new durable event: wake the reads waiting at the tail."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def tail(self) -> dict[str, Any]:
        return {"cursor": f"f:{len(self.events)}"}

    async def read(self, params: dict[str, Any]) -> dict[str, Any]:
        limit = _limit(params.get("max"))
        wanted = _types(params.get("types"))
        scope = params.get("agentScope")
        agents = params.get("agentIds") if isinstance(params.get("agentIds"), list) else None
        cursor = params.get("cursor")
        backward = params.get("direction") == "backward"
        status = "ok"
        if isinstance(cursor, str) and cursor:
            position = _position(cursor)
            if position is None or position[1] > len(self.events):
                status, position = "expired", None
            else:
                backward = position[0] == "b"
        else:
            position = None

        def keep(event: Event) -> bool:
            if wanted is not None and event.type not in wanted:
                return False
            if agents is not None:
                return event.agent_id in agents
            # "primary": the main agent's events, and the sub-agents' own lifecycle.
            return scope != "primary" or not event.agent_id or event.type.startswith("subagent.")

        if backward:
            end = len(self.events) if position is None else position[1]
            picked: list[Event] = []
            start = end
            while start > 0 and len(picked) < limit:
                start -= 1
                if keep(self.events[start]):
                    picked.append(self.events[start])
            picked.reverse()
            return _result(picked, f"b:{start}", status, has_more=start > 0)

        start = 0 if position is None else position[1]
        wait_ms = params.get("waitMs")
        wait_s = 0.0
        if isinstance(wait_ms, int) and not isinstance(wait_ms, bool) and wait_ms > 0:
            wait_s = min(wait_ms, MAX_WAIT_MS) / 1000
        loop = asyncio.get_running_loop()
        # One bound for the whole request, however many events of other types arrive.
        deadline = loop.time() + wait_s
        while True:
            if start >= len(self.events) and (left := deadline - loop.time()) > 0:
                await self._wait(left)
            picked = []
            index = start
            while index < len(self.events) and len(picked) < limit:
                if keep(self.events[index]):
                    picked.append(self.events[index])
                index += 1
            if picked or wanted is None or deadline - loop.time() <= 0:
                break
            start = index  # only other types arrived: wait on past them
        return _result(picked, f"f:{index}", status, has_more=index < len(self.events))

    async def _wait(self, seconds: float) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, seconds)
        finally:
            if waiter in self._waiters:  # timed out: not left for the next event
                self._waiters.remove(waiter)

    def register(self, params: dict[str, Any]) -> dict[str, Any]:
        etype = params.get("eventType")
        if not isinstance(etype, str) or not etype:
            raise RpcError(INVALID_PARAMS, "eventType must be a non-empty string")
        handle = uuid.uuid4().hex
        self.interests[handle] = etype
        return {"handle": handle}

    def release(self, params: dict[str, Any]) -> dict[str, Any]:
        handle = params.get("handle")
        if isinstance(handle, str):
            self.interests.pop(handle, None)
        return {"success": True}  # releasing twice is no error


def _limit(raw: Any) -> int:
    if raw is None:
        return DEFAULT_MAX
    if not isinstance(raw, int) or isinstance(raw, bool) or not 1 <= raw <= 1000:
        raise RpcError(INVALID_PARAMS, "max must be a whole number from 1 to 1000")
    return raw


def _types(raw: Any) -> set[str] | None:
    if raw is None or raw == "*":
        return None
    if isinstance(raw, list) and raw and all(isinstance(t, str) for t in raw):
        return set(raw)
    raise RpcError(INVALID_PARAMS, "types must be '*' or a non-empty list of event types")


def _position(cursor: str) -> tuple[str, int] | None:
    kind, _, number = cursor.partition(":")
    if kind not in ("f", "b") or not number.isdigit():
        return None
    return kind, int(number)


def _result(events: list[Event], cursor: str, status: str, *, has_more: bool) -> dict[str, Any]:
    return {
        "events": [e.wire() for e in events],
        "cursor": cursor,
        "cursorStatus": status,
        "hasMore": has_more,
    }
