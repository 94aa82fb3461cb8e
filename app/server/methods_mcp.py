"""``session.mcp.*``: an SDK app looks at and controls its session's MCP servers
(agent.extensions.mcp.servers), with the names and shapes of the SDK's generated
``rpc.py``.

``startServer``, ``restartServer`` and ``enable`` answer once the server has
connected or failed, so the app's next ``listTools`` finds it ready; the status
events go out as the servers change. ``listTools`` answers from the list the server
sent last (kept current by its ``tools/list_changed``). ``setEnvValueMode`` decides
how the ``env`` and ``headers`` of the servers started from then on are read.

Not served, each a -32601 error saying so (see README "MCP servers"): OAuth
(``oauth.*``), MCP Apps (``apps.*``), sampling, resources and prompts, dynamic
headers, external clients and the GitHub server's configuration. ``removeGitHub``
answers ``removed: false`` (loopdeck adds no GitHub server) and
``moveLoadingToBackground`` ``movedToBackground: false`` (no turn ever waits for a
server).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from agent.extensions.mcp.config import McpConfig, sdk_server
from agent.extensions.mcp.servers import McpControlError, McpServers
from app.server.params import env_value_mode, required_str
from app.server.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, SERVER_ERROR, Connection, RpcError
from app.server.runtime_base import RuntimeBase

# Method -> what it is, for the error that says loopdeck does not serve it.
UNSUPPORTED: dict[str, str] = {
    **{
        f"session.mcp.oauth.{name}": "MCP OAuth sign-in"
        for name in (
            "login",
            "prepareLogin",
            "cancelLogin",
            "complete",
            "respond",
            "handlePendingRequest",
            "probe",
            "authenticationStateChanged",
        )
    },
    **{
        f"session.mcp.apps.{name}": "MCP Apps"
        for name in (
            "callTool",
            "listTools",
            "readResource",
            "diagnose",
            "getHostContext",
            "setHostContext",
        )
    },
    "session.mcp.executeSampling": "MCP sampling",
    "session.mcp.cancelSamplingExecution": "MCP sampling",
    "session.mcp.resources.list": "MCP resources",
    "session.mcp.resources.listTemplates": "MCP resources",
    "session.mcp.resources.read": "MCP resources",
    "session.mcp.prompts.list": "MCP prompts",
    "session.mcp.prompts.get": "MCP prompts",
    "session.mcp.headers.handlePendingHeadersRefreshRequest": "dynamic MCP headers",
    "session.mcp.registerExternalClient": "external MCP clients",
    "session.mcp.unregisterExternalClient": "external MCP clients",
    "session.mcp.setConnectedIdeInfo": "IDE connections",
    "session.mcp.configureGitHub": "the GitHub MCP server",
    "session.mcp.reloadWithConfig": "reloading with a host configuration",
}


class McpMethods(RuntimeBase):
    """A hosted session's MCP servers: list, tools, start, stop, enable, reload."""

    def _servers(self, params: dict[str, Any]) -> McpServers:
        servers = self._hosted(params).session.mcp
        if servers is None:
            raise RpcError(SERVER_ERROR, "this session has no MCP servers")
        return servers

    async def mcp_list(self, conn: Connection, params: dict[str, Any]) -> Any:
        servers = self._servers(params)
        listed = []
        for info in servers.list_servers():
            entry: dict[str, Any] = {"name": info.name, "status": info.status}
            entry["source"] = info.source
            if info.error:
                entry["error"] = info.error
            url = servers.server_config(info.name).url
            if url:
                entry["url"] = url
            listed.append(entry)
        return {"servers": listed}

    async def mcp_list_configured(self, conn: Connection, params: dict[str, Any]) -> Any:
        listed = []
        for info in self._servers(params).list_servers():
            live: dict[str, Any] = {
                "status": info.status,
                "toolsLoaded": info.status == "connected",
            }
            if info.error:
                live["error"] = info.error
            listed.append(
                {"name": info.name, "enabled": info.enabled, "live": live, "source": info.source}
            )
        return {"servers": listed}

    async def mcp_list_tools(self, conn: Connection, params: dict[str, Any]) -> Any:
        name = required_str(params, "serverName")
        with _as_rpc():
            tools = self._servers(params).list_tools(name)
        return {
            "tools": [
                {"name": t.name, **({"description": t.description} if t.description else {})}
                for t in tools
            ]
        }

    async def mcp_enable(self, conn: Connection, params: dict[str, Any]) -> Any:
        servers, name = self._servers(params), required_str(params, "serverName")
        with _as_rpc():
            await servers.enable(name)
            await servers.ready(name)
        return None

    async def mcp_disable(self, conn: Connection, params: dict[str, Any]) -> Any:
        servers, name = self._servers(params), required_str(params, "serverName")
        with _as_rpc():
            await servers.disable(name)
        return None

    async def mcp_start_server(self, conn: Connection, params: dict[str, Any]) -> Any:
        servers, name = self._servers(params), required_str(params, "serverName")
        config = self._config_param(params, name)
        with _as_rpc():
            await servers.start_server(name, config)
            await servers.ready(name)
        return None

    async def mcp_restart_server(self, conn: Connection, params: dict[str, Any]) -> Any:
        servers, name = self._servers(params), required_str(params, "serverName")
        config = self._config_param(params, name)
        with _as_rpc():
            await servers.restart(name, config)
            await servers.ready(name)
        return None

    async def mcp_stop_server(self, conn: Connection, params: dict[str, Any]) -> Any:
        servers, name = self._servers(params), required_str(params, "serverName")
        with _as_rpc():
            await servers.stop(name)
        return None

    async def mcp_is_server_running(self, conn: Connection, params: dict[str, Any]) -> Any:
        servers, name = self._servers(params), required_str(params, "serverName")
        running = name in servers.names() and servers.info(name).status == "connected"
        return {"running": running}

    async def mcp_reload(self, conn: Connection, params: dict[str, Any]) -> Any:
        """The session's servers again: those not running start, the rest stay."""
        servers = self._servers(params)
        configs = [servers.server_config(name) for name in servers.names()]
        config = McpConfig(
            servers={c.name: c for c in configs if servers.is_enabled(c.name)},
            configured={c.name for c in configs},
            disabled={c.name: c for c in configs if not servers.is_enabled(c.name)},
        )
        await servers.reload(config)
        await servers.settled()
        return None

    async def mcp_set_env_value_mode(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        if "mode" not in params:
            raise RpcError(INVALID_PARAMS, "mode must be direct or indirect")
        hosted.mcp_env_mode = env_value_mode(params["mode"])
        return {"mode": hosted.mcp_env_mode}

    async def mcp_remove_github(self, conn: Connection, params: dict[str, Any]) -> Any:
        self._hosted(params)
        return {"removed": False}  # loopdeck adds no GitHub server of its own

    async def mcp_move_loading_to_background(self, conn: Connection, params: dict[str, Any]) -> Any:
        self._hosted(params)
        return {"movedToBackground": False}  # no turn waits for a server

    async def mcp_unsupported(self, method: str) -> Any:
        what = UNSUPPORTED[method]
        raise RpcError(
            METHOD_NOT_FOUND,
            f"{method}: loopdeck does not support {what} (its MCP servers offer tools only; "
            'see README "MCP servers")',
        )

    def _config_param(self, params: dict[str, Any], name: str) -> Any:
        raw = params.get("config")
        if raw is None:
            return None
        mode = self._hosted(params).mcp_env_mode
        try:
            return sdk_server(name, raw, mode=mode, host_env=os.environ)
        except ValueError as exc:
            raise RpcError(INVALID_PARAMS, f"config: MCP server {name!r}: {exc}") from exc

    def mcp_methods(self) -> dict[str, Any]:
        """This module's part of the dispatch table."""
        table: dict[str, Any] = {
            "session.mcp.list": self.mcp_list,
            "session.mcp.listConfigured": self.mcp_list_configured,
            "session.mcp.listTools": self.mcp_list_tools,
            "session.mcp.enable": self.mcp_enable,
            "session.mcp.disable": self.mcp_disable,
            "session.mcp.startServer": self.mcp_start_server,
            "session.mcp.restartServer": self.mcp_restart_server,
            "session.mcp.stopServer": self.mcp_stop_server,
            "session.mcp.isServerRunning": self.mcp_is_server_running,
            "session.mcp.reload": self.mcp_reload,
            "session.mcp.setEnvValueMode": self.mcp_set_env_value_mode,
            "session.mcp.removeGitHub": self.mcp_remove_github,
            "session.mcp.moveLoadingToBackground": self.mcp_move_loading_to_background,
        }
        for method in UNSUPPORTED:

            async def refuse(conn: Connection, params: dict[str, Any], method: str = method) -> Any:
                return await self.mcp_unsupported(method)

            table[method] = refuse
        return table


@contextlib.contextmanager
def _as_rpc() -> Iterator[None]:
    """McpControlError (no such server, not connected) as the app's error."""
    try:
        yield
    except McpControlError as exc:
        raise RpcError(SERVER_ERROR, str(exc)) from exc
