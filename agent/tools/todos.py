"""``update_todos``: the model keeps a checklist for the task (see agent.events.todos)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agent.events.todos import MAX_TODOS, TOOL_NAME, TodoItem, checklist, has_open
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult


class UpdateTodosArgs(ToolArgs):
    todos: list[TodoItem] = Field(
        max_length=MAX_TODOS,
        description="The whole list, in order (items left out are dropped).",
    )


class UpdateTodosTool(Tool):
    name = TOOL_NAME
    description = (
        "Keep a checklist the user sees for a task of several steps. Give the whole list "
        "each time; set an item in_progress before you start it, done when it is."
    )
    Args = UpdateTodosArgs

    def schema(self) -> dict[str, Any]:
        # The item schema inline, not behind a $ref: not every server resolves one.
        out = super().schema()
        params = out["function"]["parameters"]
        item = TodoItem.model_json_schema()
        item.pop("title", None)
        for prop in item["properties"].values():
            prop.pop("title", None)
        item["additionalProperties"] = False
        params["properties"]["todos"]["items"] = item
        params.pop("$defs", None)
        return out

    async def run(self, args: UpdateTodosArgs, ctx: ToolContext) -> ToolResult:
        if ctx.todos is None:
            raise ToolError("update_todos is not available in this session")
        ids = [item.id for item in args.todos]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise ToolError(f"todo ids must be unique; repeated: {', '.join(twice)}")
        ctx.todos.changed()
        text = checklist(args.todos)
        if args.todos and not has_open(args.todos):
            text += "\nEvery item is done."
        return ToolResult(content=text)
