"""The workspace's MCP files (``.mcp.json``, ``.github/mcp.json``, from the working
directory up to the repository's root; closer wins, workspace beats user,
``--additional-mcp-config`` beats all), loaded only in a trusted folder; ``-p`` loads
them only when asked to."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from agent.extensions.mcp.config import load_config
from agent.extensions.mcp.workspace import workspace_files, workspace_root
from app.cli import main
from app.mcp_setup import ask_workspace_trust, mcp_config
from app.trust import TrustedFolders
from tests.support.mcp_harness import TIME, needs_time


def servers_file(path: Path, servers: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}), "utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository at tmp_path/repo, with a folder above it that has its own file
    (outside the repository: never read), and loopdeck's and Copilot's config
    folders of its own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot"))
    monkeypatch.delenv("LOOPDECK_WORKSPACE_MCP", raising=False)
    monkeypatch.delenv("GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP", raising=False)
    servers_file(tmp_path / ".mcp.json", {"above": {"command": "above"}})
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def args(prompt: str | None = None, *additional: str) -> argparse.Namespace:
    return argparse.Namespace(
        prompt=prompt, additional_mcp_config=list(additional), disable_mcp_server=[]
    )


def test_files_from_cwd_to_the_repository_root_closer_last(repo: Path) -> None:
    root_file = servers_file(repo / ".mcp.json", {})
    github = servers_file(repo / "sub" / ".github" / "mcp.json", {})
    sub_file = servers_file(repo / "sub" / ".mcp.json", {})
    servers_file(repo / ".vscode" / "mcp.json", {})  # VS Code's: not read
    cwd = repo / "sub" / "deeper"
    cwd.mkdir()
    assert workspace_files(cwd) == [root_file, sub_file, github]
    assert workspace_root(cwd) == repo


def test_closer_wins_workspace_beats_user_additional_beats_all(repo: Path, tmp_path: Path) -> None:
    servers_file(tmp_path / "copilot" / "mcp-config.json", {"a": {"command": "user"}})
    servers_file(repo / ".mcp.json", {"a": {"command": "root"}, "b": {"command": "root"}})
    servers_file(repo / "sub" / ".mcp.json", {"b": {"command": "sub"}, "bad": {"type": "x"}})
    files = workspace_files(repo / "sub")
    env = {"COPILOT_HOME": str(tmp_path / "copilot")}
    config = load_config(env, workspace=files)
    assert (config.servers["a"].command, config.servers["b"].command) == ("root", "sub")
    assert config.servers["a"].source == "workspace"
    assert config.notices == [
        f"workspace MCP config \"{repo / 'sub' / '.mcp.json'}\": MCP server 'bad': "
        "field 'type' must be local, stdio, http or sse, not 'x'; skipped"
    ]
    extra = json.dumps({"mcpServers": {"b": {"command": "flag"}}})
    config = load_config(env, workspace=files, additional=[extra])
    assert config.servers["b"].command == "flag" and config.servers["b"].source == "user"


def test_a_workspace_file_cannot_turn_the_sandbox_off(repo: Path, tmp_path: Path) -> None:
    workspace = servers_file(repo / ".mcp.json", {"free": {"command": "x", "sandbox": False}})
    user = servers_file(tmp_path / "own.json", {"mine": {"command": "y", "sandbox": False}})
    config = load_config({}, own_config=user, workspace=[workspace])
    assert config.servers["free"].sandbox is True
    assert config.servers["mine"].sandbox is False  # the user's own choice stands
    assert any("'free'" in n and '"sandbox": false' in n for n in config.notices)


def test_loaded_only_in_a_trusted_folder(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    servers_file(repo / ".mcp.json", {"ws": {"command": "ws-server"}})
    config = mcp_config(args(), repo)
    assert "ws" not in config.servers and "ws" in config.configured  # rules may name it
    assert "is not trusted yet" in config.notices[0]
    TrustedFolders.of_user().record(repo, "trusted")
    assert mcp_config(args(), repo / ".git").servers["ws"].command == "ws-server"
    # -p: not without the switch, Copilot's included
    assert "-p loads them only when" in mcp_config(args("go"), repo).notices[0]
    monkeypatch.setenv("GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP", "true")
    assert "ws" in mcp_config(args("go"), repo).servers
    monkeypatch.setenv("LOOPDECK_WORKSPACE_MCP", "false")  # decides, trusted or not
    assert "ws" not in mcp_config(args(), repo).servers


def test_the_app_asks_once_per_folder(repo: Path) -> None:
    servers_file(repo / "sub" / ".mcp.json", {"ws": {"command": "ws-server"}})
    questions: list[str] = []

    def answer(text: str) -> str:
        questions.append(text)
        return "y"

    ask_workspace_trust(repo / "sub", ask=answer, interactive=False)
    assert questions == []  # not a terminal: nothing asked, nothing recorded
    ask_workspace_trust(repo / "sub", ask=answer, interactive=True)
    ask_workspace_trust(repo / "sub", ask=answer, interactive=True)
    assert len(questions) == 1 and f"Trust {repo} and load them?" in questions[0]
    assert TrustedFolders.of_user().decision(repo / "sub") == "trusted"
    other = repo.parent / "other"
    (other / ".git").mkdir(parents=True)
    servers_file(other / ".mcp.json", {"x": {"command": "x"}})
    ask_workspace_trust(other, ask=lambda _q: "n", interactive=True)
    assert TrustedFolders.of_user().decision(other) == "declined"
    assert "you declined to trust" in mcp_config(args(), other).notices[0]


@needs_time
def test_p_calls_a_workspace_server_when_asked_to(
    repo: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    servers_file(repo / ".mcp.json", {"time": {"command": str(TIME), "tools": ["*"]}})
    monkeypatch.chdir(repo)
    monkeypatch.setenv("GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP", "true")
    script = tmp_path / "script.json"
    call = {"name": "time-get_current_time", "arguments": {"timezone": "Etc/UTC"}}
    script.write_text(json.dumps({"turns": [{"tool_calls": [call]}, {"text": "ok"}]}), "utf-8")
    capsys.readouterr()
    flags = ["--model", f"scripted:{script}", "--output-format", "json", "--allow-tool", "time"]
    code = main(["-p", "go", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    stream = [json.loads(line) for line in out.splitlines() if line.strip()]
    done = [e["data"] for e in stream if e["type"] == "tool.execution_complete"]
    assert done[0]["success"] is True and "Etc/UTC" in done[0]["result"]["content"]
