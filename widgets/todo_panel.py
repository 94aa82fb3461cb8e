"""The model's todo list, pinned above the prompt while it has open items."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.widgets import Static

from agent.events.todos import GLYPH, TodoItem, current, has_open, progress

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
        return todo_text(self.items)


def todo_text(items: list[TodoItem]) -> Text:
    """``Todos 3/7`` and the items, at most MAX_ROWS of them, around the current one."""
    done, total = progress(items)
    text = Text.assemble(("Todos ", "bold"), (f"{done}/{total}", "bold cyan"))
    start, stop = _window(items)
    if start:
        text.append(f"\n… {start} more above", style="dim")
    for item in items[start:stop]:
        text.append("\n")
        text.append(f"{GLYPH[item.status]} {item.title}", style=_STYLE[item.status])
        if item.status == "blocked" and item.description:
            text.append(f" — {item.description}", style="italic")
    if stop < len(items):
        text.append(f"\n… {len(items) - stop} more", style="dim")
    return text


def _window(items: list[TodoItem]) -> tuple[int, int]:
    """Which items to show: all of a short list; else MAX_ROWS, starting one item
    before the current one (the last finished step gives the context)."""
    if len(items) <= MAX_ROWS:
        return 0, len(items)
    now = current(items)
    at = items.index(now) if now is not None else len(items) - 1
    start = max(0, min(at - 1, len(items) - MAX_ROWS))
    return start, start + MAX_ROWS
