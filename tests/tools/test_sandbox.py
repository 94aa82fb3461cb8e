"""The OS sandbox around the bash tool: what a command may write, connect to, and is told."""

from __future__ import annotations

import errno
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import SessionWarningData
from agent.models.select import ConfigError, read_config_file
from agent.permissions.rules import PermissionPolicy
from agent.sandbox import landlock
from agent.sandbox.policy import Sandbox, SandboxSettings, Support, probe
from agent.session.session import Session
from agent.tools.base import ToolContext, ToolResult
from agent.tools.bash import BashArgs, BashTool
from app.cli import main
from tests.support.config import write_config
from tests.support.scripting import FakeRecorder, scripted

LANDLOCK = probe()
needs_landlock = pytest.mark.skipif(
    not LANDLOCK.available, reason=f"no Landlock here: {LANDLOCK.reason}"
)
needs_network_rules = pytest.mark.skipif(
    LANDLOCK.abi < 4, reason="Landlock restricts TCP from ABI 4 on"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """tmp/ws is the workspace; tmp/victim is a file outside it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "inside.txt").write_text("inside\n")
    (tmp_path / "victim").write_text("original\n")
    return workspace


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    probe.cache_clear()
    yield
    probe.cache_clear()


async def bash(
    ws: Path,
    command: str,
    mode: str = "workspace-write",
    *,
    agent_mode: str = "interactive",
    network: bool | None = None,
    add_dirs: list[Path] | None = None,
) -> ToolResult:
    sandbox = Sandbox(
        SandboxSettings(mode=mode, network=network),  # type: ignore[arg-type]
        cwd=ws,
        add_dirs=add_dirs,
    )
    try:
        ctx = ToolContext(cwd=ws, sandbox=sandbox.confinement(agent_mode))
        return await BashTool(kill_grace=0.5, drain_grace=0.2).run(BashArgs(command=command), ctx)
    finally:
        sandbox.close()


def outside_untouched(ws: Path) -> None:
    parent = ws.parent
    assert (parent / "victim").read_text() == "original\n"
    assert sorted(p.name for p in parent.iterdir()) == ["victim", "ws"]


# --- workspace-write -------------------------------------------------------------

ESCAPES = {
    "redirect": "echo x > ../x",
    "append to an outside file": "echo x >> ../victim",
    "truncate an outside file": ": > ../victim",
    "cp": "cp inside.txt ../x",
    "python open": "python3 -c \"open('../x', 'w').write('x')\"",
    "touch": "touch ../x",
    "mkdir": "mkdir ../d",
    "rm": "rm -f ../victim",
    "mv out": "mv inside.txt ../x",
    "absolute path": 'echo x > "$(dirname "$PWD")/x"',
    "symlink made by the command": "ln -s .. up && echo x > up/x",
    "hard link to an outside file": "ln ../victim hard && echo x >> hard",
    "tee": "echo x | tee ../x",
    "sed -i outside": "sed -i s/original/changed/ ../victim",
}


@needs_landlock
@pytest.mark.parametrize("command", ESCAPES.values(), ids=ESCAPES.keys())
async def test_workspace_write_refuses_writes_outside(ws: Path, command: str) -> None:
    result = await bash(ws, command)
    assert not result.success, result.content
    outside_untouched(ws)


@needs_landlock
async def test_a_symlink_in_the_workspace_pointing_out_is_no_way_out(ws: Path) -> None:
    (ws / "link").symlink_to(ws.parent)
    result = await bash(ws, "echo x > link/x; echo y >> link/victim; cp inside.txt link/")
    assert not result.success
    outside_untouched(ws)


@needs_landlock
async def test_a_refused_write_reads_as_a_failure_the_model_understands(ws: Path) -> None:
    result = await bash(ws, "echo x > ../x")
    assert not result.success
    assert "Permission denied" in result.content  # the command's own words first
    assert "sandbox may have refused this" in result.content
    assert f"write only inside {ws}" in result.content
    assert result.error == result.content


@needs_landlock
async def test_writing_inside_the_workspace_and_its_temp_dir_works(ws: Path) -> None:
    command = (
        "echo x > new.txt && mkdir -p d/e && mv new.txt d/e/ && cat d/e/new.txt && "
        'rm inside.txt && echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && '
        "python3 -c 'import tempfile; tempfile.NamedTemporaryFile()' && "
        "echo gone > /dev/null && echo ok"
    )
    result = await bash(ws, command)
    assert result.success, result.content
    assert result.content.splitlines()[:3] == ["x", "t", "ok"]
    assert (ws / "d" / "e" / "new.txt").read_text() == "x\n"
    assert not (ws / "inside.txt").exists()
    outside_untouched(ws)


@needs_landlock
async def test_add_dir_directories_are_writable(ws: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    result = await bash(ws, f"echo x > {extra}/x && echo y > ../y", add_dirs=[extra])
    assert (extra / "x").read_text() == "x\n"
    assert not result.success
    assert not (tmp_path / "y").exists()


@needs_landlock
async def test_the_private_temp_dir_goes_away_with_the_sandbox(ws: Path) -> None:
    sandbox = Sandbox(SandboxSettings(), cwd=ws)
    confinement = sandbox.confinement("interactive")
    assert confinement is not None and confinement.tmpdir is not None
    tmp = confinement.tmpdir
    assert tmp.is_dir() and oct(tmp.stat().st_mode & 0o777) == "0o700"
    assert confinement.env()["TMPDIR"] == str(tmp)
    sandbox.close()
    assert not tmp.exists()


# --- read-only, plan, off --------------------------------------------------------


@needs_landlock
@pytest.mark.parametrize(
    "command", ["echo x > inside.txt", "touch new", "rm inside.txt", "mkdir d", "echo x > ../x"]
)
async def test_read_only_blocks_every_write_inside_too(ws: Path, command: str) -> None:
    result = await bash(ws, command, "read-only")
    assert not result.success
    assert sorted(p.name for p in ws.iterdir()) == ["inside.txt"]
    assert (ws / "inside.txt").read_text() == "inside\n"
    outside_untouched(ws)
    assert "may not write anywhere (read-only)" in result.content


@needs_landlock
async def test_read_only_still_reads_and_runs(ws: Path) -> None:
    result = await bash(ws, "cat inside.txt ../victim && ls / > /dev/null && echo ok", "read-only")
    assert result.success, result.content
    assert result.content.startswith("inside\noriginal\nok")


@needs_landlock
async def test_plan_mode_runs_commands_read_only(ws: Path) -> None:
    result = await bash(ws, "echo x > new.txt", agent_mode="plan")
    assert not result.success
    assert not (ws / "new.txt").exists()


async def test_off_allows_writes_outside(ws: Path) -> None:
    result = await bash(ws, "echo x > ../x && echo y >> ../victim", "off")
    assert result.success, result.content
    assert (ws.parent / "x").read_text() == "x\n"
    assert (ws.parent / "victim").read_text() == "original\ny\n"


# --- network ------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def connect(port: int) -> str:
    return f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\""


@needs_landlock
@needs_network_rules
async def test_network_off_refuses_tcp_connections(ws: Path, listener: int) -> None:
    result = await bash(ws, connect(listener), network=False)
    assert not result.success
    assert "PermissionError" in result.content
    assert "network connections are refused too" in result.content


@needs_landlock
@needs_network_rules
async def test_network_on_by_default_when_interactive_off_in_autopilot(
    ws: Path, listener: int
) -> None:
    interactive = await bash(ws, connect(listener), agent_mode="interactive")
    assert interactive.success, interactive.content
    autopilot = await bash(ws, connect(listener), agent_mode="autopilot")
    assert not autopilot.success
    forced_on = await bash(ws, connect(listener), agent_mode="autopilot", network=True)
    assert forced_on.success, forced_on.content


# --- a kernel without Landlock ---------------------------------------------------


def no_landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    def enosys(number: int, *args: object) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(landlock, "_syscall", enosys)


async def test_without_landlock_commands_fall_back_to_the_rules_with_one_notice(
    ws: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    no_landlock(monkeypatch)
    sandbox = Sandbox(SandboxSettings())
    assert not sandbox.support.available
    assert "no Landlock" in sandbox.support.reason
    assert sandbox.label("interactive") == "no sandbox (rules only)"
    call = {"name": "bash", "arguments": {"command": "echo x >> ../x"}}
    model = scripted([{"tool_calls": [call]}, {"tool_calls": [call]}, {"text": "done"}])
    policy = PermissionPolicy.from_flags([], [], allow_all=True)
    session = await Session.create(model=model, cwd=ws, sandbox=sandbox, policy=policy)
    recorder = FakeRecorder()
    session.subscribe(recorder, replay=True)
    await session.send_and_wait("go")
    warnings = [e.data for e in recorder.events if isinstance(e.data, SessionWarningData)]
    assert len(warnings) == 1
    assert warnings[0].warning_type == "sandbox_unavailable"
    assert "not available" in warnings[0].message and "no Landlock" in warnings[0].message
    # Fallback: unconfined (the rules decided), so the write happened.
    assert (ws.parent / "x").read_text() == "x\nx\n"
    assert "OS sandbox is not available" in session.system_prompt()
    await session.close()


def test_the_wrapper_refuses_to_run_a_command_it_cannot_confine(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_landlock(monkeypatch)
    code = landlock.main(["--mode", "workspace-write", "--write", str(ws), "--", "/bin/true"])
    assert code == landlock.EXIT_REFUSED


def test_the_wrapper_refuses_unknown_arguments(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            landlock.__file__,
            "--mode",
            "bogus",
            "--",
            "/bin/touch",
            str(marker),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == landlock.EXIT_REFUSED
    assert "the command was not run" in proc.stderr
    assert not marker.exists()


@needs_landlock
def test_the_probe_reads_the_kernels_abi() -> None:
    assert landlock.abi_version() == LANDLOCK.abi >= 1
    assert landlock.fs_rights(1) == (1 << 13) - 1
    assert landlock.fs_rights(3) == (1 << 15) - 1


# --- what the model and the user are told ------------------------------------------


def test_prompt_sections_say_what_commands_may_not_do(tmp_path: Path) -> None:
    support = Support(7)
    ww = Sandbox(SandboxSettings(), cwd=tmp_path, add_dirs=[tmp_path / "x"], support=support)
    text = ww.prompt_section("interactive")
    assert "OS sandbox (workspace-write)" in text
    assert f"write only inside {tmp_path}, {tmp_path / 'x'}" in text
    assert "Network access is on." in text
    assert "Network access is off" in ww.prompt_section("autopilot")
    ro = Sandbox(SandboxSettings(mode="read-only"), cwd=tmp_path, support=support)
    assert "not write any, anywhere" in ro.prompt_section("interactive")
    off = Sandbox(SandboxSettings(mode="off"), cwd=tmp_path)
    assert "without an OS sandbox" in off.prompt_section("interactive")
    assert off.label("interactive") == "sandbox off"
    assert ww.label("autopilot") == "sandbox workspace-write · net off"
    assert ro.label("interactive") == "sandbox read-only"


def test_show_system_prompt_shows_the_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--show-system-prompt", "--cwd", str(tmp_path), "--sandbox", "read-only"]) == 0
    out = capsys.readouterr().out
    assert "# Sandbox" in out
    assert "OS sandbox (read-only)" in out or "OS sandbox is not available" in out
    assert main(["--show-system-prompt", "--cwd", str(tmp_path), "--yolo"]) == 0
    assert "without an OS sandbox" in capsys.readouterr().out


def test_the_status_bar_shows_the_sandbox() -> None:
    from widgets.status_bar import StatusBar

    bar = StatusBar()
    assert "sandbox" not in bar.render().plain
    bar.sandbox = "sandbox workspace-write"
    assert "sandbox workspace-write" in bar.render().plain
    from widgets.status_layout import fit

    bar.model, bar.session_id = "anthropic/claude-sonnet-4-5", "0123456789"
    wide = fit(bar.segments(), 200).plain
    assert "sandbox workspace-write" in wide
    narrow = fit(bar.segments(), len(wide) - 25).plain  # id and provider went first
    assert "workspace-write" in narrow and "sandbox workspace" not in narrow
    # Unconfined is a warning that stays when everything else gives way.
    bar.sandbox = "no sandbox (rules only)"
    assert "no sandbox (rules only)" in fit(bar.segments(), 40).plain


# --- flags and config ---------------------------------------------------------------


def test_config_reads_sandbox_keys(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        'sandbox = "read-only"\nsandbox_network = false\n'
        '[shell_env]\ninclude = ["GITHUB_TOKEN"]\nexclude = ["AWS_*"]\n',
    )
    values = read_config_file(path)
    assert values.sandbox == "read-only"
    assert values.sandbox_network is False
    assert values.shell_env_include == ("GITHUB_TOKEN",)
    assert values.shell_env_exclude == ("AWS_*",)
    for bad in ('sandbox = "loose"', "sandbox_network = 1", '[shell_env]\ninclude = "X"'):
        path.write_text(bad)
        with pytest.raises(ConfigError, match=r"config\.toml"):
            read_config_file(path)


def test_flags_over_yolo_over_config(tmp_path: Path) -> None:
    import argparse

    from app.sandbox_setup import sandbox_settings

    path = write_config(tmp_path, 'sandbox = "read-only"\nsandbox_network = true\n')
    config = read_config_file(path)

    def settings(**flags: Any) -> tuple[str, bool | None]:
        s = sandbox_settings(argparse.Namespace(**flags), config)
        return s.mode, s.network

    assert settings() == ("read-only", True)
    assert settings(yolo=True) == ("off", True)
    assert settings(yolo=True, sandbox="workspace-write") == ("workspace-write", True)
    assert settings(sandbox_network="off") == ("read-only", False)
    from agent.models.select import ConfigValues

    assert sandbox_settings(argparse.Namespace(), ConfigValues()) == SandboxSettings()


@needs_landlock
def test_p_runs_commands_in_the_sandbox_and_yolo_turns_it_off(
    ws: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(ws)
    script = tmp_path / "s.json"
    call = {"name": "bash", "arguments": {"command": "echo x > ../escaped"}}
    script.write_text(json.dumps({"turns": [{"tool_calls": [call]}, {"text": "done"}]}))
    argv = ["-p", "write", "--model", f"scripted:{script}", "--allow-all-tools"]
    assert main(argv) == 0
    assert not (tmp_path / "escaped").exists()
    logs = list((loopdeck_home / "session-state").glob("*/events.jsonl"))
    complete = [
        json.loads(line)
        for line in logs[0].read_text().splitlines()
        if '"tool.execution_complete"' in line
    ]
    assert complete[0]["data"]["success"] is False
    assert "sandbox may have refused this" in complete[0]["data"]["error"]["message"]
    assert main([*argv, "--yolo"]) == 0
    assert (tmp_path / "escaped").read_text() == "x\n"
    capsys.readouterr()


async def test_the_app_shows_the_sessions_sandbox_and_the_notice(tmp_path: Path) -> None:
    from app.app import LoopdeckApp
    from tests.support.snapshot_support import wait_for

    unavailable = Support(0, "the kernel has no Landlock")
    sandbox = Sandbox(SandboxSettings(), support=unavailable)

    async def opener() -> Session:
        return await Session.create(model=scripted([]), cwd=tmp_path, sandbox=sandbox)

    app = LoopdeckApp(opener)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: app.session is not None and app.status.sandbox != "")
        assert "no sandbox (rules only)" in app.status.render().plain
        assert app.session is not None
        warnings = [e.data for e in app.session.backlog if isinstance(e.data, SessionWarningData)]
        assert len(warnings) == 1 and "not available" in warnings[0].message


def test_p_without_landlock_warns_once_and_goes_by_the_rules(
    ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fresh_probe: None,
) -> None:
    no_landlock(monkeypatch)
    monkeypatch.chdir(ws)
    script = tmp_path / "s.json"
    call = {"name": "bash", "arguments": {"command": "echo x >> ../escaped"}}
    turns = [{"tool_calls": [call]}, {"tool_calls": [call]}, {"text": "done"}]
    script.write_text(json.dumps({"turns": turns}))
    capsys.readouterr()
    assert main(["-p", "write", "--model", f"scripted:{script}", "--allow-all-tools"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: The OS sandbox is not available") == 1
    assert (tmp_path / "escaped").read_text() == "x\nx\n"  # the rules allowed it
    # Denied by a rule, it does not run: the rules are what is left.
    capsys.readouterr()
    argv = ["-p", "write", "--model", f"scripted:{script}", "--allow-all-tools"]
    assert main([*argv, "--deny-tool", "shell(echo)"]) == 0
    assert (tmp_path / "escaped").read_text() == "x\nx\n"
    capsys.readouterr()


@needs_landlock
@pytest.mark.parametrize("abi", [1, 2, 3, 4, 6])
def test_older_abis_get_the_rules_they_support(ws: Path, abi: int) -> None:
    """What an older kernel gets, played on this one: writes stay confined at every ABI."""
    if abi > LANDLOCK.abi:
        pytest.skip(f"this kernel has ABI {LANDLOCK.abi}")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import landlock\n"
        f"landlock.restrict('workspace-write', [{str(ws)!r}], network=False, abi={abi})\n"
        "open('inside', 'w').write('x')\n"
        "try:\n    open('../outside', 'w')\nexcept PermissionError:\n    print('refused')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(Path(landlock.__file__).parent)],
        cwd=ws,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "refused\n"
    assert (ws / "inside").read_text() == "x"
    outside_untouched(ws)
