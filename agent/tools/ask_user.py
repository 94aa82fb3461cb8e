"""``ask_user``: the model asks the user a question, with choices or not (as Copilot's)."""

from __future__ import annotations

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult


class AskUserArgs(ToolArgs):
    question: str = Field(min_length=1, description="One clear question, in a sentence.")
    choices: list[str] = Field(
        default_factory=list,
        max_length=9,
        description="Answers to pick from, the recommended one first. No catch-all like "
        '"Other": the user can always type.',
    )
    allow_freeform: bool = Field(
        default=True, description="Whether the user may type their own answer."
    )


class AskUserTool(Tool):
    name = "ask_user"
    description = (
        "Ask the user one question and wait for the answer; prefer giving choices. "
        "If the user cannot be asked (autopilot), the result says so: then decide yourself."
    )
    Args = AskUserArgs

    async def run(self, args: AskUserArgs, ctx: ToolContext) -> ToolResult:
        if ctx.questions is None:
            raise ToolError("ask_user is not available in this session: decide yourself")
        return await ctx.questions.ask(
            args.question.strip(),
            args.choices,
            allow_freeform=args.allow_freeform,
            tool_call_id=ctx.tool_call_id or None,
        )
