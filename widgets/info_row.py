"""Collapsed rows: an info event (agent/transcript/info_rows.py) and a turn's reasoning.

Both show one line and open on click or Enter to their detail. The detail is built
only when opened, and a long one (a 40 KB system prompt) is cut to its first lines.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Static

from agent.transcript.blocks import InfoRowBlock, TurnBlock

MAX_BODY_LINES = 200  # of an opened row in the timeline
REASONING = "reasoning"  # stands for a turn's reasoning among its opened tool calls
_GLYPH = {
    "system": "⚙",
    "hook": "↪",
    "mcp": "⇄",
    "compaction": "⇣",
    "truncation": "✂",
    "rewind": "↶",
    "usage": "Σ",
    "notification": "✉",
    "auto-model": "⇢",
}
_STATE_STYLE = {"running": "cyan", "ok": "green", "failed": "red"}


def info_glyph(block: InfoRowBlock) -> str:
    return _GLYPH.get(block.kind, "•")


def info_text(block: InfoRowBlock, *, expanded: bool) -> RenderableType:
    glyph = info_glyph(block)
    head = Text.assemble((f"{glyph} ", _STATE_STYLE.get(block.state or "", "")), block.title)
    if block.body and not expanded:
        head.append("  ▸", style="dim")
    if not (expanded and block.body):
        return head
    return Group(head, _indented(Text(cut_lines(block.body, MAX_BODY_LINES), style="dim")))


def reasoning_text(block: TurnBlock, *, expanded: bool) -> RenderableType:
    """A turn's reasoning: "thinking" and its size, the text itself once opened."""
    lines = block.reasoning.strip().splitlines()
    head = Text.assemble(
        ("∴ thinking", "italic"), (f"  {len(lines)} line{'' if len(lines) == 1 else 's'}", "dim")
    )
    if not expanded:
        head.append("  ▸", style="dim")
        return head
    return Group(head, _indented(Text(block.reasoning.strip(), style="dim italic")))


def cut_lines(text: str, limit: int) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more lines"])


def _indented(text: Text) -> Padding:
    return Padding(text, (0, 0, 0, 2))


class InfoRowView(Static):
    """One info row; focusable (a card the keyboard reaches) only if it has detail."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_output", "Expand/collapse", show=False)
    ]

    def __init__(self, block: InfoRowBlock) -> None:
        super().__init__(classes=f"info-row -{block.kind}")
        self.block = block
        self.expanded = False
        self.can_focus = block.body is not None

    def sync(self) -> None:
        self.can_focus = self.block.body is not None
        self.refresh(layout=True)

    def render(self) -> RenderableType:
        return info_text(self.block, expanded=self.expanded)

    def action_toggle_output(self) -> None:
        if self.block.body:
            self.expanded = not self.expanded
            self.refresh(layout=True)

    def on_click(self) -> None:
        self.action_toggle_output()


class ReasoningView(Static):
    """A running turn's reasoning, collapsed to one line until opened."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_output", "Expand/collapse", show=False)
    ]

    def __init__(self, block: TurnBlock) -> None:
        super().__init__(classes="reasoning")
        self.block = block
        self.expanded = False
        self.can_focus = True
        self._lines = -1  # line count drawn, so a streamed delta redraws only when it grows

    def sync(self) -> None:
        lines = self.block.reasoning.count("\n")
        if self.expanded or lines != self._lines:
            self._lines = lines
            self.refresh(layout=self.expanded)

    def render(self) -> RenderableType:
        return reasoning_text(self.block, expanded=self.expanded)

    def action_toggle_output(self) -> None:
        self.expanded = not self.expanded
        self.refresh(layout=True)

    def on_click(self) -> None:
        self.action_toggle_output()
