"""Autopilot's permission levels: their names, their words, and how an answer records one.

The question and the answer are recorded as the SDK's ``elicitation.requested`` /
``elicitation.completed`` pair (the answer's ``content`` holds ``permissionLevel``);
asking and applying the level is agent/permissions/level.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from agent.events.schema import ElicitationCompletedData

Level = Literal["allow-all", "edits", "rules"]
LEVELS: tuple[Level, ...] = get_args(Level)
SOURCE = "loopdeck.autopilot-permissions"
CONTENT_KEY = "permissionLevel"
QUESTION = "Autopilot works without asking. What may it do in this session?"


@dataclass(frozen=True, slots=True)
class LevelOption:
    level: Level
    title: str
    detail: str
    short: str  # the status bar's word for it


OPTIONS: tuple[LevelOption, ...] = (
    LevelOption(
        "allow-all",
        "Allow all tools in this workspace",
        "Edits and shell commands run without asking; deny rules still apply.",
        "all tools",
    ),
    LevelOption(
        "edits",
        "Allow edits only",
        "Files in the workspace may be created and edited; shell commands follow your rules.",
        "edits only",
    ),
    LevelOption(
        "rules",
        "Keep my rules",
        "What your rules do not allow is denied.",
        "my rules",
    ),
)
_BY_LEVEL = {option.level: option for option in OPTIONS}


def option(level: Level) -> LevelOption:
    return _BY_LEVEL[level]


def notice(level: Level | None) -> str:
    """The timeline's line for an answer."""
    if level is None:
        return "autopilot permissions: not chosen, the switch to autopilot was cancelled"
    return f"autopilot permissions: {option(level).title.lower()}"


def level_of(data: ElicitationCompletedData) -> Level | None:
    """The level an answer chose, or None (cancelled, or not this question)."""
    if data.action != "accept" or not data.content:
        return None
    value = data.content.get(CONTENT_KEY)
    return next((level for level in LEVELS if level == value), None)
