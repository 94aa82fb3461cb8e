"""A command the user ran themselves (``!cmd``): the command line, then its output."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual.widgets import Static

from agent.transcript.blocks import ShellBlock
from widgets.format import duration, preview

_GLYPH = {"running": "●", "success": "✓", "failure": "✗", "interrupted": "■", "pending": "○"}
_STYLE = {"success": "green", "failure": "red", "interrupted": "yellow", "running": "cyan"}
PREVIEW_LINES = 8


class ShellView(Static):
    def __init__(self, block: ShellBlock) -> None:
        super().__init__(classes="shell-command")
        self.block = block

    def sync(self) -> None:
        """Re-render from the block: the output arrives after the command."""
        self.update(shell_renderable(self.block))

    def on_mount(self) -> None:
        self.sync()


def shell_renderable(block: ShellBlock) -> RenderableType:
    head = Text.assemble(
        ("$ ", "bold"),
        (block.command, "bold"),
        ("  ", ""),
        (_GLYPH.get(block.status, "?"), _STYLE.get(block.status, "dim")),
    )
    took = duration(block.duration)
    if took:
        head.append(f"  {took}", style="dim")
    if block.status == "interrupted":
        head.append("  interrupted", style="italic")
    if block.status == "running":
        return (
            Group(head, _indented(Text(block.last_line, style="dim"))) if block.last_line else head
        )
    text = block.output if block.status == "success" else (block.error or block.output)
    lines = preview(text, PREVIEW_LINES, 200)
    body: list[RenderableType] = [_indented(Text(line)) for line in lines]
    hidden = sum(1 for line in (text or "").splitlines() if line.strip()) - len(lines)
    if hidden > 0:
        body.append(_indented(Text(f"… {hidden} more lines", style="dim italic")))
    return Group(head, *body)


def _indented(text: Text) -> Padding:
    return Padding(text, (0, 0, 0, 2))
