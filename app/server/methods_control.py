"""``session.suspend | shutdown | metadata.isProcessing | permissions.setApproveAll |
permissions.resetSessionApprovals``: running a hosted session from the app.

Suspend stops the work in flight (a model call, a tool, a question the app has
not answered), waits for the turn to end and makes the log durable, so a later
client resumes where it stopped. Shutdown does that, records ``session.shutdown``
and ends the hosted session.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import Any

from agent.events.base import Event
from agent.events.session import SessionShutdownData
from app.server.bridge import HostedSession
from app.server.rpc import INVALID_PARAMS, Connection, RpcError
from app.server.runtime_base import RuntimeBase

_SETTLE = 30.0  # how long a stopped turn may take to reach idle


class ControlMethods(RuntimeBase):
    """Stopping, ending and steering a hosted session."""

    async def session_suspend(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        await _stop_work(hosted)
        await hosted.session.persist()
        return None

    async def session_shutdown(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        kind = params.get("type") or "routine"
        if kind not in ("routine", "error"):
            raise RpcError(INVALID_PARAMS, "type must be routine or error")
        await _stop_work(hosted)
        session = hosted.session
        session.emit(
            SessionShutdownData(shutdown_type=kind, session_start_time=_millis(session.started_at))
        )
        await session.persist()
        self.sessions.pop(hosted.id, None)
        await hosted.hooks.session_end("error" if kind == "error" else "complete")
        await hosted.close()
        return None

    async def metadata_is_processing(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"processing": self._hosted(params).session.busy}

    async def permissions_set_approve_all(self, conn: Connection, params: dict[str, Any]) -> Any:
        enabled = params.get("enabled")
        if not isinstance(enabled, bool):
            raise RpcError(INVALID_PARAMS, "enabled must be true or false")
        self._hosted(params).session.permissions.policy.allow_all = enabled
        return {"success": True}

    async def permissions_reset_approvals(self, conn: Connection, params: dict[str, Any]) -> Any:
        policy = self._hosted(params).session.permissions.policy
        policy.approved_commands.clear()
        policy.approved_tools.clear()
        policy.approved_writes = False
        return {"success": True}


async def _stop_work(hosted: HostedSession) -> None:
    """Abort the running turn, if any, and wait for the session to go idle."""
    session = hosted.session
    if not session.busy:
        return
    idle = asyncio.get_running_loop().create_future()

    def on_event(event: Event) -> None:
        if event.type == "session.idle" and not idle.done():
            idle.set_result(None)

    unsubscribe = session.subscribe(on_event)
    try:
        session.abort()
        if session.busy:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(idle, _SETTLE)
    finally:
        unsubscribe()


def _millis(iso: str) -> int:
    try:
        return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0
