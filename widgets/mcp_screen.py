"""``/mcp``: the session's MCP servers, each one's status, transport, source and tools,
and the last error; a server can be restarted, disabled or enabled for the session.

A modal list, one server a line; under it, the highlighted server's details (the tools
its ``tools`` allow-list offers, those it leaves out, the last error). ↑↓ choose,
``r`` restarts, ``d`` disables, ``e`` enables, Esc closes. The screen never calls the
session: it reads the servers through ``rows`` and asks for a change through ``act``
(the app does it, then tells the screen with :meth:`McpScreen.note`); the app calls
:meth:`McpScreen.changed` when a server's status changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

# How each status is drawn: a glyph and a style (the SDK's McpServerStatus values).
STATUS_LOOK: dict[str, tuple[str, str]] = {
    "connected": ("●", "green"),
    "pending": ("◌", "yellow"),
    "failed": ("✗", "bold red"),
    "stopped": ("■", "red"),
    "needs-auth": ("!", "yellow"),
    "disabled": ("○", "dim"),
}
ACTIONS = ("restart", "disable", "enable")
KEYS_HELP = "↑↓ server · r restart · d disable · e enable (this session) · Esc close"


class ServerRow(Protocol):
    """What the screen shows of a server (agent.extensions.mcp.servers.McpServerInfo)."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def enabled_tools(self) -> tuple[str, ...]: ...
    @property
    def disabled_tools(self) -> tuple[str, ...]: ...


def status_text(status: str) -> Text:
    glyph, style = STATUS_LOOK.get(status, ("?", ""))
    return Text(f"{glyph} {status}", style=style)


def tools_word(row: ServerRow) -> str:
    """``4 tools``, ``2 of 5 tools`` (the allow-list leaves 3 out), or nothing when the
    server is not connected (its tools are unknown then)."""
    enabled, left_out = len(row.enabled_tools), len(row.disabled_tools)
    if row.status != "connected":
        return ""
    if left_out:
        return f"{enabled} of {enabled + left_out} tools"
    return f"{enabled} tool" + ("" if enabled == 1 else "s")


def row_line(row: ServerRow, name_width: int) -> Text:
    """One server as a line: status, name, transport, source, tools."""
    line = Text()
    line.append_text(status_text(row.status))
    line.pad_right(13 - line.cell_len)
    line.append(row.name.ljust(name_width), style="bold")
    line.append(f"  {row.transport:<5}  {row.source:<9}", style="dim")
    tools = tools_word(row)
    if tools:
        line.append(f"  {tools}")
    return line


def counts(rows: Sequence[ServerRow]) -> str:
    """``2 connected, 1 failed``."""
    by_status: dict[str, int] = {}
    for row in rows:
        by_status[row.status] = by_status.get(row.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in by_status.items())


def summary(rows: Sequence[ServerRow]) -> str:
    """``3 servers: 2 connected, 1 failed``."""
    told = counts(rows)
    return f"{len(rows)} server{'' if len(rows) == 1 else 's'}" + (f": {told}" if told else "")


def details(row: ServerRow) -> Text:
    """The server's facts, its last error and its tools (enabled and left out)."""
    text = Text()
    text.append(row.name, style="bold")
    text.append("  ")
    text.append_text(status_text(row.status))
    text.append(f" · {row.transport} · source {row.source}", style="dim")
    if row.error:
        text.append("\nlast error: ", style="bold red")
        text.append(row.error)
    if row.status == "connected":
        if row.enabled_tools:
            text.append(f"\ntools ({len(row.enabled_tools)}): ", style="bold")
            text.append(", ".join(row.enabled_tools))
        else:
            text.append("\nno tools offered", style="bold")
        if row.disabled_tools:
            text.append(f"\nleft out by its tools list ({len(row.disabled_tools)}): ", style="dim")
            text.append(", ".join(row.disabled_tools), style="dim")
    elif row.status == "disabled":
        text.append("\ndisabled for this session: e starts it", style="dim")
    elif row.status == "pending":
        text.append("\nstarting…", style="dim")
    else:
        text.append("\nnot running: r restarts it", style="dim")
    return text


class McpScreen(ModalScreen[str | None]):
    """Dismisses with None (Esc). ``rows``: the servers now; ``act(action, name)``:
    restart, disable or enable one (the app runs it)."""

    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("r", "act('restart')", "Restart", show=False),
        Binding("d", "act('disable')", "Disable", show=False),
        Binding("e", "act('enable')", "Enable", show=False),
    ]
    DEFAULT_CSS = """
    McpScreen { align: center middle; }
    #mcp-dialog {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    #mcp-servers { height: auto; max-height: 10; margin: 1 0; }
    #mcp-details { height: auto; max-height: 12; }
    #mcp-note { height: auto; margin: 1 0 0 0; display: none; }
    #mcp-keys { margin: 1 0 0 0; }
    """

    def __init__(
        self,
        rows: Callable[[], Sequence[ServerRow]],
        act: Callable[[str, str], None],
        *,
        selected: str | None = None,
    ) -> None:
        super().__init__(id="mcp-screen")
        self._rows = rows
        self._act = act
        self.selected = selected
        self.shown: list[ServerRow] = []
        self._due = False

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-dialog"):
            yield Static(id="mcp-title", classes="title")
            yield OptionList(id="mcp-servers")
            yield Static(id="mcp-details")
            yield Static(id="mcp-note")
            yield Static(KEYS_HELP, id="mcp-keys", classes="dim")

    def on_mount(self) -> None:
        self.reload()
        self.query_one(OptionList).focus()

    def changed(self) -> None:
        """A server's status changed: shown once per burst of events."""
        if not self._due:
            self._due = True
            self.call_next(self.reload)

    def reload(self) -> None:
        self._due = False
        self.shown = list(self._rows())
        listed = self.query_one(OptionList)
        width = max((len(r.name) for r in self.shown), default=0)
        listed.clear_options()
        listed.add_options([Option(row_line(r, width), id=r.name) for r in self.shown])
        names = [r.name for r in self.shown]
        if names:
            at = names.index(self.selected) if self.selected in names else 0
            listed.highlighted = at
            self.selected = names[at]
        title = Text("MCP servers", style="bold")
        title.append(f" · {counts(self.shown)}" if self.shown else " · none configured", "dim")
        self.query_one("#mcp-title", Static).update(title)
        self._show_details()

    def note(self, text: str) -> None:
        """A line under the details: what a restart or a disable came to."""
        shown = self.query_one("#mcp-note", Static)
        shown.update(Text(text, style="italic"))
        shown.display = True

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.selected = event.option.id
        self._show_details()

    def _show_details(self) -> None:
        row = next((r for r in self.shown if r.name == self.selected), None)
        self.query_one("#mcp-details", Static).update(details(row) if row else "")

    def action_act(self, action: str) -> None:
        if self.selected is None:
            return
        self._act(action, self.selected)
