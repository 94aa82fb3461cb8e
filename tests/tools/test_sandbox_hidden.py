"""Hidden paths: credential stores (and any path the user adds) that no command and no
file tool may read. Landlock enforces it for commands by granting reading everywhere
but beneath them; the file tools refuse them always."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from agent.models.select import ConfigValues
from agent.sandbox import landlock
from agent.sandbox.policy import Sandbox, SandboxSettings, default_hidden, probe
from agent.tools.base import ToolContext, ToolError, ToolResult
from agent.tools.bash import BashArgs, BashTool
from agent.tools.glob import GlobArgs, GlobTool
from agent.tools.grep import GrepArgs, GrepTool
from agent.tools.view import ViewArgs, ViewTool
from app.cli import main
from app.sandbox_setup import sandbox_settings
from tests.support.scripting import new_session, scripted

LANDLOCK = probe()
needs_landlock = pytest.mark.skipif(
    not LANDLOCK.available, reason=f"no Landlock here: {LANDLOCK.reason}"
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with credentials beside ordinary files, and a project in it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("SSH-SECRET\n")
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: GH-SECRET\n")
    (home / ".config" / "other.toml").write_text("visible = 1\n")
    (home / ".gitconfig").write_text("[user]\nname = me\n")
    (home / ".netrc").write_text("machine x password NETRC-SECRET\n")
    (home / "proj").mkdir()
    (home / "proj" / "main.py").write_text("print('hi')\n")
    return home


def hidden_of(home: Path) -> tuple[str, ...]:
    return (str(home / ".ssh"), str(home / ".config" / "gh"), str(home / ".netrc"))


async def run_bash(home: Path, command: str) -> ToolResult:
    sandbox = Sandbox(SandboxSettings(hidden=hidden_of(home)), cwd=home / "proj")
    try:
        ctx = ToolContext(cwd=home / "proj", sandbox=sandbox.confinement("interactive"))
        return await BashTool(kill_grace=0.5, drain_grace=0.2).run(BashArgs(command=command), ctx)
    finally:
        sandbox.close()


# --- commands, under Landlock ------------------------------------------------------


@needs_landlock
@pytest.mark.parametrize(
    "command",
    [
        "cat ../.ssh/id_ed25519",
        "cat < ../.ssh/id_ed25519",
        "cat ../.config/gh/hosts.yml",
        "cat ../.netrc",
        "cat /proc/self/root$HOME_DIR/.ssh/id_ed25519",
        "grep -r SECRET ..",
        "cp ../.ssh/id_ed25519 stolen && cat stolen",
        "python3 -c \"print(open('../.ssh/id_ed25519').read())\"",
    ],
)
async def test_a_command_cannot_read_a_hidden_path(home: Path, command: str) -> None:
    result = await run_bash(home, command.replace("$HOME_DIR", str(home)))
    assert "SECRET" not in result.content, result.content
    assert "Permission denied" in result.content


@needs_landlock
async def test_everything_else_still_reads_and_lists(home: Path) -> None:
    result = await run_bash(
        home, "cat ../.gitconfig ../.config/other.toml && ls -a .. ../.config && cat main.py"
    )
    assert result.success, result.content
    for seen in ("name = me", "visible = 1", ".ssh", "proj", "gh", "other.toml", "print('hi')"):
        assert seen in result.content
    # The workspace is written and read as before.
    made = await run_bash(home, "echo made > new.txt && cat new.txt")
    assert made.success and "made" in made.content


@needs_landlock
def test_a_hidden_path_that_does_not_exist_yet_stays_hidden(home: Path) -> None:
    roots = landlock.read_roots([str(home / ".aws")])
    assert str(home / ".ssh") in roots and str(home / ".aws") not in roots
    # Its parent is not granted as a whole: a .aws made later is not beneath a root.
    assert not any(Path(home / ".aws").is_relative_to(r) for r in roots)


def test_read_roots_leave_out_a_symlink_into_a_hidden_path(home: Path) -> None:
    (home / "keys").symlink_to(home / ".ssh")
    (home / "up").symlink_to(home)  # above a hidden path: granting it would grant all
    roots = landlock.read_roots(hidden_of(home))
    assert str(home / "keys") not in roots and str(home / "up") not in roots
    assert str(home / "proj") in roots and str(home / ".gitconfig") in roots
    for root in roots:
        for hidden in hidden_of(home):
            assert not Path(hidden).is_relative_to(root), (root, hidden)


@needs_landlock
def test_cat_outside_through_a_narrow_allow_rule_is_refused(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    """The issue's case: only `shell(cat)` allowed, a file outside named as hidden."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("THE-SECRET\n")
    calls = [
        {"name": "bash", "arguments": {"command": "cat ../outside/secret.txt"}},
        {"name": "bash", "arguments": {"command": "cat < ../outside/secret.txt"}},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"tool_calls": calls}, {"text": "done"}]}))
    code = main(
        [
            "-p",
            "go",
            "--model",
            f"scripted:{script}",
            "--cwd",
            str(ws),
            "--allow-tool",
            "shell(cat)",
            "--sandbox-hide",
            str(outside),
        ]
    )
    assert code == 0
    (log,) = (loopdeck_home / "session-state").glob("*/events.jsonl")
    text = log.read_text("utf-8")
    assert "THE-SECRET" not in text
    results = [
        json.loads(line)["data"]
        for line in text.splitlines()
        if '"tool.execution_complete"' in line
    ]
    assert len(results) == 2
    assert all("Permission denied" in json.dumps(r) for r in results)


# --- the file tools, always ----------------------------------------------------------


def home_ctx(home: Path) -> ToolContext:
    """The workspace is the home itself: the credentials are inside it."""
    sandbox = Sandbox(SandboxSettings(hidden=hidden_of(home)), cwd=home)
    return ToolContext(cwd=home, hidden=sandbox.hidden())


@pytest.mark.parametrize(
    "path", [".ssh/id_ed25519", ".ssh", ".config/gh/hosts.yml", ".netrc", "keys/id_ed25519"]
)
async def test_view_refuses_a_hidden_path(home: Path, path: str) -> None:
    (home / "keys").symlink_to(home / ".ssh")
    with pytest.raises(ToolError, match="hidden"):
        await ViewTool().run(ViewArgs(path=path), home_ctx(home))


async def test_grep_and_glob_skip_hidden_paths(home: Path) -> None:
    ctx = home_ctx(home)
    found = await GrepTool().run(GrepArgs(pattern="SECRET|name = me"), ctx)
    assert "SECRET" not in found.content
    assert ".gitconfig" in found.content
    listed = await GlobTool().run(GlobArgs(pattern="**/*"), ctx)
    assert ".ssh" not in listed.content and ".netrc" not in listed.content
    assert "gh/hosts.yml" not in listed.content
    assert ".config/other.toml" in listed.content and "proj/main.py" in listed.content
    inside = await GrepTool().run(GrepArgs(pattern="print", path="proj"), ctx)
    assert "proj/main.py" in inside.content  # a root with nothing hidden: as before


async def test_the_session_hands_the_hidden_paths_to_its_tools(tmp_path: Path, home: Path) -> None:
    sandbox = Sandbox(SandboxSettings(hidden=hidden_of(home)))
    session, _ = await new_session(scripted([]), tmp_path, sandbox=sandbox)
    try:
        ctx = session.tool_context(lambda _line: None)
        assert set(ctx.hidden) == {Path(h).resolve() for h in hidden_of(home)}
        if sandbox.active:  # the model is told which paths it cannot read
            assert f"{(home / '.ssh').resolve()}" in session.system_prompt()
    finally:
        await session.close()


# --- which paths ---------------------------------------------------------------------


def test_the_default_list(tmp_path: Path) -> None:
    env = {"HOME": "/h", "LOOPDECK_HOME": "/state/loopdeck"}
    assert default_hidden(env) == (
        "/h/.ssh",
        "/h/.aws",
        "/h/.config/gh",
        "/h/.netrc",
        "/h/.docker/config.json",
        "/state/loopdeck",
        "/h/.config/loopdeck",
        "/h/.copilot",
        "/h/.config/github-copilot",
    )


def test_a_hidden_path_holding_the_workspace_is_not_hidden(tmp_path: Path) -> None:
    """Working on ~/.copilot itself: hiding it would hide the work."""
    ws = tmp_path / ".copilot" / "agents"
    ws.mkdir(parents=True)
    sandbox = Sandbox(
        SandboxSettings(hidden=(str(tmp_path / ".copilot"), str(tmp_path / ".ssh"))), cwd=ws
    )
    assert sandbox.hidden() == ((tmp_path / ".ssh").resolve(),)


def test_config_replaces_the_list_and_flags_add_to_it() -> None:
    args = argparse.Namespace(sandbox_hide=None)
    assert sandbox_settings(args, ConfigValues()).hidden is None  # the default list
    config = ConfigValues(sandbox_hidden=("~/.kube",))
    assert sandbox_settings(args, config).hidden == ("~/.kube",)
    args.sandbox_hide = ["/srv/keys"]
    assert sandbox_settings(args, config).hidden == ("~/.kube", "/srv/keys")
    with_default = sandbox_settings(args, ConfigValues()).hidden
    assert with_default is not None and with_default[-1] == "/srv/keys"
    assert with_default[:-1] == default_hidden(os.environ)
