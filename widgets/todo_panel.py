"""The model's todo list, pinned above the prompt while it has open items."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.widgets import Static

from agent.todos import GLYPH, TodoItem, current, has_open, progress

MAX_ROWS = 6  # items shown; the rest are counted

_STYLE = {"done": "dim", "in_progress": "bold", "pending": "", "blocked": "yellow"}


class TodoPanel(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="todo-panel")
        self.items: list[TodoItem] = []
        self.display = False

    def show(self, items: list[TodoItem] | None) -> None:
        """Show ``items`` (hidden once none is open, or when no list is known)."""
        self.items = list(items or [])
        self.display = has_open(self.items)
        if self.display:
            self.update(self.render_list())

    def render_list(self) -> RenderableType:
        items = self.items
        done, total = progress(items)
        text = Text.assemble(("Todos ", "bold"), (f"{done}/{total}", "bold cyan"))
        for item in _shown(items):
            text.append("\n")
            text.append(f"{GLYPH[item.status]} {item.title}", style=_STYLE[item.status])
            if item.status == "blocked" and item.description:
                text.append(f" — {item.description}", style="italic")
        hidden = len(items) - len(_shown(items))
        if hidden > 0:
            text.append(f"\n… {hidden} more", style="dim")
        return text


def _shown(items: list[TodoItem]) -> list[TodoItem]:
    """At most MAX_ROWS items, in order, around the one being worked on."""
    if len(items) <= MAX_ROWS:
        return items
    now = current(items)
    at = items.index(now) if now is not None else len(items) - 1
    # One finished item above the current one keeps the context; the rest below.
    start = max(0, min(at - 1, len(items) - MAX_ROWS))
    return items[start : start + MAX_ROWS]
