"""Custom agents: Copilot's ``*.agent.md`` files found where Copilot looks, its
precedence, the fields it documents, and broken files as notices
(agent/extensions/agents/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.extensions.agents.catalog import AgentCatalog, agent_folders, load_agents
from agent.extensions.agents.tool_filter import ToolRef, kept_tools

# Written from Copilot CLI's docs (custom-agents-configuration.md): a reviewer that
# only reads and searches, on a model of its choice.
REVIEWER = """\
---
name: Code reviewer
description: Reviews a change for bugs, style and missing tests, without editing files.
tools: ["read", "search"]
model: claude-sonnet-4.5
---
You are a careful code reviewer. Read the diff and the code around it; report
problems by file and line. Never edit files.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def agent_text(description: str, body: str = "Do the thing.", **fields: str) -> str:
    lines = [f"description: {description}"] + [f"{k}: {v}" for k, v in fields.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree (HEAD read from disk) with a package folder inside it."""
    root = tmp_path / "repo"
    write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    (root / "pkg").mkdir()
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home")}


def load(cwd: Path, env: dict[str, str]) -> AgentCatalog:
    return load_agents(cwd, env)


def test_a_reviewer_written_from_copilots_docs_loads(repo: Path, env: dict[str, str]) -> None:
    path = write(repo / ".github" / "agents" / "reviewer.agent.md", REVIEWER)
    catalog = load(repo, env)
    assert catalog.notices == ()
    assert catalog.names() == ["reviewer"]
    agent = catalog.get("reviewer")
    assert agent is not None
    assert agent.display_name == "Code reviewer"
    assert agent.description.startswith("Reviews a change")
    assert agent.tools == ("read", "search")
    assert agent.model == "claude-sonnet-4.5"
    assert agent.prompt.startswith("You are a careful code reviewer.")
    assert agent.prompt.endswith("Never edit files.")
    assert (agent.source, agent.path) == ("project", path)
    assert catalog.get("code reviewer") is agent  # the shown name, any case
    assert catalog.get("nobody") is None


def test_fields_copilot_documents_are_read(repo: Path, env: dict[str, str]) -> None:
    write(
        repo / ".github" / "agents" / "planner.agent.md",
        "---\n"
        "description: Plans\n"
        "tools: view, grep , github/*\n"
        "infer: false\n"
        "user-invocable: false\n"
        "models: [gpt-5, claude-sonnet-4.5]\n"
        "modelPolicy: required\n"
        "reasoningEffort: high\n"
        "skills: [release-notes]\n"
        "include-custom-instructions: true\n"
        "mcp-servers:\n  gh:\n    type: local\n    command: gh-mcp\n"
        "target: github-copilot\n"
        "metadata: {team: core}\n"
        "---\nPlan.\n",
    )
    agent = load(repo, env).get("planner")
    assert agent is not None
    assert agent.tools == ("view", "grep", "github/*")
    assert agent.disable_model_invocation  # infer: false
    assert not agent.user_invocable
    assert agent.models == ("gpt-5", "claude-sonnet-4.5")
    assert agent.preferred_model == "gpt-5"
    assert (agent.model_policy, agent.reasoning_effort) == ("required", "high")
    assert agent.skills == ("release-notes",)
    assert agent.include_custom_instructions
    assert agent.mcp_servers == {"gh": {"type": "local", "command": "gh-mcp"}}
    assert load(repo, env).model_invocable() == []
    assert load(repo, env).user_invocable() == []


def test_star_or_no_tools_means_every_tool(repo: Path, env: dict[str, str]) -> None:
    folder = repo / ".github" / "agents"
    write(folder / "a.agent.md", agent_text("A"))
    write(folder / "b.agent.md", agent_text("B", tools='["read", "*"]'))
    write(folder / "c.agent.md", agent_text("C", tools="[]"))
    catalog = load(repo, env)
    assert [catalog.get(n).tools for n in "abc"] == [None, None, ()]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("front", "says"),
    [
        ("name: X\n", "field 'description' is required"),
        ("description: ''\n", "field 'description' is required"),
        ("description: ok\ntools: 3\n", "field 'tools' must be a list"),
        ("description: ok\ntools: [read, 4]\n", "field 'tools' must be a list"),
        ("description: ok\ninfer: maybe\n", "field 'infer' must be true or false"),
        ("description: ok\nuser-invocable: 1\n", "field 'user-invocable' must be true or false"),
        ("description: ok\nmodel: [a, b]\n", "field 'model' must be a string"),
        ("description: ok\nmodelPolicy: always\n", "field 'modelPolicy' must be"),
        ("description: ok\nmcp-servers: [a]\n", "field 'mcp-servers' must be a mapping"),
        ("description: a: b\n", "not valid YAML at line 2: mapping values"),
        ("description: [unclosed\n", "not valid YAML"),
        ("- just\n- a list\n", "must be a mapping of fields"),
        ("description: " + "[" * 5000 + "\n", "front matter cannot be read: RecursionError"),
    ],
)
def test_a_broken_file_is_a_notice_naming_the_file_and_field(
    repo: Path, env: dict[str, str], front: str, says: str
) -> None:
    folder = repo / ".github" / "agents"
    broken = write(folder / "broken.agent.md", "---\n" + front + "---\nbody\n")
    write(folder / "fine.agent.md", agent_text("Fine"))
    catalog = load(repo, env)
    assert catalog.names() == ["fine"]  # the others still load
    (notice,) = catalog.notices
    assert str(broken) in notice
    assert says in notice


def test_files_that_are_not_agents(repo: Path, env: dict[str, str]) -> None:
    folder = repo / ".github" / "agents"
    write(folder / "README.md", "# Our agents\n")  # a plain .md without front matter
    no_front = write(folder / "bare.agent.md", "Just a prompt.\n")
    unclosed = write(folder / "open.agent.md", "---\ndescription: x\n")
    (folder / "binary.agent.md").write_bytes(b"---\n\xff\xfe\n---\n")
    (folder / "dir.agent.md").mkdir()
    write(folder / "notes.txt", "not markdown")
    catalog = load(repo, env)
    assert catalog.agents == ()
    text = "\n".join(catalog.notices)
    assert len(catalog.notices) == 3
    assert f"{no_front}: it has no front matter" in text
    assert f"{unclosed}: the front matter has no closing '---' line" in text
    assert "binary.agent.md: it is not UTF-8 text" in text


def test_agent_md_wins_over_md_in_one_folder(repo: Path, env: dict[str, str]) -> None:
    folder = repo / ".github" / "agents"
    write(folder / "x.md", agent_text("plain"))
    write(folder / "x.agent.md", agent_text("agent"))
    write(folder / "y.md", agent_text("only plain"))
    catalog = load(repo, env)
    assert [(a.name, a.description) for a in catalog.agents] == [
        ("x", "agent"),
        ("y", "only plain"),
    ]


def test_precedence_nearest_folder_then_github_then_user(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "copilot-home"
    env = {"HOME": str(tmp_path / "home"), "COPILOT_HOME": str(home)}
    cwd = repo / "pkg"
    write(cwd / ".github" / "agents" / "near.agent.md", agent_text("pkg github"))
    write(cwd / ".claude" / "agents" / "near.agent.md", agent_text("pkg claude"))
    write(cwd / ".claude" / "agents" / "claude.agent.md", agent_text("pkg claude only"))
    write(repo / ".github" / "agents" / "near.agent.md", agent_text("root github"))
    write(repo / ".github" / "agents" / "root.agent.md", agent_text("root github"))
    write(home / "agents" / "root.agent.md", agent_text("user"))
    write(home / "agents" / "mine.agent.md", agent_text("user only"))
    # ~/.copilot is not read when COPILOT_HOME is set
    write(tmp_path / "home" / ".copilot" / "agents" / "ignored.agent.md", agent_text("no"))
    catalog = load(cwd, env)
    got = {a.name: (a.description, a.source) for a in catalog.agents}
    assert got == {
        "near": ("pkg github", "project"),
        "claude": ("pkg claude only", "project"),
        "root": ("root github", "inherited"),
        "mine": ("user only", "user"),
    }
    assert catalog.notices == ()


def test_user_folder_without_copilot_home(repo: Path, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    write(tmp_path / "home" / ".copilot" / "agents" / "mine.agent.md", agent_text("mine"))
    agent = load(repo, env).get("mine")
    assert agent is not None and agent.source == "user"


def test_nothing_above_the_repository_root_is_read(repo: Path, env: dict[str, str]) -> None:
    write(repo.parent / ".github" / "agents" / "outside.agent.md", agent_text("outside"))
    folders = [f.path for f in agent_folders(repo / "pkg", env)]
    assert repo.parent / ".github" / "agents" not in folders
    assert load(repo / "pkg", env).agents == ()


def test_outside_a_repository_only_the_working_folder(tmp_path: Path) -> None:
    cwd = tmp_path / "plain" / "sub"
    write(cwd.parent / ".github" / "agents" / "up.agent.md", agent_text("up"))
    write(cwd / ".github" / "agents" / "here.agent.md", agent_text("here"))
    assert load(cwd, {"HOME": str(tmp_path / "h")}).names() == ["here"]


def test_an_sdk_apps_agents_come_first_and_bad_ones_are_notices(
    repo: Path, env: dict[str, str]
) -> None:
    write(repo / ".github" / "agents" / "reviewer.agent.md", REVIEWER)
    catalog = load_agents(
        repo,
        env,
        sdk_agents=[
            {"name": "reviewer", "prompt": "SDK reviewer.", "tools": None, "infer": True},
            {
                "name": "helper",
                "displayName": "Helper",
                "description": "helps",
                "prompt": "P",
                "tools": ["grep"],
                "model": "gpt-5",
            },
            {"prompt": "no name"},
            "not an object",
        ],
    )
    assert catalog.names() == ["reviewer", "helper"]
    reviewer = catalog.get("reviewer")
    assert reviewer is not None and (reviewer.prompt, reviewer.source) == ("SDK reviewer.", "sdk")
    helper = catalog.get("helper")
    assert helper is not None and (helper.tools, helper.model) == (("grep",), "gpt-5")
    assert catalog.notices == (
        "customAgents[2]: field 'name' is required; skipped",
        "customAgents[3]: the entry must be an object; skipped",
    )
    assert load_agents(repo, env, sdk_agents=[], discover=False).agents == ()


TOOLS = [
    ToolRef("view"),
    ToolRef("grep"),
    ToolRef("glob"),
    ToolRef("edit"),
    ToolRef("create"),
    ToolRef("bash"),
    ToolRef("update_todos"),
    ToolRef("ask_user"),
    ToolRef("task_complete"),
    ToolRef("github-search", "github", "search"),
    ToolRef("github-issue", "github", "issue"),
    ToolRef("fs-read", "fs", "read"),
]


@pytest.mark.parametrize(
    ("allowed", "kept"),
    [
        (None, [t.name for t in TOOLS]),
        ((), ["ask_user", "task_complete"]),
        (("read", "search"), ["view", "grep", "glob", "ask_user", "task_complete"]),
        (("Read", "Grep"), ["view", "grep", "ask_user", "task_complete"]),
        (("execute",), ["bash", "ask_user", "task_complete"]),
        (("shell", "todo"), ["bash", "update_todos", "ask_user", "task_complete"]),
        (("edit",), ["edit", "create", "ask_user", "task_complete"]),
        (("create", "nonsense"), ["create", "ask_user", "task_complete"]),
        (("github/*",), ["ask_user", "task_complete", "github-search", "github-issue"]),
        (("github/issue", "fs-read"), ["ask_user", "task_complete", "github-issue", "fs-read"]),
    ],
)
def test_an_agents_tools_keep_copilots_aliases(
    allowed: tuple[str, ...] | None, kept: list[str]
) -> None:
    assert kept_tools(allowed, TOOLS) == kept
