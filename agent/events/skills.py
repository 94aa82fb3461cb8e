"""Skills: the list a session offers, and one loaded into the conversation.

``session.skills_loaded`` is sent on the live stream only (Copilot marks it
``ephemeral``); ``skill.invoked`` is written, and the skill's instructions follow it
as a ``user.message`` whose ``source`` is ``skill-<name>``.
"""

from __future__ import annotations

from typing import Literal

from agent.events.base import EventData

SkillTrigger = Literal["user-invoked", "agent-invoked", "context-load"]
SKILL_MESSAGE_PREFIX = "skill-"  # user.message.source of a skill's instructions


class SkillsLoadedSkill(EventData):
    """One skill in ``session.skills_loaded``."""

    name: str
    description: str
    source: str
    user_invocable: bool
    enabled: bool
    path: str | None = None
    argument_hint: str | None = None
    command_name: str | None = None


class SessionSkillsLoadedData(EventData):
    TYPE = "session.skills_loaded"
    EPHEMERAL = True
    skills: list[SkillsLoadedSkill]


class SkillInvokedData(EventData):
    TYPE = "skill.invoked"
    name: str
    path: str
    content: str
    allowed_tools: list[str] | None = None
    source: str | None = None
    description: str | None = None
    trigger: SkillTrigger | None = None
    invoked_at_turn: int | None = None
    disable_model_invocation: bool | None = None
    model: str | None = None
