"""The session's MCP servers as their events tell them: each one's status, where it
was configured, its transport and its last error.

``session.mcp_server_status_changed`` moves one server; ``session.mcp_servers_loaded``
lists them all once they have settled (with the transport, which the status events
do not carry). A failure's error is kept through a restart's ``pending`` until the
server connects again, so ``/mcp`` can still say why it went down. A server whose
status is ``not_configured`` (gone from a reloaded configuration) leaves the fold.

The status bar's ``mcp 3/4`` is :meth:`McpServersFold.down_summary`. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.events.mcp import (
    McpServerStatus,
    SessionMcpServersLoadedData,
    SessionMcpServerStatusChangedData,
)

# Not working though it should: what the status bar counts as down. ``disabled`` was
# the user's choice; ``pending`` is on its way.
DOWN: frozenset[McpServerStatus] = frozenset({"failed", "stopped", "needs-auth"})


@dataclass(slots=True)
class McpServerState:
    name: str
    status: McpServerStatus
    source: str | None = None
    transport: str | None = None
    error: str | None = None  # the last failure, until the server connects again

    @property
    def down(self) -> bool:
        return self.status in DOWN


class McpServersFold:
    def __init__(self) -> None:
        self.servers: dict[str, McpServerState] = {}  # in the order they were first heard of

    def status_changed(self, data: SessionMcpServerStatusChangedData) -> None:
        if data.status == "not_configured":
            self.servers.pop(data.server_name, None)
            return
        server = self._server(data.server_name, data.status)
        server.status = data.status
        if data.config_source:
            server.source = data.config_source
        if data.error:
            server.error = data.error
        elif data.status == "connected":
            server.error = None

    def loaded(self, data: SessionMcpServersLoadedData) -> None:
        for summary in data.servers:
            server = self._server(summary.name, summary.status)
            server.status = summary.status
            server.source = summary.source or server.source
            server.transport = summary.transport or server.transport
            if summary.error:
                server.error = summary.error
            elif summary.status == "connected":
                server.error = None

    def _server(self, name: str, status: McpServerStatus) -> McpServerState:
        server = self.servers.get(name)
        if server is None:
            server = self.servers[name] = McpServerState(name, status)
        return server

    def counts(self) -> tuple[int, int]:
        """(connected, not disabled)."""
        wanted = [s for s in self.servers.values() if s.status != "disabled"]
        return sum(s.status == "connected" for s in wanted), len(wanted)

    def down_summary(self) -> str | None:
        """``mcp 3/4`` (connected of the servers not disabled) when one is down; None
        when none is (all fine, still starting, or no servers at all)."""
        if not any(s.down for s in self.servers.values()):
            return None
        up, total = self.counts()
        return f"mcp {up}/{total}"
