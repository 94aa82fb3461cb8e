"""Skills: ``SKILL.md`` folders found where Copilot looks, its precedence, the front
matter it documents, and broken skills as notices (agent/extensions/skills/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.extensions.skills.catalog import load_skills, skill_folders
from agent.extensions.skills.definition import SkillFileError
from agent.extensions.skills.tool import skill_context, skills_prompt_section


def skill(folder: Path, description: str, body: str = "Do it.", **fields: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"description: {description}"] + [f"{k}: {v}" for k, v in fields.items()]
    path = folder / "SKILL.md"
    path.write_text("---\n" + "\n".join(lines) + "\n---\n" + body + "\n", "utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n", "utf-8")
    (root / "pkg").mkdir()
    return root


def test_a_skill_written_from_copilots_docs(repo: Path, tmp_path: Path) -> None:
    path = skill(
        repo / ".github" / "skills" / "release-notes",
        "Write release notes from the commits since the last tag.",
        body="# Release notes\n\nList the commits.",
        **{"argument-hint": "[tag]", "allowed-tools": "bash, view", "license": "MIT"},
    )
    (path.parent / "template.md").write_text("## Added\n", "utf-8")
    catalog = load_skills(repo, {"HOME": str(tmp_path / "h")})
    assert catalog.notices == ()
    (found,) = catalog.skills
    assert (found.name, found.source, found.path) == ("release-notes", "project", path)
    assert found.argument_hint == "[tag]"
    assert found.allowed_tools == ("bash", "view")
    assert found.user_invocable and not found.disable_model_invocation
    assert found.body() == "# Release notes\n\nList the commits."
    assert skill_context(found, found.body()) == (
        f'<skill-context name="release-notes">\nBase directory for this skill: {path.parent}'
        "\n\n# Release notes\n\nList the commits.\n</skill-context>"
    )
    section = skills_prompt_section(catalog.skills)
    assert section.startswith("# Skills\n")
    assert section.endswith(
        "- release-notes: Write release notes from the commits since the last tag."
    )


def test_the_front_matters_name_wins_over_the_folders(repo: Path, tmp_path: Path) -> None:
    skill(repo / ".github" / "skills" / "folder", "d", name="'pdf: fill forms'")
    assert load_skills(repo, {"HOME": str(tmp_path)}).names() == ["pdf: fill forms"]


def test_precedence_and_sources(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    copilot_home = tmp_path / "copilot-home"
    custom = tmp_path / "custom"
    sdk = tmp_path / "sdk"
    cwd = repo / "pkg"
    env = {
        "HOME": str(home),
        "COPILOT_HOME": str(copilot_home),
        "COPILOT_SKILLS_DIRS": f" {custom} ,",
    }
    skill(cwd / ".github" / "skills" / "a", "cwd github")
    skill(cwd / ".agents" / "skills" / "a", "cwd agents")
    skill(cwd / ".claude" / "skills" / "b", "cwd claude")
    skill(repo / ".github" / "skills" / "b", "root github")
    skill(repo / ".github" / "skills" / "c", "root github")
    skill(copilot_home / "skills" / "c", "personal")
    skill(copilot_home / "skills" / "d", "personal")
    skill(home / ".copilot" / "skills" / "ignored", "not read: COPILOT_HOME is set")
    skill(home / ".agents" / "skills" / "d", "agents")
    skill(home / ".agents" / "skills" / "e", "agents")
    skill(custom / "e", "custom")
    skill(custom / "f", "custom")
    skill(sdk / "g", "sdk folder")
    skill(tmp_path / ".github" / "skills" / "above", "above the repository root")
    catalog = load_skills(cwd, env, extra_folders=[sdk])
    got = {s.name: (s.description, s.source) for s in catalog.skills}
    assert got == {
        "a": ("cwd github", "project"),
        "b": ("cwd claude", "project"),
        "c": ("root github", "inherited"),
        "d": ("personal", "personal-copilot"),
        "e": ("agents", "personal-agents"),
        "f": ("custom", "custom"),
        "g": ("sdk folder", "custom"),
    }
    assert tmp_path / ".github" / "skills" not in [f.path for f in skill_folders(cwd, env)]
    only_sdk = load_skills(cwd, env, extra_folders=[sdk], discover=False)
    assert only_sdk.names() == ["g"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("---\nname: x\n---\nbody\n", "field 'description' is required"),
        ("---\ndescription: d\nname: a/b\n---\n", "field 'name' may hold letters"),
        ("---\ndescription: d\nname: " + "n" * 65 + "\n---\n", "at most 64"),
        ("---\ndescription: " + "d" * 1025 + "\n---\n", "longer than 1024 characters"),
        ("---\ndescription: d\nuser-invocable: sure\n---\n", "field 'user-invocable' must be"),
        ("---\ndescription: d\nallowed-tools: {a: 1}\n---\n", "field 'allowed-tools' must be"),
        ("---\ndescription: d\nargument-hint: {a: 1}\n---\n", "field 'argument-hint' must be"),
        ("Just text.\n", "it has no front matter"),
        ("---\ndescription: [\n---\n", "not valid YAML"),
    ],
)
def test_a_broken_skill_is_a_notice_naming_its_file(
    repo: Path, tmp_path: Path, text: str, says: str
) -> None:
    folder = repo / ".github" / "skills" / "broken"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(text, "utf-8")
    skill(repo / ".github" / "skills" / "fine", "fine")
    (repo / ".github" / "skills" / "no-skill-here").mkdir()  # not a skill: skipped quietly
    (repo / ".github" / "skills" / "flat.md").write_text("not a skill\n", "utf-8")
    catalog = load_skills(repo, {"HOME": str(tmp_path)})
    assert catalog.names() == ["fine"]
    (notice,) = catalog.notices
    assert str(folder / "SKILL.md") in notice
    assert says in notice


def test_a_body_changed_or_broken_after_listing(repo: Path, tmp_path: Path) -> None:
    path = skill(repo / ".github" / "skills" / "s", "d", body="first")
    (found,) = load_skills(repo, {"HOME": str(tmp_path)}).skills
    path.write_text("---\ndescription: d\n---\nsecond\n", "utf-8")
    assert found.body() == "second"  # read when used, not when listed
    path.write_text("---\ndescription: d\n", "utf-8")
    with pytest.raises(SkillFileError, match="no closing"):
        found.body()
