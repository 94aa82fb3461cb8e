"""``task_complete``: the model's way to say an autopilot task is finished."""

from __future__ import annotations

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult


class TaskCompleteArgs(ToolArgs):
    summary: str = Field(description="What was done, for the user: changes made and results.")


class TaskCompleteTool(Tool):
    name = "task_complete"
    description = (
        "Call this only when the whole task is done: every step finished and checked. "
        "Do not call it while you still have open questions, unresolved errors or "
        "remaining steps; keep working instead. The summary should say what was done."
    )
    Args = TaskCompleteArgs

    async def run(self, args: TaskCompleteArgs, ctx: ToolContext) -> ToolResult:
        # The loop sees this call and emits session.task_complete itself.
        return ToolResult(content="Task marked complete.")
