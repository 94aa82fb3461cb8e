"""MCP configuration: Copilot's mcp-config.json unchanged, loopdeck's own file, the
flags, variables, and bad entries as notices (agent/extensions/mcp/config.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.extensions.mcp.config import McpConfig, load_config
from agent.extensions.mcp.naming import tool_name

# Written from Copilot CLI's docs (add-mcp-servers.md, cli-command-reference.md):
# a local server with env, a remote one with headers, both with a tools allow-list.
COPILOT_FILE = {
    "mcpServers": {
        "playwright": {
            "type": "local",
            "command": "npx",
            "args": ["@playwright/mcp@latest"],
            "env": {},
            "tools": ["*"],
        },
        "context7": {
            "type": "http",
            "url": "https://mcp.context7.com/mcp",
            "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_KEY}"},
            "tools": ["resolve-library-id", "get-library-docs"],
        },
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "tools": ["*"]},
        "git": {
            "type": "stdio",
            "command": "uvx",
            "args": ["mcp-server-git", "--repository", "$HOME/repo"],
            "cwd": "/tmp",
            "timeout": 5000,
            "tools": ["*"],
        },
    }
}


def load(env: dict[str, str], **kwargs: object) -> McpConfig:
    return load_config(env, **kwargs)  # type: ignore[arg-type]


def test_a_copilot_config_file_loads_unchanged(tmp_path: Path) -> None:
    home = tmp_path / "copilot"
    home.mkdir()
    (home / "mcp-config.json").write_text(json.dumps(COPILOT_FILE), "utf-8")
    config = load({"COPILOT_HOME": str(home), "HOME": "/home/u", "CONTEXT7_KEY": "k-123"})
    assert config.notices == []
    assert set(config.servers) == {"playwright", "context7", "legacy", "git"}
    local = config.servers["playwright"]
    assert (local.transport, local.command, local.args) == (
        "stdio",
        "npx",
        ("@playwright/mcp@latest",),
    )
    remote = config.servers["context7"]
    assert remote.transport == "http"
    assert remote.headers == {"CONTEXT7_API_KEY": "k-123"}
    assert remote.offers("get-library-docs") and not remote.offers("other")
    assert config.servers["legacy"].transport == "sse"
    git = config.servers["git"]
    assert git.args == ("mcp-server-git", "--repository", "/home/u/repo")
    assert (git.cwd, git.call_timeout, git.connect_timeout) == ("/tmp", 5.0, 60.0)


def test_the_user_file_is_under_home_without_copilot_home(tmp_path: Path) -> None:
    (tmp_path / ".copilot").mkdir()
    (tmp_path / ".copilot" / "mcp-config.json").write_text(json.dumps(COPILOT_FILE), "utf-8")
    assert "git" in load({"HOME": str(tmp_path)}).servers


def test_variables_expand_with_defaults_and_unset_is_empty() -> None:
    inline = {
        "mcpServers": {
            "s": {
                "command": "${BIN:-node}",
                "args": ["${A}", "$B", "x${MISSING}y"],
                "env": {"TOKEN": "${SECRET}"},
            }
        }
    }
    config = load({"A": "1", "B": "2", "SECRET": "s3"}, additional=[json.dumps(inline)])
    server = config.servers["s"]
    assert (server.command, server.args, dict(server.env)) == (
        "node",
        ("1", "2", "xy"),
        {"TOKEN": "s3"},
    )


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "ftp", "command": "x"}, "'type'"),
        ({"type": "local"}, "'command'"),
        ({"command": "x", "args": "not-a-list"}, "'args'"),
        ({"command": "x", "env": {"A": 1}}, "'env'"),
        ({"command": "x", "tools": "*"}, "'tools'"),
        ({"command": "x", "timeout": "soon"}, "'timeout'"),
        ({"type": "http"}, "'url'"),
        ({"type": "http", "url": "ftp://x"}, "'url'"),
        ("just a string", "object"),
    ],
)
def test_a_bad_entry_is_a_notice_naming_server_and_field(entry: object, field: str) -> None:
    inline = {"mcpServers": {"broken": entry, "fine": {"command": "echo"}}}
    config = load({}, additional=[json.dumps(inline)])
    assert list(config.servers) == ["fine"]  # the rest still loads
    assert len(config.notices) == 1
    assert "'broken'" in config.notices[0] and field in config.notices[0]
    assert "broken" in config.configured  # rules may still name it


def test_bad_json_and_missing_files_are_notices(tmp_path: Path) -> None:
    (tmp_path / "mcp-config.json").write_text("{not json", "utf-8")
    config = load(
        {"COPILOT_HOME": str(tmp_path)},
        additional=["{oops", f"@{tmp_path / 'absent.json'}"],
    )
    assert config.servers == {}
    assert len(config.notices) == 3
    assert str(tmp_path / "mcp-config.json") in config.notices[0]
    assert "invalid JSON" in config.notices[0]
    assert config.notices[1].startswith("--additional-mcp-config: invalid JSON")
    assert "absent.json: no such file" in config.notices[2]


def test_vs_code_s_servers_key_is_explained() -> None:
    config = load({}, additional=[json.dumps({"servers": {"x": {"command": "y"}}})])
    assert config.servers == {}
    assert '"mcpServers"' in config.notices[0] and "VS Code" in config.notices[0]


def test_later_sources_win_and_disable_leaves_a_server_out(tmp_path: Path) -> None:
    copilot = tmp_path / "copilot"
    copilot.mkdir()
    (copilot / "mcp-config.json").write_text(
        json.dumps({"mcpServers": {"a": {"command": "from-copilot"}, "b": {"command": "b"}}}),
        "utf-8",
    )
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"mcpServers": {"a": {"command": "from-own"}}}), "utf-8")
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"mcpServers": {"c": {"command": "c"}}}), "utf-8")
    config = load(
        {"COPILOT_HOME": str(copilot)},
        own_config=own,
        additional=[f"@{extra}", json.dumps({"mcpServers": {"a": {"command": "inline"}}})],
        disabled=["b", "nope"],
    )
    assert config.servers["a"].command == "inline"
    assert set(config.servers) == {"a", "c"}
    assert config.configured == {"a", "b", "c"}
    assert list(config.disabled) == ["b"]  # kept: the session may enable it
    assert config.notices == ["--disable-mcp-server nope: no MCP server of that name"]


def test_a_broken_override_does_not_run_the_entry_it_replaces() -> None:
    first = json.dumps({"mcpServers": {"a": {"command": "old"}}})
    second = json.dumps({"mcpServers": {"a": {"type": "local"}}})
    config = load({}, additional=[first, second])
    assert "a" not in config.servers
    assert "'command'" in config.notices[0]


def test_tool_names_join_server_and_tool_as_copilot_does() -> None:
    assert tool_name("my-server", "fetch") == "my-server-fetch"
    assert tool_name("a.b@c", "x y") == "a-b-c-x-y"
    assert tool_name("s", "t", taken={"s-t"}) == "s-t2"
    long = tool_name("s" * 40, "t" * 40)
    assert len(long) == 64
    assert len(tool_name("s" * 40, "t" * 40, taken={long})) == 64


def test_loading_the_config_and_servers_does_not_import_the_sdk() -> None:
    import subprocess

    code = (
        "import sys; import app.mcp_setup, agent.extensions.mcp.servers, "
        "agent.session.session; print('mcp' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
