"""The session's todo list: the update_todos tool changes it, ``session.todos_changed``
records each change, and the fold of those events is the list (live and on resume)."""

from __future__ import annotations

from typing import Protocol

from agent.events.schema import Event, EventData, SessionTodosChangedData, ToolExecutionStartData
from agent.events.todos import TodoFold, TodoItem


class TodoHost(Protocol):
    def emit(self, data: EventData) -> Event: ...


class TodoList:
    """The session's list. A change is emitted as ``session.todos_changed`` and taken
    in by :meth:`fold`, live and on resume alike."""

    def __init__(self, host: TodoHost) -> None:
        self.host = host
        self._fold = TodoFold()

    @property
    def items(self) -> list[TodoItem]:
        return list(self._fold.items or [])

    def changed(self) -> None:
        """The update_todos call running now changed the list (its arguments are it)."""
        self.host.emit(SessionTodosChangedData())

    def fold(self, event: Event) -> None:
        match event.data:
            case ToolExecutionStartData(tool_name=name, arguments=arguments):
                self._fold.call_started(name, arguments)
            case SessionTodosChangedData():
                self._fold.changed()
            case _:
                pass
