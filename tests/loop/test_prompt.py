"""The system prompt: environment, tools, mode, git branch, project instructions."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from agent.loop.system_prompt import INSTRUCTION_LIMIT, build_system_prompt, git_branch, git_head

ALL_TOOLS = [
    "view",
    "grep",
    "glob",
    "edit",
    "create",
    "bash",
    "ask_user",
    "update_todos",
    "task_complete",
]
READ_TOOLS = ["view", "grep", "glob", "task_complete"]


def prompt(cwd: Path, mode: str = "interactive", tools: list[str] | None = None) -> str:
    return build_system_prompt(
        cwd=cwd,
        mode=mode,
        tool_names=ALL_TOOLS if tools is None else tools,
        model="openai/gpt-5",
        today=date(2025, 6, 1),
        platform_name="Linux",
    )


def make_repo(root: Path, head: str = "ref: refs/heads/main\n") -> Path:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(head)
    return root


def test_environment(tmp_path: Path) -> None:
    text = prompt(tmp_path)
    assert f"Working directory: {tmp_path}" in text
    assert "Linux" in text
    assert "2025-06-01" in text
    assert "openai/gpt-5" in text
    assert "not a git repository" in text


def test_modes_differ(tmp_path: Path) -> None:
    interactive = prompt(tmp_path, "interactive")
    autopilot = prompt(tmp_path, "autopilot")
    assert interactive != autopilot
    assert "Mode: interactive" in interactive and "autopilot" not in interactive
    assert "Mode: autopilot" in autopilot
    assert "autonomously" in autopilot
    assert "call task_complete" in autopilot
    assert "open questions" in autopilot
    assert "Mode: plan" in prompt(tmp_path, "plan")


def test_autopilot_without_task_complete_tool(tmp_path: Path) -> None:
    text = prompt(tmp_path, "autopilot", tools=["view", "grep"])
    assert "task_complete" not in text
    assert "summary" in text


def test_unknown_mode_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown mode"):
        prompt(tmp_path, "yolo")


def test_all_tools_listed_with_guidance(tmp_path: Path) -> None:
    text = prompt(tmp_path)
    for name in ALL_TOOLS:
        assert f"- {name}: " in text


def test_only_present_tools_mentioned(tmp_path: Path) -> None:
    text = prompt(tmp_path, tools=READ_TOOLS)
    for name in READ_TOOLS:
        assert f"- {name}: " in text
    for absent in ("- edit:", "- create:", "- bash:", "run the relevant tests"):
        assert absent not in text


def test_interactive_questions_go_through_ask_user_when_it_is_there(tmp_path: Path) -> None:
    assert "ask one short question with ask_user;" in prompt(tmp_path)
    assert "ask one short question;" in prompt(tmp_path, tools=READ_TOOLS)


def test_unknown_tools_are_listed_by_name(tmp_path: Path) -> None:
    text = prompt(tmp_path, tools=["view", "web_fetch"])
    assert "You have: view, web_fetch." in text


def test_branch_from_hand_made_repo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "ref: refs/heads/feature/login\n")
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    assert git_branch(repo) == "feature/login"
    assert git_branch(sub) == "feature/login"
    text = prompt(sub)
    assert "branch `feature/login`" in text
    assert f"repository root: {repo}" in text


def test_detached_head(tmp_path: Path) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = make_repo(tmp_path, sha + "\n")
    assert git_branch(repo) is None
    head = git_head(repo)
    assert head is not None and head.commit == sha[:12]
    assert f"detached HEAD at {sha[:12]}" in prompt(repo)


def test_worktree_git_file(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    worktree_git = main / ".git" / "worktrees" / "wt"
    worktree_git.mkdir(parents=True)
    (worktree_git / "HEAD").write_text("ref: refs/heads/hotfix\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {worktree_git}\n")
    assert git_branch(wt) == "hotfix"
    # A relative gitdir (as submodules write) is resolved from the .git file.
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / ".git").write_text("gitdir: ../main/.git\n")
    assert git_branch(sub) == "main"


def test_broken_git_markers_are_harmless(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("garbage\n")
    assert git_branch(tmp_path) is None
    (tmp_path / ".git").unlink()
    (tmp_path / ".git").mkdir()  # no HEAD inside
    assert git_branch(tmp_path) is None
    assert "HEAD could not be read" in prompt(tmp_path)


def test_project_instructions_included_verbatim(tmp_path: Path) -> None:
    agents = "# Rules\n\nUse tabs.\n* Run `make check` before finishing.\n"
    copilot = "Prefer pathlib over os.path."
    (tmp_path / "AGENTS.md").write_text(agents)
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "copilot-instructions.md").write_text(copilot)
    text = prompt(tmp_path)
    assert "## AGENTS.md\n\n" + agents.strip() in text
    assert "## .github/copilot-instructions.md\n\n" + copilot in text
    assert text.index("## AGENTS.md") < text.index("## .github/copilot-instructions.md")


def test_instructions_found_at_git_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "AGENTS.md").write_text("Root rule.")
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "AGENTS.md").write_text("Package rule.")
    text = prompt(sub)
    assert "## AGENTS.md\n\nPackage rule." in text
    assert f"## {repo / 'AGENTS.md'}\n\nRoot rule." in text


def test_no_instructions_no_section(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("   \n")
    assert "Project instructions" not in prompt(tmp_path)


def test_long_instructions_are_capped(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("x" * (INSTRUCTION_LIMIT * 2))
    text = prompt(tmp_path)
    assert "x" * INSTRUCTION_LIMIT in text
    assert "x" * (INSTRUCTION_LIMIT + 1) not in text
    assert "[Truncated: AGENTS.md is 40 KB" in text


def test_prompt_stays_compact(tmp_path: Path) -> None:
    assert len(prompt(tmp_path, "autopilot")) < 4000
