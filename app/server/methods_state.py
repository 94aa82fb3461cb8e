"""``session.mode.* | plan.* | model.* | options.update`` and the todo rows
(``session.plan.readSqlTodos*``): a hosted session's state, read and set by the app.

Mode and model changes are the session's own (``session.mode_changed``,
``session.model_change`` events); the plan file is read and written by
:mod:`app.server.plan`.
"""

from __future__ import annotations

from typing import Any

from agent.events.todos import sdk_rows
from app.server.params import mode_of, required_str
from app.server.plan import plan_delete, plan_read, plan_update
from app.server.rpc import Connection
from app.server.runtime_base import RuntimeBase


class StateMethods(RuntimeBase):
    """A hosted session's mode, plan, model, options and todo rows."""

    async def todos_read(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"rows": sdk_rows(self._hosted(params).session.todos.items)}

    async def todos_read_with_dependencies(self, conn: Connection, params: dict[str, Any]) -> Any:
        # update_todos keeps no dependencies between items.
        return {**await self.todos_read(conn, params), "dependencies": []}

    async def session_mode_get(self, conn: Connection, params: dict[str, Any]) -> Any:
        return self._hosted(params).session.mode

    async def session_mode_set(self, conn: Connection, params: dict[str, Any]) -> Any:
        session = self._hosted(params).session
        mode = mode_of(params.get("mode"))
        expected = params.get("expectedMode")
        if expected is not None and expected != session.mode:
            return {"modelChanged": False, "status": "unchanged", "modeApplied": False}
        changed = mode != session.mode
        session.set_mode(mode)
        return {
            "modelChanged": False,
            "status": "applied" if changed else "unchanged",
            "modeApplied": True,
        }

    async def session_plan_read(self, conn: Connection, params: dict[str, Any]) -> Any:
        return plan_read(self._hosted(params).session)

    async def session_plan_update(self, conn: Connection, params: dict[str, Any]) -> Any:
        return plan_update(self._hosted(params).session, params)

    async def session_plan_delete(self, conn: Connection, params: dict[str, Any]) -> Any:
        return plan_delete(self._hosted(params).session)

    async def session_model_get_current(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"modelId": self._hosted(params).session.model.name}

    async def session_model_switch_to(self, conn: Connection, params: dict[str, Any]) -> Any:
        session = self._hosted(params).session
        model = self._model({"model": required_str(params, "modelId")}, recorded=None)
        session.set_model(model)
        return {"modelId": model.name, "status": "applied"}

    async def session_options_update(self, conn: Connection, params: dict[str, Any]) -> Any:
        self._hosted(params)
        # Custom instructions, co-author lines, plugins…: nothing here to configure.
        return {"success": True}
