"""The model's checklist for the task: the todo list the update_todos tool keeps.

Each call of ``update_todos`` gives the whole list; the session keeps it and emits
``session.todos_changed``. That event is a signal without payload, as in the SDK
(Copilot keeps its todos in a session table the client reads back), so whoever folds
the log takes the list from the arguments of the ``update_todos`` call that changed
it. A row has Copilot's todo columns: ``id``, ``title``, ``status``
(``pending`` / ``in_progress`` / ``done`` / ``blocked``) and an optional
``description``.

Pure Python: no UI imports.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

TOOL_NAME = "update_todos"
TodoStatus = Literal["pending", "in_progress", "done", "blocked"]
GLYPH: dict[str, str] = {"done": "✓", "in_progress": "▸", "pending": "○", "blocked": "⊘"}
MAX_TODOS = 50


class TodoItem(BaseModel):
    # Built on first use, not on the way to the app's first frame.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str = Field(min_length=1, description="Short kebab-case id, kept across updates.")
    title: str = Field(min_length=1)
    status: TodoStatus = "pending"
    description: str = Field(default="", description="Details; why, if blocked.")

    @field_validator("description", mode="before")
    @classmethod
    def _no_description(cls, value: Any) -> Any:
        return "" if value is None else value  # a model may send null for "none"


def parse_todos(arguments: Any) -> list[TodoItem] | None:
    """The list an ``update_todos`` call gives, or None if its arguments are unusable."""
    if not isinstance(arguments, dict):
        return None
    raw = arguments.get("todos")
    if not isinstance(raw, list) or len(raw) > MAX_TODOS:
        return None
    try:
        return [TodoItem.model_validate(item) for item in raw]
    except ValidationError:
        return None


def progress(items: list[TodoItem]) -> tuple[int, int]:
    """(done, total)."""
    return sum(1 for item in items if item.status == "done"), len(items)


def has_open(items: list[TodoItem]) -> bool:
    return any(item.status != "done" for item in items)


def current(items: list[TodoItem]) -> TodoItem | None:
    """The item being worked on: the first in progress, else the first not done."""
    return next((i for i in items if i.status == "in_progress"), None) or next(
        (i for i in items if i.status != "done"), None
    )


def summary(items: list[TodoItem]) -> str:
    """One line: ``todos 3/7 · ▸ Writing the tests`` (or ``· all done``)."""
    done, total = progress(items)
    if not total:
        return "todos cleared"
    now = current(items)
    tail = f"{GLYPH[now.status]} {now.title}" if now is not None else "all done"
    return f"todos {done}/{total} · {tail}"


def checklist(items: list[TodoItem]) -> str:
    """The list as plain text, one ``✓ title`` line per item (what the model reads back)."""
    done, total = progress(items)
    lines = [f"Todos ({done}/{total} done):"]
    for item in items:
        lines.append(f"{GLYPH[item.status]} {item.title} [{item.id}]")
        if item.status == "blocked" and item.description:
            lines.append(f"    blocked: {item.description}")
    return "\n".join(lines)


def sdk_rows(items: list[TodoItem]) -> list[dict[str, Any]]:
    """The rows as the SDK's ``session.plan.readSqlTodos`` returns them."""
    return [item.model_dump(exclude_defaults=True) | {"status": item.status} for item in items]


class TodoFold:
    """Follows the list through a stream of events: the arguments of an update_todos
    call become the list when the ``session.todos_changed`` it caused arrives.

    ``items`` is None until a list is known (a Copilot log changes its todos through
    SQL: the signal comes, the list stays unknown).
    """

    def __init__(self) -> None:
        self.items: list[TodoItem] | None = None
        self._proposed: list[TodoItem] | None = None

    def call_started(self, tool_name: str, arguments: Any) -> None:
        if tool_name == TOOL_NAME:
            self._proposed = parse_todos(arguments)

    def changed(self) -> bool:
        """A ``session.todos_changed``: True if the new list is known."""
        proposed, self._proposed = self._proposed, None
        if proposed is None:
            return False
        self.items = proposed
        return True
