"""``session.eventLog.*``: reading a hosted session's events with a cursor
(:mod:`app.server.event_log`)."""

from __future__ import annotations

from typing import Any

from app.server.rpc import Connection
from app.server.runtime_base import RuntimeBase


class HistoryMethods(RuntimeBase):
    """A hosted session's event log, as pages."""

    async def event_log_read(self, conn: Connection, params: dict[str, Any]) -> Any:
        return await self._hosted(params).event_log.read(params)

    async def event_log_tail(self, conn: Connection, params: dict[str, Any]) -> Any:
        return self._hosted(params).event_log.tail()

    async def event_log_register(self, conn: Connection, params: dict[str, Any]) -> Any:
        return self._hosted(params).event_log.register(params)

    async def event_log_release(self, conn: Connection, params: dict[str, Any]) -> Any:
        return self._hosted(params).event_log.release(params)
