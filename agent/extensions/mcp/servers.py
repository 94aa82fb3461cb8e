"""A session's MCP servers: started in the background, watched, offered, stopped.

:meth:`McpServers.start` returns at once: each server connects in a task of its own
(local ones first), so the first prompt never waits for a slow server; its tools join
the offered ones when it is ready (``on_tools_changed``), and the model sees them
from its next call. A server that fails, at start or later, is a
``session.mcp_server_status_changed`` with the error and a ``session.warning`` the log
keeps; its tools leave, and a call already made to it fails with a message the model
reads. :meth:`close` stops them all, child processes included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agent.events.base import EventData
from agent.events.mcp import (
    McpServerStatus,
    McpServerSummary,
    SessionMcpServersLoadedData,
    SessionMcpServerStatusChangedData,
)
from agent.events.session import SessionWarningData
from agent.extensions.mcp.config import McpConfig
from agent.extensions.mcp.connection import McpConnection
from agent.extensions.mcp.naming import tool_name
from agent.extensions.mcp.tool import McpTool, mcp_tool

WARNING_TYPE = "mcp"  # session.warning's warningType for MCP configuration and servers


class McpServers:
    def __init__(
        self,
        config: McpConfig,
        emit: Callable[[EventData], Any],
        on_tools_changed: Callable[[], None] = lambda: None,
        mask: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.config = config
        self._emit = emit
        self._mask = mask  # the session's secrets out of errors and notices
        self.on_tools_changed = on_tools_changed
        order = sorted(config.servers.values(), key=lambda s: s.transport != "stdio")
        self.connections = [McpConnection(server, self._changed) for server in order]
        self._reported: dict[str, McpServerStatus] = {}
        self._tools: list[McpTool] = []
        self._settled = asyncio.Event()
        self._closing = False

    def start(self) -> None:
        """Each server's ``pending`` status, as Copilot sends it, then the servers start;
        ``session.mcp_servers_loaded`` follows once every one has connected or failed."""
        for notice in self.config.notices:
            self._emit(SessionWarningData(warning_type=WARNING_TYPE, message=self._mask(notice)))
        if not self.connections:
            self._settled.set()
            return
        for connection in self.connections:
            self._report(connection)
        for connection in self.connections:
            connection.start()

    def tools(self) -> list[McpTool]:
        """The tools of the connected servers, by the names the model calls."""
        return list(self._tools)

    async def settled(self) -> None:
        """Until every server has connected or failed (each within its own budget)."""
        await self._settled.wait()

    async def close(self) -> None:
        """Stop every server. Quietly: the session has gone idle for the last time."""
        self._closing = True
        await asyncio.gather(*(c.stop() for c in self.connections), return_exceptions=True)

    # --- changes -----------------------------------------------------------------

    def _changed(self, connection: McpConnection) -> None:
        if self._closing:
            return
        if self._reported.get(connection.name) != connection.status:
            self._report(connection)
            if connection.status == "failed":
                self._emit(
                    SessionWarningData(
                        warning_type=WARNING_TYPE,
                        message=self._mask(
                            f"MCP server {connection.name} failed: {connection.error}"
                        ),
                    )
                )
        if not self._settled.is_set() and all(c.status != "pending" for c in self.connections):
            self._settled.set()
            summaries = [self._summary(c) for c in self.connections]
            self._emit(SessionMcpServersLoadedData(servers=summaries))
        self._tools = self._offered()
        self.on_tools_changed()

    def _report(self, connection: McpConnection) -> None:
        self._reported[connection.name] = connection.status
        self._emit(
            SessionMcpServerStatusChangedData(
                server_name=connection.name,
                status=connection.status,
                error=self._mask(connection.error) if connection.error else None,
                config_source=connection.config.source,
            )
        )

    def _offered(self) -> list[McpTool]:
        tools: list[McpTool] = []
        taken: set[str] = set()
        for connection in self.connections:
            if connection.status != "connected":
                continue
            for server_tool in connection.tools:
                name = tool_name(connection.name, server_tool.name, taken)
                taken.add(name)
                tools.append(mcp_tool(name, connection, server_tool))
        return tools

    def _summary(self, connection: McpConnection) -> McpServerSummary:
        return McpServerSummary(
            name=connection.name,
            status=connection.status,
            source=connection.config.source,
            transport=connection.config.transport,
            error=self._mask(connection.error) if connection.error else None,
        )
