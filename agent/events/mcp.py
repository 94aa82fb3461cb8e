"""MCP servers: the session's servers and their status, in Copilot's schema.

Copilot sends these on the live stream only (``ephemeral``): the lasting trace of an
MCP call is its tool events, which carry ``mcpServerName`` and ``mcpToolName``.
"""

from __future__ import annotations

from typing import Literal

from agent.events.base import EventData

# The SDK's McpServerStatus, McpServerSource and McpServerTransport.
McpServerStatus = Literal[
    "connected", "failed", "needs-auth", "pending", "disabled", "stopped", "not_configured"
]
McpServerSource = Literal["user", "workspace", "plugin", "builtin", "managed", "account"]
McpServerTransport = Literal["stdio", "http", "sse", "memory"]


class McpServerSummary(EventData):
    """One server in ``session.mcp_servers_loaded``."""

    name: str
    status: McpServerStatus
    source: McpServerSource | None = None
    transport: McpServerTransport | None = None
    error: str | None = None


class SessionMcpServersLoadedData(EventData):
    TYPE = "session.mcp_servers_loaded"
    EPHEMERAL = True
    servers: list[McpServerSummary]


class SessionMcpServerStatusChangedData(EventData):
    TYPE = "session.mcp_server_status_changed"
    EPHEMERAL = True
    server_name: str
    status: McpServerStatus
    error: str | None = None
    config_source: str | None = None
