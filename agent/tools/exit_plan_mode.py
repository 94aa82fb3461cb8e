"""``exit_plan_mode``: the model proposes its plan and asks to leave plan mode."""

from __future__ import annotations

from typing import Protocol

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult


class PlanProposer(Protocol):
    """Who shows the plan to the user and waits (the session's agent/session/plan_mode.py)."""

    async def propose(self, summary: str, plan: str) -> ToolResult: ...


class ExitPlanModeArgs(ToolArgs):
    summary: str = Field(description="One or two sentences: what the plan does.")
    plan: str = Field(
        description="The plan in Markdown: the steps, the files each touches, and how the "
        "result will be verified."
    )


class ExitPlanModeTool(Tool):
    name = "exit_plan_mode"  # agent.session.plan_mode.EXIT_TOOL
    description = (
        "Call this when your plan is ready: it shows the plan to the user, who approves it "
        "(then you implement it) or asks you to keep planning (you get their feedback). "
        "Only in plan mode."
    )
    # It changes nothing in the workspace; it asks the user (see agent.session.plan_mode).
    kind = "read"
    Args = ExitPlanModeArgs

    def __init__(self, plan: PlanProposer) -> None:
        self.plan = plan

    async def run(self, args: ExitPlanModeArgs, ctx: ToolContext) -> ToolResult:
        return await self.plan.propose(args.summary, args.plan)
