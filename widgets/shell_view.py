"""A command the user ran themselves (``!cmd``): the command line, then its output."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text
from textual.widgets import Static

from agent.events.tools import SANDBOX_NOTE_PREFIX
from agent.transcript.blocks import ShellBlock
from widgets.format import duration, preview

_GLYPH = {"running": "●", "success": "✓", "failure": "✗", "interrupted": "■", "pending": "○"}
_STYLE = {"success": "green", "failure": "red", "interrupted": "yellow", "running": "cyan"}
PREVIEW_LINES = 8


class ShellView(Static):
    """The command and a preview of its output; a click shows all of it (and folds it)."""

    def __init__(self, block: ShellBlock) -> None:
        super().__init__(classes="shell-command")
        self.block = block
        self.expanded = False

    def sync(self) -> None:
        """Re-render from the block: the output arrives after the command."""
        self.update(shell_renderable(self.block, expanded=self.expanded))

    def on_mount(self) -> None:
        self.sync()

    def on_click(self) -> None:
        self.expanded = not self.expanded
        self.sync()


def shell_renderable(block: ShellBlock, *, expanded: bool = False) -> RenderableType:
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
    # The sandbox's note to the user is said whole, whatever the preview cuts.
    output, notes = _notes_apart(text or "")
    if expanded:
        body: list[RenderableType] = [_indented(Text(output))] if output.strip() else []
    else:
        lines = preview(output, PREVIEW_LINES, 200)
        body = [_indented(Text(line)) for line in lines]
        hidden = sum(1 for line in output.splitlines() if line.strip()) - len(lines)
        if hidden > 0:
            more = f"… {hidden} more lines (click to show)"
            body.append(_indented(Text(more, style="dim italic")))
    body += [_indented(Text(note, style="yellow")) for note in notes]
    return Group(head, *body)


def _notes_apart(text: str) -> tuple[str, list[str]]:
    """The command's output, and the sandbox's notes to the user at its end."""
    lines = text.splitlines()
    notes: list[str] = []
    while lines and lines[-1].startswith(SANDBOX_NOTE_PREFIX):
        notes.insert(0, lines.pop())
    return "\n".join(lines), notes


def _indented(text: Text) -> Padding:
    return Padding(text, (0, 0, 0, 2))
