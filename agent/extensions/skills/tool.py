"""The ``skill`` tool: the model loads a skill by name, as in Copilot CLI.

The list of skills (name and description) is in the system prompt
(:func:`skills_prompt_section`); the instructions come only when the model asks. The
call's result says the skill is loaded; the instructions themselves follow it as a
message of their own (``<skill-context name=...>``), which the session writes once
the call is complete (see agent/session/extensions.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

from pydantic import Field

from agent.extensions.skills.definition import Skill
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult

TOOL_NAME = "skill"


class SkillLoader(Protocol):
    """Who loads a skill for a call (the session's extensions)."""

    def load_skill(self, name: str, tool_call_id: str) -> ToolResult: ...


class SkillArgs(ToolArgs):
    skill: str = Field(description='The name of the skill to load, e.g. "release-notes".')


class SkillTool(Tool):
    name: ClassVar[str] = TOOL_NAME
    description: ClassVar[str] = (
        "Load one of the skills listed under # Skills in the system prompt: its "
        "instructions are added to the conversation. When a task matches a skill's "
        "description, load the skill first and then follow its instructions."
    )
    kind = "read"
    Args = SkillArgs

    def __init__(self, loader: SkillLoader) -> None:
        self._loader = loader

    async def run(self, args: SkillArgs, ctx: ToolContext) -> ToolResult:
        return self._loader.load_skill(args.skill.strip(), ctx.tool_call_id)


def skills_prompt_section(skills: Sequence[Skill]) -> str:
    """The system prompt's list of the skills the model may load."""
    if not skills:
        return ""
    lines = [
        "# Skills",
        f"Skills are instructions for particular tasks, loaded with the {TOOL_NAME} tool. "
        "When the user's request matches a skill's description, load that skill before "
        "anything else and follow it. Available skills:",
    ]
    lines += [f"- {skill.name}: {skill.description}" for skill in skills]
    return "\n".join(lines)


def skill_context(skill: Skill, body: str) -> str:
    """The message that gives the model a skill's instructions (Copilot's shape)."""
    return (
        f'<skill-context name="{skill.name}">\n'
        f"Base directory for this skill: {skill.folder}\n\n"
        f"{body}\n"
        "</skill-context>"
    )


def loaded_message(name: str) -> str:
    return f'Skill "{name}" loaded successfully. Follow the instructions in the skill context.'
