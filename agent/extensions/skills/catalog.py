"""Where skills are found, and which one wins when two share a name.

Copilot CLI's order, the first found under a name being the one used: the working
directory's ``.github/skills/``, ``.agents/skills/`` and ``.claude/skills/``
(``project``); each folder above it up to the repository's root, its
``.github/skills/`` (``inherited``); the user's ``~/.copilot/skills/``
(``$COPILOT_HOME/skills`` when set; ``personal-copilot``) and ``~/.agents/skills/``
(``personal-agents``); then the folders of ``COPILOT_SKILLS_DIRS`` (comma-separated)
and an SDK app's ``skillDirectories`` (``custom``). Each of these holds one folder
per skill. A broken skill is a notice naming its file and what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.extensions.skills.definition import (
    SKILL_FILE,
    Skill,
    SkillFileError,
    SkillSource,
    read_skill,
)
from agent.loop.system_prompt import git_head

PROJECT_FOLDERS = (".github/skills", ".agents/skills", ".claude/skills")
INHERITED_FOLDERS = (".github/skills",)


@dataclass(frozen=True, slots=True)
class SkillFolder:
    path: Path
    source: SkillSource


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    """The skills found, in precedence order, and what was wrong."""

    skills: tuple[Skill, ...] = ()
    notices: tuple[str, ...] = ()
    folders: tuple[SkillFolder, ...] = field(default=(), compare=False)

    def get(self, name: str) -> Skill | None:
        for skill in self.skills:
            if skill.name == name:
                return skill
        folded = name.casefold()
        return next((s for s in self.skills if s.name.casefold() == folded), None)

    def names(self) -> list[str]:
        return [skill.name for skill in self.skills]


def copilot_home(env: Mapping[str, str]) -> Path:
    home = env.get("COPILOT_HOME")
    if home:
        return Path(home)
    return _home(env) / ".copilot"


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def skill_folders(
    cwd: Path, env: Mapping[str, str], extra: Sequence[Path] = ()
) -> list[SkillFolder]:
    """The folders searched, highest precedence first (they need not exist)."""
    cwd = cwd.absolute()
    found = [SkillFolder(cwd / name, "project") for name in PROJECT_FOLDERS]
    head = git_head(cwd)
    if head is not None and head.root in cwd.parents:
        for parent in cwd.parents:
            found += [SkillFolder(parent / name, "inherited") for name in INHERITED_FOLDERS]
            if parent == head.root:
                break
    found.append(SkillFolder(copilot_home(env) / "skills", "personal-copilot"))
    found.append(SkillFolder(_home(env) / ".agents" / "skills", "personal-agents"))
    listed = [p.strip() for p in env.get("COPILOT_SKILLS_DIRS", "").split(",") if p.strip()]
    for path in [*listed, *map(str, extra)]:
        found.append(SkillFolder(Path(os.path.expanduser(path)).absolute(), "custom"))
    return found


def load_skills(
    cwd: Path,
    env: Mapping[str, str],
    *,
    extra_folders: Sequence[Path] = (),
    discover: bool = True,
) -> SkillCatalog:
    """Every skill for a session in ``cwd``. ``extra_folders``: an SDK app's
    ``skillDirectories``; ``discover`` False reads only those."""
    folders = (
        skill_folders(cwd, env, extra_folders)
        if discover
        else [SkillFolder(Path(p).absolute(), "custom") for p in extra_folders]
    )
    skills: dict[str, Skill] = {}
    notices: list[str] = []
    for folder in folders:
        for candidate in _skill_dirs(folder.path, notices):
            try:
                skill = read_skill(candidate, folder.source)
            except SkillFileError as exc:
                notices.append(f"skill {candidate / SKILL_FILE}: {exc}; skipped")
                continue
            if skill is not None:
                skills.setdefault(skill.name, skill)
    return SkillCatalog(tuple(skills.values()), tuple(notices), tuple(folders))


def _skill_dirs(folder: Path, notices: list[str]) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        notices.append(f"skills folder {folder}: cannot list it ({exc.strerror or exc})")
        return []
