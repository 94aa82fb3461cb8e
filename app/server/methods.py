"""The methods of Copilot SDK protocol version 3 that loopdeck serves.

``Runtime.handle`` answers one request; anything not in its table (the one list of
every method served) is JSON-RPC -32601. The connection-level methods are here; a
session's, by namespace, in ``methods_sessions`` (lifecycle and listing),
``methods_messages`` (sending, history, the app's answers), ``methods_state``
(mode, plan, model, todos) and ``methods_mcp`` (``session.mcp.*``), all on
:class:`~app.server.runtime_base.RuntimeBase`:
the sessions, shared by every connection (a TCP runtime can have several clients),
each a :class:`~app.server.bridge.HostedSession`.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent import __version__
from agent.log.store import SessionStore
from agent.models.scripted import SCRIPTED_PREFIX, shipped_script_names
from app.model_setup import SetupError, pick_model
from app.server.bridge import HostedSession
from app.server.methods_control import ControlMethods
from app.server.methods_history import HistoryMethods
from app.server.methods_mcp import McpMethods
from app.server.methods_messages import MessageMethods
from app.server.methods_sessions import SessionMethods
from app.server.methods_state import StateMethods
from app.server.methods_workspace import WorkspaceMethods
from app.server.rpc import METHOD_NOT_FOUND, SERVER_ERROR, Connection, RpcError

PROTOCOL_VERSION = 3

Method = Callable[[Connection, dict[str, Any]], Awaitable[Any]]


class Runtime(
    SessionMethods,
    MessageMethods,
    StateMethods,
    WorkspaceMethods,
    HistoryMethods,
    ControlMethods,
    McpMethods,
):
    """Everything the server knows: its sessions, how to make new ones, and the
    table of the methods it serves."""

    def __init__(
        self,
        *,
        cwd: Path,
        store: SessionStore,
        flags: argparse.Namespace | None = None,
        token: str | None = None,
    ) -> None:
        super().__init__(cwd=cwd, store=store, flags=flags)
        self.token = token
        self.stopping = asyncio.Event()
        self._closing: set[asyncio.Task[None]] = set()
        self._methods: dict[str, Method] = {
            "connect": self.connect,
            "ping": self.ping,
            "status.get": self.status_get,
            "auth.getStatus": self.auth_get_status,
            "models.list": self.models_list,
            "runtime.shutdown": self.runtime_shutdown,
            "session.create": self.session_create,
            "session.resume": self.session_resume,
            "session.send": self.session_send,
            "session.sendAndWait": self.session_send_and_wait,
            "session.abort": self.session_abort,
            "session.getMessages": self.session_get_messages,
            "session.detach": self.session_detach,
            "session.destroy": self.session_detach,
            "session.delete": self.session_delete,
            "session.list": self.session_list,
            "session.getLastId": self.session_get_last_id,
            "session.getMetadata": self.session_get_metadata,
            "session.mode.get": self.session_mode_get,
            "session.mode.set": self.session_mode_set,
            "session.plan.read": self.session_plan_read,
            "session.plan.update": self.session_plan_update,
            "session.plan.delete": self.session_plan_delete,
            "session.model.getCurrent": self.session_model_get_current,
            "session.model.switchTo": self.session_model_switch_to,
            "session.options.update": self.session_options_update,
            "session.log": self.session_log,
            "session.history.compact": self.session_history_compact,
            "session.permissions.handlePendingPermissionRequest": self.permission_answer,
            "session.tools.handlePendingToolCall": self.tool_answer,
            # The todo list (session.todos_changed is only a signal): its rows.
            "session.plan.readSqlTodos": self.todos_read,
            "session.plan.readSqlTodosWithDependencies": self.todos_read_with_dependencies,
            "session.workspaces.getWorkspace": self.workspaces_get,
            "session.workspaces.listFiles": self.workspaces_list_files,
            "session.workspaces.readFile": self.workspaces_read_file,
            "session.workspaces.createFile": self.workspaces_create_file,
            "session.workspaces.saveLargePaste": self.workspaces_save_large_paste,
            "session.workspaces.listCheckpoints": self.workspaces_list_checkpoints,
            "session.workspaces.readCheckpoint": self.workspaces_read_checkpoint,
            "session.name.get": self.name_get,
            "session.name.set": self.name_set,
            "session.name.setAuto": self.name_set_auto,
            "session.metadata.snapshot": self.metadata_snapshot,
            "session.instructions.getSources": self.instructions_get_sources,
            "session.suspend": self.session_suspend,
            "session.shutdown": self.session_shutdown,
            "session.metadata.isProcessing": self.metadata_is_processing,
            "session.permissions.setApproveAll": self.permissions_set_approve_all,
            "session.permissions.resetSessionApprovals": self.permissions_reset_approvals,
            "session.eventLog.read": self.event_log_read,
            "session.eventLog.tail": self.event_log_tail,
            "session.eventLog.registerInterest": self.event_log_register,
            "session.eventLog.releaseInterest": self.event_log_release,
            # session.mcp.*: the session's MCP servers (app/server/methods_mcp.py).
            **self.mcp_methods(),
        }

    # --- dispatch --------------------------------------------------------------

    def methods(self) -> list[str]:
        return sorted(self._methods)

    def attach(self, conn: Connection) -> None:
        conn.on_close.append(self._connection_closed)
        self.lifecycle.join(conn)

    async def handle(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        handler = self._methods.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if self.token is not None and not conn.connected and method != "connect":
            raise RpcError(
                SERVER_ERROR, "AUTHENTICATION_FAILED: connect with the connection token first"
            )
        return await handler(conn, params)

    def _connection_closed(self, conn: Connection) -> None:
        self.lifecycle.leave(conn)
        for session_id, hosted in list(self.sessions.items()):
            if conn in hosted.connections and hosted.detach(conn):
                del self.sessions[session_id]
                self._close_later(hosted)

    def _close_later(self, hosted: HostedSession) -> None:
        task = asyncio.create_task(hosted.close(), name=f"close:{hosted.id[:8]}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close_all(self) -> None:
        hosted_all = list(self.sessions.values())
        self.sessions.clear()
        for hosted in hosted_all:
            await hosted.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    # --- connection ----------------------------------------------------------

    async def connect(self, conn: Connection, params: dict[str, Any]) -> Any:
        if self.token is not None and params.get("token") != self.token:
            raise RpcError(SERVER_ERROR, "AUTHENTICATION_FAILED: invalid connection token")
        conn.connected = True
        return {"ok": True, "protocolVersion": PROTOCOL_VERSION, "version": __version__}

    async def ping(self, conn: Connection, params: dict[str, Any]) -> Any:
        message = params.get("message")
        return {
            "message": f"pong: {message}" if message else "pong",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),  # ISO 8601
            "protocolVersion": PROTOCOL_VERSION,
        }

    async def status_get(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"version": __version__, "protocolVersion": PROTOCOL_VERSION}

    async def auth_get_status(self, conn: Connection, params: dict[str, Any]) -> Any:
        # Nothing to sign in to: models are reached through litellm with the
        # provider keys in the environment (or are scripted).
        return {
            "isAuthenticated": True,
            "authType": "api-key",
            "statusMessage": "loopdeck needs no sign-in; models use provider keys from the "
            "environment (see loopdeck --help)",
        }

    async def models_list(self, conn: Connection, params: dict[str, Any]) -> Any:
        ids: list[str] = []
        try:
            picked = pick_model(self._default_model())
        except SetupError:
            picked = None
        if picked is not None:
            ids.append(picked[0])
        ids += [f"{SCRIPTED_PREFIX}{name}" for name in shipped_script_names()]
        return {"models": [_model_info(model_id) for model_id in dict.fromkeys(ids)]}

    async def runtime_shutdown(self, conn: Connection, params: dict[str, Any]) -> Any:
        await self.close_all()
        self.stopping.set()
        return None


def _model_info(model_id: str) -> dict[str, Any]:
    return {
        "id": model_id,
        "name": model_id,
        "capabilities": {
            "supports": {"vision": False, "reasoningEffort": False},
            "limits": {"max_context_window_tokens": 0},
        },
    }
