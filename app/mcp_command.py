"""``/mcp``: the session's MCP servers, as in Copilot CLI.

``/mcp`` (or ``/mcp show``) opens the screen (widgets/mcp_screen.py), ``/mcp show NAME``
opens it on that server; ``/mcp list`` writes the servers in the timeline as text;
``/mcp restart|disable|enable NAME`` do that for the session (through the session's
``McpServers``: agent/extensions/mcp/servers.py). A disable lasts for the session
only; the configuration files are never written. These work while the agent works
too: a call running on a server that is restarted fails with a message the model
reads.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from widgets.mcp_screen import row_line, summary, tools_word

if TYPE_CHECKING:
    from textual.screen import Screen

    from agent.events.schema import Event
    from agent.extensions.mcp.servers import McpServerInfo, McpServers
    from agent.session.session import Session


class McpHost(Protocol):
    """What /mcp needs of the app (part of app.commands.CommandHost)."""

    @property
    def session(self) -> Session | None: ...

    def say(self, text: str) -> None: ...

    def run_worker(
        self, work: Coroutine[Any, Any, None], name: str | None = ..., group: str = ...
    ) -> object: ...

    def push_screen(
        self, screen: Screen[str | None], callback: Callable[[str | None], None]
    ) -> object: ...


USAGE = "Usage: /mcp [show [NAME] | list | restart NAME | disable NAME | enable NAME]"
NO_SERVERS = (
    "No MCP servers are configured. Add them to ~/.copilot/mcp-config.json, or give "
    '--additional-mcp-config \'{"mcpServers": {...}}\' (see the README, "MCP servers").'
)
CONTROL = ("restart", "disable", "enable")
# The events after which the screen reads the servers again.
_MCP_EVENTS = frozenset({"session.mcp_server_status_changed", "session.mcp_servers_loaded"})


async def mcp_command(app: McpHost, arg: str) -> None:
    session = app.session
    if session is None:
        app.say("No session is open yet.")
        return
    servers = session.mcp
    words = arg.split(maxsplit=1)
    sub = words[0].lower() if words else "show"
    name = words[1].strip() if len(words) > 1 else ""
    if servers is None or not servers.names():
        app.say(NO_SERVERS)
        return
    if sub in ("list", "ls"):
        app.say(listing(servers.list_servers()))
    elif sub == "show":
        if name and name not in servers.names():
            app.say(_unknown(servers, name))
            return
        open_screen(app, servers, selected=name or None)
    elif sub in CONTROL:
        if not name:
            app.say(f"Usage: /mcp {sub} NAME (one of: {', '.join(servers.names())})")
            return
        await control(servers, sub, name, app.say)
    else:
        app.say(f"No /mcp {sub}. {USAGE}")


def open_screen(app: McpHost, servers: McpServers, *, selected: str | None) -> None:
    """The screen, kept current by the session's MCP status events until it closes."""
    from widgets.mcp_screen import McpScreen

    session = app.session
    assert session is not None

    def act(action: str, name: str) -> None:
        app.run_worker(control(servers, action, name, screen.note), group="command")

    screen = McpScreen(servers.list_servers, act, selected=selected)

    def on_event(event: Event) -> None:
        if event.type in _MCP_EVENTS:
            screen.changed()

    unsubscribe = session.subscribe(on_event)

    def closed(_: str | None) -> None:
        unsubscribe()

    app.push_screen(screen, closed)


async def control(servers: McpServers, action: str, name: str, tell: Callable[[str], None]) -> None:
    """Restart, disable or enable ``name``; ``tell`` what came of it. A start waits
    until the server has connected or failed (its own connection timeout bounds it)."""
    from agent.extensions.mcp.servers import McpControlError

    try:
        if action == "disable":
            await servers.disable(name)
            tell(f"MCP server {name} disabled for this session (e or /mcp enable starts it).")
            return
        tell(f"{'Restarting' if action == 'restart' else 'Starting'} MCP server {name}…")
        if action == "restart":
            await servers.restart(name)
        else:
            await servers.enable(name)
        info = await servers.ready(name)
    except McpControlError as exc:
        tell(str(exc))
        return
    tell(outcome(info))


def outcome(info: McpServerInfo) -> str:
    if info.status == "connected":
        tools = tools_word(info)
        return f"MCP server {info.name} connected" + (f": {tools}" if tools else "") + "."
    why = f": {info.error}" if info.error else ""
    return f"MCP server {info.name} is {info.status}{why}"


def listing(rows: list[McpServerInfo]) -> str:
    """Every server on a line (status, transport, source, tools), errors under them."""
    width = max(len(r.name) for r in rows)
    lines = [f"MCP servers — {summary(rows)}"]
    for row in rows:
        lines.append("  " + row_line(row, width).plain)
        if row.error and row.status != "connected":
            lines.append(f"  {' ' * 13}{row.error}")
    return "\n".join(lines)


def _unknown(servers: McpServers, name: str) -> str:
    return f"No MCP server named {name!r} (configured: {', '.join(servers.names())})."
