"""One skill: a folder holding ``SKILL.md`` (front matter, then the instructions).

Front matter: ``name`` (the folder's name when absent; letters, digits, ``- _ . :``
and spaces, at most 64), ``description`` (required, at most 1024 characters),
``argument-hint``, ``allowed-tools`` (a string or a list), ``user-invocable``
(default true), ``disable-model-invocation`` (default false), ``license``. Listing
reads the front matter only; the body and the folder's other files are read when
the skill is used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent.extensions.front_matter import FrontMatterError, read_markdown

SKILL_FILE = "SKILL.md"
NAME_LIMIT = 64
DESCRIPTION_LIMIT = 1024
_NAME = re.compile(r"[A-Za-z0-9_.: -]+")

# The SDK's SkillSource.
SkillSource = Literal[
    "project",
    "inherited",
    "personal-copilot",
    "personal-agents",
    "plugin",
    "custom",
    "builtin",
    "sdk",
]


class SkillFileError(ValueError):
    """A folder that is not a usable skill; the message names the field when one is wrong."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: Path  # its SKILL.md
    source: SkillSource
    argument_hint: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    user_invocable: bool = True
    disable_model_invocation: bool = False

    @property
    def folder(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The instructions as the file says them now (front matter left out)."""
        try:
            return read_markdown(self.path).body
        except FrontMatterError as exc:
            raise SkillFileError(str(exc)) from exc


def read_skill(folder: Path, source: SkillSource) -> Skill | None:
    """The skill in ``folder``; None when it holds no ``SKILL.md``."""
    path = folder / SKILL_FILE
    if not path.is_file():
        return None
    try:
        doc = read_markdown(path)
    except FrontMatterError as exc:
        raise SkillFileError(str(exc)) from exc
    if not doc.has_front_matter:
        raise SkillFileError("it has no front matter (a '---' block with a description)")
    return skill_from_fields(folder.name, doc.fields, path, source)


def skill_from_fields(
    folder_name: str, fields: Mapping[str, Any], path: Path, source: SkillSource
) -> Skill:
    name = fields.get("name", folder_name)
    if not isinstance(name, str) or not name.strip():
        raise SkillFileError("field 'name' must be a non-empty string")
    name = name.strip()
    if len(name) > NAME_LIMIT or not _NAME.fullmatch(name):
        raise SkillFileError(
            f"field 'name' may hold letters, digits, '-', '_', '.', ':' and spaces, "
            f"at most {NAME_LIMIT} ({name!r})"
        )
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFileError("field 'description' is required")
    if len(description) > DESCRIPTION_LIMIT:
        raise SkillFileError(f"field 'description' is longer than {DESCRIPTION_LIMIT} characters")
    hint = fields.get("argument-hint")
    if isinstance(hint, list) and all(isinstance(item, str) for item in hint):
        hint = f"[{', '.join(hint)}]"  # `argument-hint: [tag]` unquoted is YAML's list
    if hint is not None and not isinstance(hint, str):
        raise SkillFileError("field 'argument-hint' must be a string")
    return Skill(
        name=name,
        description=description.strip(),
        path=path,
        source=source,
        argument_hint=hint,
        allowed_tools=_allowed_tools(fields.get("allowed-tools")),
        user_invocable=_flag(fields, "user-invocable", default=True),
        disable_model_invocation=_flag(fields, "disable-model-invocation", default=False),
    )


def _allowed_tools(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(part for part in (p.strip() for p in re.split(r"[,\s]+", value)) if part)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise SkillFileError("field 'allowed-tools' must be a string or a list of tool names")


def _flag(fields: Mapping[str, Any], key: str, *, default: bool) -> bool:
    value = fields.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    raise SkillFileError(f"field '{key}' must be true or false")
