"""A tool execution as a card: what ran, its state, a preview; expands to full output."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Static

from agent.transcript.blocks import ToolCallBlock
from widgets.format import diff_body, duration, preview, summarize_arguments
from widgets.lazy_rich import highlighted
from widgets.subagent_view import subagent_parts

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_GLYPH = {
    "pending": "○",
    "running": "●",
    "success": "✓",
    "failure": "✗",
    "interrupted": "■",
}
_PREVIEW_LINES = 3
QUIET_TOOLS = frozenset({"task_complete", "ask_user", "update_todos"})


class ToolCard(Static, can_focus=True):
    """Renders one :class:`ToolCallBlock`. The full output is built only when expanded."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_output", "Expand/collapse", show=False)
    ]

    def __init__(self, block: ToolCallBlock) -> None:
        super().__init__(classes=f"tool-card -{block.status}")
        self.block = block
        self.expanded = False
        self._frame = 0
        self._status = block.status

    def on_mount(self) -> None:
        self.sync()

    def sync(self) -> None:
        """Re-render from the block (called when its events arrive)."""
        status = self.block.status
        if status != self._status:
            self.remove_class(f"-{self._status}")
            self.add_class(f"-{status}")
            self._status = status
        # Waiting for the user's answer is not work in progress: no spinner then.
        waiting = self.block.permission == "requested" or self.block.name == "ask_user"
        spin = status == "running" and not waiting
        if spin and not self.is_spinning:
            self._spinner = self.set_interval(0.12, self._spin)
        elif not spin and self.is_spinning:
            self._spinner.stop()
            del self._spinner
        self.update(self._render_card())

    @property
    def is_spinning(self) -> bool:
        return hasattr(self, "_spinner")

    def _spin(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        # One glyph changes, not the size: no layout of the whole screen per tick.
        self.update(self._render_card(), layout=False)

    def action_toggle_output(self) -> None:
        # A sub-agent's run can be opened while it runs, to watch it.
        if self.block.finished or self.block.subagent is not None:
            self.expanded = not self.expanded
            self.update(self._render_card())

    def on_click(self) -> None:
        self.action_toggle_output()

    def _render_card(self) -> RenderableType:
        return card_renderable(self.block, expanded=self.expanded, frame=self._frame)


def card_renderable(block: ToolCallBlock, *, expanded: bool, frame: int = 0) -> RenderableType:
    """A tool call as drawn in the timeline (a live card or a collapsed turn)."""
    waiting = block.permission == "requested" or block.name == "ask_user"
    spinning = block.status == "running" and not waiting
    glyph = SPINNER[frame % len(SPINNER)] if spinning else _GLYPH[block.status]
    # These have their own line right below (the summary, the answer, the todo
    # progress): don't say it twice.
    quiet = block.name in QUIET_TOOLS and block.status == "success"
    args = "" if quiet else summarize_arguments(block.name, block.arguments)
    head = Text.assemble((f"{glyph} ", f"bold {_status_style(block.status)}"), *_title(block))
    if args:
        head.append(f"  {args}", style="italic")
    took = duration(block.duration)
    if took:
        head.append(f"  {took}", style="dim")
    note = _PERMISSION_NOTE.get(block.permission or "")
    if note:
        head.append(f"  {note}", style="italic")
    sub = block.subagent
    if sub is not None:
        parts = subagent_parts(block, sub, expanded=expanded, card=card_renderable)
        return Group(head, *parts)
    if block.status == "running":
        if block.permission == "requested":
            return Group(head, Text("  ? waiting for your approval", style="bold"))
        if block.name == "ask_user":
            return Group(head, Text("  ? waiting for your answer", style="bold"))
        if block.last_line:
            return Group(head, _indented(Text(block.last_line, style="dim")))
        return head
    if expanded:
        return Group(head, *_full_output(block))
    if quiet:
        return head
    failed = block.status != "success"
    # A failure's message is the point (e.g. how to allow a denied call): keep it whole.
    lines = preview(block.error if failed else block.result, _PREVIEW_LINES, 400 if failed else 100)
    # Padding, not leading spaces, so a wrapped line stays indented under the first.
    style = "dim" if block.status == "success" else ""
    body: list[RenderableType] = [_indented(Text(line, style=style)) for line in lines]
    hidden = _line_count(block) - len(lines)
    if hidden > 0:
        more = Text(f"… {hidden} more lines (enter to expand)", style="dim italic")
        body.append(_indented(more))
    return Group(head, *body)


def _title(block: ToolCallBlock) -> list[tuple[str, str]]:
    """The tool's name; an MCP tool's server first (``time ⇄ get_current_time``: the
    glyph of the MCP rows), as the model's ``time-get_current_time`` hides which is which."""
    if block.mcp_server:
        tool = block.mcp_tool or block.name
        return [(block.mcp_server, "bold cyan"), (" ⇄ ", "dim"), (tool, "bold")]
    return [(block.name, "bold")]


def _full_output(block: ToolCallBlock) -> list[RenderableType]:
    out: list[RenderableType] = []
    if block.error and block.status != "success":
        out.append(Text(block.error, style="red"))
    diff = diff_body(block.detailed_content) or diff_body(block.result)
    if diff:
        out.append(highlighted(diff.rstrip("\n"), "diff"))
    elif block.result:
        out.append(Text(block.result))
    return out


_PERMISSION_NOTE = {
    "approved-for-session": "approved for this session",
    "denied-by-rules": "denied by rule",
    "denied-interactively-by-user": "denied by you",
    "denied-no-approval-rule-and-could-not-request-from-user": "denied automatically",
    "unanswered": "permission never answered",  # the session ended while it asked
}


def _indented(text: Text) -> Padding:
    return Padding(text, (0, 0, 0, 2))


def _status_style(status: str) -> str:
    return {
        "success": "green",
        "failure": "red",
        "interrupted": "yellow",
        "running": "cyan",
    }.get(status, "dim")


def _line_count(block: ToolCallBlock) -> int:
    text = block.error if block.status != "success" else block.result
    return sum(1 for line in (text or "").splitlines() if line.strip())
