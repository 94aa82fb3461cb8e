"""A session's MCP servers: started in the background, watched, offered, stopped.

:meth:`McpServers.start` returns at once: each server connects in a task of its own
(local ones first), so the first prompt never waits for a slow server; its tools join
the offered ones when it is ready (``on_tools_changed``), and the model sees them
from its next call. A server that fails, at start or later, is a
``session.mcp_server_status_changed`` with the error and a ``session.warning`` the log
keeps; its tools leave, and a call already made to it fails with a message the model
reads. :meth:`close` stops them all, child processes included.

While the session runs, a server can be stopped, started (:meth:`start_server`, with
another configuration if given), restarted, disabled or enabled for the session, and
the whole configuration reloaded; :meth:`list_servers` and :meth:`list_tools` show
them. Every change of status is a
``session.mcp_server_status_changed``. These return once the server has stopped, or
has been started (not yet connected: :meth:`ready` waits for that).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.events.base import EventData
from agent.events.mcp import (
    McpServerStatus,
    McpServerSummary,
    SessionMcpServersLoadedData,
    SessionMcpServerStatusChangedData,
)
from agent.events.session import SessionWarningData
from agent.extensions.mcp.config import McpConfig, McpServerConfig, server_secrets
from agent.extensions.mcp.connection import McpConnection
from agent.extensions.mcp.naming import tool_name
from agent.extensions.mcp.tool import McpTool, mcp_tool
from agent.sandbox.policy import Confinement

WARNING_TYPE = "mcp"  # session.warning's warningType for MCP configuration and servers


class McpControlError(Exception):
    """A control request that cannot be done (no such server, not connected)."""


@dataclass(frozen=True, slots=True)
class McpServerInfo:
    """One configured server as ``/mcp`` and the SDK's ``session.mcp.list`` show it.
    ``enabled_tools``: the tools its ``tools`` allow-list offers; ``disabled_tools``:
    the ones it lists that the allow-list leaves out (both empty until connected)."""

    name: str
    status: McpServerStatus
    transport: str
    source: str
    enabled: bool  # False: disabled for the session (or by --disable-mcp-server)
    sandboxed: bool  # a local server running in the OS sandbox
    enabled_tools: tuple[str, ...]
    disabled_tools: tuple[str, ...]
    error: str | None  # the last failure, kept after a restart until it connects

    @property
    def tool_count(self) -> int:
        return len(self.enabled_tools)

    @property
    def running(self) -> bool:
        return self.status in ("connected", "pending")


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """One tool a connected server lists; ``offered_as``: the model's name for it
    (None when the allow-list leaves it out)."""

    name: str
    description: str
    enabled: bool
    offered_as: str | None


class McpServers:
    def __init__(
        self,
        config: McpConfig,
        emit: Callable[[EventData], Any],
        on_tools_changed: Callable[[], None] = lambda: None,
        mask: Callable[[str], str] = lambda text: text,
        add_secrets: Callable[[list[str]], None] = lambda _secrets: None,
        confine: Callable[[], Confinement | None] = lambda: None,
    ) -> None:
        self.config = config
        self._emit = emit
        self._mask = mask  # the session's secrets out of errors and notices
        self._add_secrets = add_secrets  # a server configured later brings its own
        self._confine = confine  # the OS sandbox local servers run in (None: none)
        self.on_tools_changed = on_tools_changed
        # Every server the session knows, disabled ones included, local ones first.
        self._configs: dict[str, McpServerConfig] = {}
        self._disabled: set[str] = set()
        self._configure(config)
        self._connections: dict[str, McpConnection] = {}
        self._errors: dict[str, str] = {}  # last failure per server
        self._reported: dict[str, McpServerStatus] = {}
        self._tools: list[McpTool] = []
        self._gone: dict[str, str] = {}  # a tool's name -> its server, once it has left
        self._settled = asyncio.Event()
        self._pulse = asyncio.Event()  # set, then replaced, at each change
        self._loading = False  # session.mcp_servers_loaded is due when all have settled
        self._closing = False
        # One control request at a time: two restarts at once would start two
        # processes and lose track of one.
        self._control = asyncio.Lock()

    @property
    def connections(self) -> list[McpConnection]:
        return list(self._connections.values())

    def start(self) -> None:
        """Each server's ``pending`` status, as Copilot sends it, then the servers start;
        ``session.mcp_servers_loaded`` follows once every one has connected or failed."""
        for notice in self.config.notices:
            self._emit(SessionWarningData(warning_type=WARNING_TYPE, message=self._mask(notice)))
        self._loading = True
        names = [n for n in self._configs if n not in self._disabled]
        for name in names:
            self._connections[name] = self._connection(name)
            self._report(self._connections[name])
        for name in names:
            self._connections[name].start()
        self._check_settled()

    def tools(self) -> list[McpTool]:
        """The tools of the connected servers, by the names the model calls."""
        return list(self._tools)

    async def settled(self) -> None:
        """Until no server is starting (each has its own budget)."""
        await self._settled.wait()

    async def ready(self, name: str) -> McpServerInfo:
        """Until ``name`` has connected or failed (or is not running); its state then."""
        while (
            not self._closing
            and (connection := self._connections.get(name))
            and connection.status == "pending"
        ):
            await self._pulse.wait()  # set at each change of any server, and at close
        return self.info(name)

    async def close(self) -> None:
        """Stop every server. Quietly: the session has gone idle for the last time."""
        self._closing = True  # a control request under way starts nothing more
        # Whoever waits for a server to settle stops waiting: nothing will report now.
        self._settled.set()
        self._pulse.set()
        async with self._control:
            await asyncio.gather(*(c.stop() for c in self.connections), return_exceptions=True)

    # --- looking ---------------------------------------------------------------

    def names(self) -> list[str]:
        return list(self._configs)

    def server_config(self, name: str) -> McpServerConfig:
        return self._known(name)

    def is_enabled(self, name: str) -> bool:
        return name in self._configs and name not in self._disabled

    def is_running(self, name: str) -> bool:
        connection = self._connections.get(name)
        return connection is not None and connection.status in ("connected", "pending")

    def list_servers(self) -> list[McpServerInfo]:
        """Every configured server, disabled ones included, in start order."""
        return [self.info(name) for name in self._configs]

    def info(self, name: str) -> McpServerInfo:
        config = self._known(name)
        connection = self._connections.get(name)
        status: McpServerStatus
        if name in self._disabled:
            status = "disabled"
        elif connection is None:
            status = "stopped"
        else:
            status = connection.status
        listed = connection.listed if connection is not None and status == "connected" else []
        error = connection.error if connection is not None and connection.error else None
        error = error or (None if status == "connected" else self._errors.get(name))
        return McpServerInfo(
            name=name,
            status=status,
            transport=config.transport,
            source=config.source,
            enabled=name not in self._disabled,
            sandboxed=connection is not None and connection.confinement is not None,
            enabled_tools=tuple(t.name for t in listed if config.offers(t.name)),
            disabled_tools=tuple(t.name for t in listed if not config.offers(t.name)),
            error=self._mask(error) if error else None,
        )

    def list_tools(self, name: str) -> list[McpToolInfo]:
        """The tools ``name`` lists (kept current by its ``tools/list_changed``);
        McpControlError when it is not connected."""
        self._known(name)
        connection = self._connections.get(name)
        if connection is None or connection.status != "connected":
            status = self.info(name).status
            raise McpControlError(f"MCP server {name} is {status}, not connected")
        offered = {t.server_tool: t.name for t in self._tools if t.mcp_origin()[0] == name}
        return [
            McpToolInfo(
                name=t.name,
                description=t.description or t.title or "",
                enabled=connection.config.offers(t.name),
                offered_as=offered.get(t.name),
            )
            for t in connection.listed
        ]

    # --- control ---------------------------------------------------------------

    async def stop(self, name: str) -> None:
        """Stop ``name`` (its process too); its status becomes ``stopped``."""
        async with self._control:
            await self._stop_one(name)

    async def _stop_one(self, name: str) -> None:
        self._known(name)
        connection = self._connections.get(name)
        if connection is not None:
            await connection.stop()
            if connection.status not in ("stopped", "failed"):
                connection.status = "stopped"
                self._changed(connection)
        elif name not in self._disabled and self._reported.get(name) != "stopped":
            self._report_status(name, "stopped")

    async def start_server(self, name: str, config: McpServerConfig | None = None) -> None:
        """Start ``name`` (enabling it for the session), with ``config`` when given
        (a new server, or new settings for a known one: a running server restarts)."""
        async with self._control:
            changed = config is not None and self._configs.get(name) != config
            self._take(name, config)
            if self.is_running(name):
                if not changed:
                    return
                await self._stop_one(name)
            self._launch(name)

    async def restart(self, name: str, config: McpServerConfig | None = None) -> None:
        """Stop ``name`` if it runs, then start it again (enabled for the session),
        with ``config`` when given."""
        async with self._control:
            self._take(name, config)
            if self.is_running(name):
                await self._stop_one(name)
            self._launch(name)

    def _take(self, name: str, config: McpServerConfig | None) -> None:
        if config is None:
            self._known(name)
        elif config.name != name:
            raise McpControlError(f"the configuration is for {config.name!r}, not {name!r}")
        elif self._configs.get(name) != config:
            self._add_secrets(server_secrets(config))
            self._configs[name] = config
        self._disabled.discard(name)

    async def disable(self, name: str) -> None:
        """Stop ``name`` and keep it stopped for the session; status ``disabled``."""
        async with self._control:
            self._known(name)
            if name in self._disabled:
                return
            self._disabled.add(name)
            connection = self._connections.pop(name, None)
            if connection is not None:
                await connection.stop()
            self._report_status(name, "disabled")
            self._refresh_tools()
            self._check_settled()

    async def enable(self, name: str) -> None:
        """Undo :meth:`disable` (or ``--disable-mcp-server``): the server starts."""
        async with self._control:
            self._known(name)
            if name not in self._disabled and self.is_running(name):
                return
            self._disabled.discard(name)
            self._launch(name)

    async def reload(self, config: McpConfig) -> None:
        """Take ``config`` (the files read again): servers gone from it stop and leave,
        new ones start, changed ones restart, unchanged running ones are left alone.
        Servers disabled for the session stay disabled; ``session.mcp_servers_loaded``
        follows when all have settled."""
        async with self._control:
            await self._reload(config)

    async def _reload(self, config: McpConfig) -> None:
        for notice in config.notices:
            self._emit(SessionWarningData(warning_type=WARNING_TYPE, message=self._mask(notice)))
        self._add_secrets(config.secret_values())
        old = self._configs
        session_disabled = {n for n in self._disabled if n not in self.config.disabled}
        self.config = config
        self._configs = {}
        self._disabled = set()
        self._configure(config)
        # Known servers keep their places (the /mcp list does not jump about).
        known = [n for n in old if n in self._configs]
        self._configs = {n: self._configs[n] for n in [*known, *self._configs]}
        self._disabled |= {n for n in session_disabled if n in self._configs}
        for name in [n for n in old if n not in self._configs]:
            connection = self._connections.pop(name, None)
            if connection is not None:
                await connection.stop()
                self._report_status(name, "not_configured")
            self._reported.pop(name, None)
            self._errors.pop(name, None)
        starting = []
        for name, server in self._configs.items():
            if name in self._disabled:
                connection = self._connections.pop(name, None)
                if connection is not None:
                    await connection.stop()
                if self._reported.get(name) != "disabled":
                    self._report_status(name, "disabled")
            elif old.get(name) != server or not self.is_running(name):
                if self.is_running(name):
                    await self._stop_one(name)
                starting.append(name)
        self._loading = True  # not before: the stops above must not count as settling
        for name in starting:
            self._launch(name)
        self._refresh_tools()
        self._check_settled()

    # --- changes -----------------------------------------------------------------

    def _configure(self, config: McpConfig) -> None:
        both = [*config.servers.values(), *config.disabled.values()]
        for server in sorted(both, key=lambda s: s.transport != "stdio"):
            self._configs[server.name] = server
        self._disabled |= set(config.disabled)

    def _known(self, name: str) -> McpServerConfig:
        config = self._configs.get(name)
        if config is None:
            known = ", ".join(self._configs) or "none"
            raise McpControlError(f"no MCP server named {name!r} (configured: {known})")
        return config

    def _connection(self, name: str) -> McpConnection:
        config = self._configs[name]
        sandboxed = config.transport == "stdio" and config.sandbox
        return McpConnection(config, self._changed, self._confine() if sandboxed else None)

    def _launch(self, name: str) -> None:
        if self._closing:
            return  # the session is closing: nothing starts that nothing would stop
        connection = self._connection(name)
        self._connections[name] = connection
        self._settled.clear()
        self._report(connection)
        connection.start()

    def _changed(self, connection: McpConnection) -> None:
        if self._closing or self._connections.get(connection.name) is not connection:
            return  # a connection replaced (restart) or dropped (disable) says nothing
        if connection.status == "failed" and connection.error:
            self._errors[connection.name] = connection.error
        elif connection.status == "connected":
            self._errors.pop(connection.name, None)
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
        self._check_settled()
        self._refresh_tools()

    def _check_settled(self) -> None:
        if any(c.status == "pending" for c in self._connections.values()):
            self._settled.clear()
            return
        self._settled.set()
        if self._loading:
            self._loading = False
            summaries = [self._summary(c) for c in self._connections.values()]
            if summaries:
                self._emit(SessionMcpServersLoadedData(servers=summaries))

    def _refresh_tools(self) -> None:
        before = {t.name: t.mcp_origin()[0] for t in self._tools}
        self._tools = self._offered()
        now = {t.name for t in self._tools}
        self._gone.update({n: server for n, server in before.items() if n not in now})
        for name in now:
            self._gone.pop(name, None)
        self.on_tools_changed()

    def gone(self) -> dict[str, str]:
        """The tools offered before and not now, each with what a call to it says:
        that its server is down (not that no such tool exists)."""
        said: dict[str, str] = {}
        for name, server in self._gone.items():
            if server not in self._configs:
                said[name] = f"MCP server {server} was removed from the configuration"
                continue
            info = self.info(server)
            if info.status == "connected":
                said[name] = f"MCP server {server} no longer offers this tool"
                continue
            why = f": {info.error}" if info.status == "failed" and info.error else ""
            said[name] = (
                f"MCP server {server} is down ({info.status}{why}); "
                "its tools cannot be called until it is restarted"
            )
        return said

    def _report(self, connection: McpConnection) -> None:
        self._report_status(connection.name, connection.status, connection.error)

    def _report_status(self, name: str, status: McpServerStatus, error: str | None = None) -> None:
        self._reported[name] = status
        self._pulse.set()
        self._pulse = asyncio.Event()
        config = self._configs.get(name)
        self._emit(
            SessionMcpServerStatusChangedData(
                server_name=name,
                status=status,
                error=self._mask(error) if error else None,
                config_source=config.source if config is not None else None,
            )
        )

    def _offered(self) -> list[McpTool]:
        tools: list[McpTool] = []
        taken: set[str] = set()
        for connection in self._connections.values():
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
