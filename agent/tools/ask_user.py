"""``ask_user``: the model asks the user a question, with choices or not (as Copilot's)."""

from __future__ import annotations

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult


class AskUserArgs(ToolArgs):
    question: str = Field(min_length=1, description="One clear question, in a sentence.")
    choices: list[str] | None = Field(
        default=None,
        max_length=9,
        description="The answers to choose from, recommended one first (mark it "
        '"(Recommended)"). No catch-all choice like "Other": the user can always type.',
    )
    allow_freeform: bool = Field(
        default=True, description="Whether the user may type an answer of their own."
    )


class AskUserTool(Tool):
    name = "ask_user"
    description = (
        "Ask the user a clarifying question and wait for the answer. Use it, never a "
        "question in your reply text, when a decision is theirs to make: design choices, "
        "scope, behaviour where several reasonable options exist. Prefer choices; ask one "
        "question per call. When the user cannot be asked (autopilot), the result says "
        "so: then decide yourself."
    )
    Args = AskUserArgs

    async def run(self, args: AskUserArgs, ctx: ToolContext) -> ToolResult:
        if ctx.questions is None:
            raise ToolError("ask_user is not available in this session: decide yourself")
        return await ctx.questions.ask(
            args.question.strip(),
            args.choices or [],
            allow_freeform=args.allow_freeform,
            tool_call_id=ctx.tool_call_id or None,
        )
