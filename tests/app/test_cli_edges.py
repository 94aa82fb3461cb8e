"""The command line's rough edges: a bad LOOPDECK_HOME, mistyped commands, no terminal,
a closed pipe, exit 3's explanation, resumed runs, rule kinds, the quit hint.

Where an exit code or a traceback at exit is the point, the command runs as a real
process; the rest runs in-process (``run`` from tests/support/cli.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.cli import build_parser
from tests.support.cli import (
    GREP_X,
    TIMEOUT,
    log_of,
    loopdeck,
    meta_of,
    resumed_id,
    run,
    session_dirs,
    write_script,
)
from tests.support.cli import workspace as workspace  # the fixture
from tests.support.paths import FIXTURES
from tests.support.pty_app import AppInPty

FIXTURE_LOG = FIXTURES / "loopdeck-session" / "events.jsonl"


@pytest.fixture
def opened_app(monkeypatch: pytest.MonkeyPatch) -> list[argparse.Namespace]:
    """Stands in for the terminal app: records the flags it would have opened with."""
    opened: list[argparse.Namespace] = []

    def fake_run_tui(args: argparse.Namespace, cwd: Path) -> int:
        opened.append(args)
        return 0

    monkeypatch.setattr("app.tui.run_tui", fake_run_tui)
    monkeypatch.setattr("app.cli.need_terminal", lambda prog, instead: True, raising=False)
    return opened


# --- an unusable LOOPDECK_HOME ------------------------------------------------------


def bad_homes(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n", encoding="utf-8")
    return {"is a file": a_file, "under a file": a_file / "home"}


@pytest.mark.parametrize("case", ["is a file", "under a file"])
def test_headless_with_a_bad_home_is_one_line_and_exit_2(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    home = bad_homes(tmp_path)[case]
    monkeypatch.setenv("LOOPDECK_HOME", str(home))
    code, out, err = run(capsys, "-p", "hi", "--model", "scripted:demo")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert f"loopdeck: cannot use the session folder {home}" in err
    assert f"{tmp_path / 'a-file'} is not a directory" in err
    assert "set LOOPDECK_HOME to a writable directory" in err


def test_the_app_with_a_bad_home_does_not_open(workspace: Path, tmp_path: Path) -> None:
    home = bad_homes(tmp_path)["under a file"]
    done = loopdeck("--model", "scripted:demo", home=home, cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("loopdeck: cannot use the session folder")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""  # no escape codes: the app never started


def test_the_sdk_runtime_with_a_bad_home_exits_2(workspace: Path, tmp_path: Path) -> None:
    home = bad_homes(tmp_path)["is a file"]
    done = loopdeck("--headless", "--stdio", home=home, cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"loopdeck: cannot use the session folder {home} ({home} is not a directory); "
        "set LOOPDECK_HOME to a writable directory\n"
    )


@pytest.mark.parametrize(
    "argv",
    [("sessions",), ("sessions", "--all"), ("replay", "abc"), ("watch", "abc"), ("export", "abc")],
)
def test_subcommands_with_a_bad_home_exit_2(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
) -> None:
    home = bad_homes(tmp_path)["under a file"]
    monkeypatch.setenv("LOOPDECK_HOME", str(home))
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err == (
        f"loopdeck {argv[0]}: cannot use the session folder {home} "
        f"({tmp_path / 'a-file'} is not a directory); set LOOPDECK_HOME to a writable directory\n"
    )


def test_a_path_to_a_log_needs_no_home(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOOPDECK_HOME", str(bad_homes(tmp_path)["is a file"]))
    code, out, _ = run(capsys, "export", str(FIXTURE_LOG))
    assert code == 0 and out.startswith("# ")


def test_a_read_only_home_exits_2(workspace: Path, tmp_path: Path) -> None:
    """A read-only filesystem refuses even root: a tmpfs mounted read-only in a private
    mount namespace (skipped where unprivileged namespaces are not available)."""
    unshare = shutil.which("unshare")
    mountpoint = tmp_path / "ro"
    mountpoint.mkdir()
    if unshare is None:
        pytest.skip("unshare is not installed")
    probe = subprocess.run(
        [unshare, "-rm", "mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(mountpoint)],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {probe.stderr!r}")
    script = (
        f"mount -t tmpfs -o ro tmpfs {mountpoint} && "
        f'exec "$0" -m app.cli -p hi --model scripted:demo'
    )
    env = {**os.environ, "LOOPDECK_HOME": str(mountpoint / "home")}
    done = subprocess.run(
        [unshare, "-rm", "sh", "-c", script, sys.executable],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2, done.stderr
    assert "Read-only file system" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_home_without_write_permission_exits_2(
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into a chmod'd folder anyway (see the read-only test)")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    monkeypatch.setenv("LOOPDECK_HOME", str(locked / "home"))
    code, _, err = run(capsys, "-p", "hi", "--model", "scripted:demo")
    assert code == 2
    assert "Permission denied" in err and err.count("\n") == 1


# --- mistyped subcommands and unquoted prompts ---------------------------------------


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (("sesions",), "sessions"),
        (("sesions", "--all"), "sessions"),
        (("Sessions",), "sessions"),
        (("replya", "3f2a"), "replay"),
        (("wacth", "3f2a"), "watch"),
        (("exprot", "3f2a", "--format", "html"), "export"),
        (("--model", "scripted:demo", "sesion"), "sessions"),
    ],
)
def test_a_near_miss_of_a_subcommand_is_an_error_that_suggests_it(
    workspace: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    opened_app: list[argparse.Namespace],
    argv: tuple[str, ...],
    meant: str,
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert f"did you mean `loopdeck {meant}`?" in err
    word = next(a for a in argv if not a.startswith("-") and a != "scripted:demo")
    assert f"loopdeck -- {word}" in err  # how to send it as a prompt after all
    assert opened_app == []
    assert session_dirs(loopdeck_home) == []


def test_an_unquoted_prompt_of_several_words_asks_for_quotes(
    workspace: Path, capsys: pytest.CaptureFixture[str], opened_app: list[argparse.Namespace]
) -> None:
    code, _, err = run(capsys, "fix", "the", "failing", "test")
    assert code == 2
    assert 'quote the prompt: loopdeck "fix the failing test"' in err
    assert 'loopdeck -p "fix the failing test"' in err
    assert opened_app == []


@pytest.mark.parametrize(
    ("argv", "prompt"),
    [
        (("fix the failing test",), "fix the failing test"),
        (("hello",), "hello"),
        (("--", "sesions"), "sesions"),
        (("--", "fix", "it"), "fix it"),
        (("--model", "scripted:demo", "export this as csv"), "export this as csv"),
    ],
)
def test_a_quoted_prompt_or_one_after_dashes_opens_the_app(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    opened_app: list[argparse.Namespace],
    argv: tuple[str, ...],
    prompt: str,
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    assert [" ".join(a.prompt_words) for a in opened_app] == [prompt]


# --- no terminal --------------------------------------------------------------------


def test_replay_without_a_terminal_suggests_export(workspace: Path, loopdeck_home: Path) -> None:
    done = loopdeck("replay", str(FIXTURE_LOG), home=loopdeck_home, cwd=workspace)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "loopdeck replay: needs a terminal (stdout is not one); "
        f"to read it as text: loopdeck export {FIXTURE_LOG}\n"
    )


def test_watch_without_a_terminal_exits_2(workspace: Path, loopdeck_home: Path) -> None:
    done = loopdeck("watch", str(FIXTURE_LOG), home=loopdeck_home, cwd=workspace)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("loopdeck watch: needs a terminal (stdout is not one)")


def test_the_app_without_a_terminal_exits_2(workspace: Path, loopdeck_home: Path) -> None:
    done = loopdeck("--model", "scripted:demo", home=loopdeck_home, cwd=workspace)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "loopdeck: needs a terminal (stdout is not one); for one answer without the app: "
        'loopdeck -p "…"\n'
    )
    assert session_dirs(loopdeck_home) == []


# --- a reader that goes away (`| head`) ---------------------------------------------


def closed_pipe_run(*argv: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """stdout is a pipe whose reader is already gone: every write meets EPIPE, as in
    ``loopdeck sessions --all | head -3`` once head has its lines."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return loopdeck(*argv, home=home, cwd=cwd, stdout=write_end)
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "argv",
    [
        ("sessions", "--all"),
        ("sessions",),
        ("export", str(FIXTURE_LOG)),
        ("export", str(FIXTURE_LOG), "--format", "html"),
        ("--show-system-prompt", "--model", "scripted:demo"),
        ("-p", "hi", "--model", "scripted:{script}"),
        ("-p", "hi", "--model", "scripted:{script}", "--output-format", "json"),
    ],
)
def test_a_closed_pipe_ends_quietly(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, argv: tuple[str, ...]
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "an answer " * 50}])
    argv = tuple(a.replace("{script}", str(script)) for a in argv)
    if argv[0] == "sessions":  # something to list
        done = loopdeck(
            "-p", "first", "--model", f"scripted:{script}", home=loopdeck_home, cwd=workspace
        )
        assert done.returncode == 0, done.stderr
    done = closed_pipe_run(*argv, home=loopdeck_home, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "BrokenPipe" not in done.stderr and "Exception ignored" not in done.stderr


# --- exit 3 explains itself -----------------------------------------------------------


def test_other_exits_say_nothing_of_the_cap(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "fine"}])
    code, _, err = run(capsys, "-p", "hi", "--model", f"scripted:{script}")
    assert code == 0 and "Autopilot stopped" not in err


# --- resumed headless runs print only themselves ---------------------------------------


def first_then_resume(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *resume_flags: str
) -> tuple[str, tuple[int, str, str]]:
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "Searching.", "tool_calls": [GREP_X]},
            {"text": "Found it."},
            {"text": "Second answer."},
        ],
    )
    code, _, err = run(capsys, "-p", "first question", "--model", f"scripted:{script}")
    assert code == 0 and "✓ grep pattern=needle" in err
    return err, run(capsys, "-p", "second question", *resume_flags)


def test_a_resumed_text_run_prints_only_its_own_tool_lines(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first_err, (code, out, err) = first_then_resume(capsys, tmp_path, "--continue")
    assert code == 0
    assert out == "Second answer.\n"
    assert "grep" not in err  # the earlier run's tool did not run again
    assert resumed_id(err, loopdeck_home) == resumed_id(first_err, loopdeck_home)


def test_a_resumed_json_run_emits_only_this_runs_events(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, (code, out, err) = first_then_resume(
        capsys, tmp_path, "--continue", "--output-format", "json"
    )
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "session.resume"
    assert "session.start" not in types and "tool.execution_start" not in types
    assert [e["data"]["content"] for e in events if e["type"] == "user.message"] == [
        "second question"
    ]
    assert types[-1] == "session.idle" and types.count("session.idle") == 1
    # Every event printed is this run's: all of them after the log's first run.
    sid = resumed_id(err, loopdeck_home)
    logged = [e["id"] for e in log_of(loopdeck_home, sid)]
    resume_at = logged.index(events[0]["id"])
    assert {e["id"] for e in events if not e.get("ephemeral")} <= set(logged[resume_at:])


def test_continue_without_autopilot_runs_interactive(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = {"name": "task_complete", "arguments": {"summary": "did it"}}
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "", "tool_calls": [done]},
            {"text": "plain answer"},
            {"text": "", "tool_calls": [done]},
        ],
    )
    model = f"scripted:{script}"
    code, _, err = run(capsys, "-p", "go", "--autopilot", "--model", model)
    assert code == 0
    sid = resumed_id(err, loopdeck_home)
    assert meta_of(loopdeck_home, sid)["mode"] == "autopilot"

    code, out, _ = run(capsys, "-p", "a question", "--continue")
    assert (code, out) == (0, "plain answer\n")
    assert meta_of(loopdeck_home, sid)["mode"] == "interactive"
    log = log_of(loopdeck_home, sid)
    changes = [e["data"] for e in log if e["type"] == "session.mode_changed"]
    assert changes == [{"previousMode": "autopilot", "newMode": "interactive"}]
    asked = [e["data"] for e in log if e["type"] == "user.message"]
    assert asked[-1]["content"] == "a question" and asked[-1].get("agentMode") == "interactive"

    code, out, _ = run(capsys, "-p", "finish", "--continue", "--autopilot")
    assert (code, out) == (0, "did it\n")
    assert meta_of(loopdeck_home, sid)["mode"] == "autopilot"


# --- permission rules ---------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [("--allow-tool", "bogus"), ("--deny-tool", "bogus(rm)"), ("--allow-tool", "wirte")],
)
@pytest.mark.parametrize("headless", [True, False])
def test_an_unknown_rule_kind_is_a_usage_error(
    workspace: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    opened_app: list[argparse.Namespace],
    flags: tuple[str, str],
    headless: bool,
) -> None:
    prompt = ("-p", "hi") if headless else ()
    code, out, err = run(capsys, *prompt, "--model", "scripted:demo", *flags)
    assert code == 2
    assert out == ""
    kind = flags[1].split("(")[0]
    assert f"unknown kind {kind!r}" in err
    assert "shell, write, create, edit, bash" in err
    assert opened_app == [] and session_dirs(loopdeck_home) == []


def test_a_denied_part_of_a_chained_command_is_named_on_stderr(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bash = {"name": "bash", "arguments": {"command": "echo hi && touch made"}}
    script = write_script(tmp_path / "s.json", [{"tool_calls": [bash]}, {"text": "ok"}])
    code, _, err = run(
        capsys, "-p", "go", "--model", f"scripted:{script}", "--allow-tool", "shell(echo)"
    )
    assert code == 0
    assert "(not allowed by any rule: `touch made`)" in err
    assert not (workspace / "made").exists()


# --- quitting the app says how to come back ------------------------------------------------


class FakeLoopdeckApp:
    """Opens the session the way the app does, sends one prompt (or none), quits."""

    prompt: str | None = "hello"

    def __init__(self, opener: Callable[[], Any], **kwargs: Any) -> None:
        self._opener = opener
        self.session: Any = None

    def run(self) -> int:
        async def go() -> None:
            self.session = await self._opener()
            if self.prompt:
                await self.session.send_and_wait(self.prompt)
            await self.session.close()

        asyncio.run(go())
        return 0


@pytest.mark.parametrize("prompt", ["hello", None])
def test_quitting_the_app_prints_how_to_resume(
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    prompt: str | None,
) -> None:
    from app.tui import run_tui

    monkeypatch.setattr("app.app.LoopdeckApp", FakeLoopdeckApp)
    monkeypatch.setattr(FakeLoopdeckApp, "prompt", prompt)
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    args = build_parser().parse_args(["--model", f"scripted:{script}"])
    capsys.readouterr()
    assert run_tui(args, workspace) == 0
    err = capsys.readouterr().err
    if prompt is None:
        # Left without a word: the session is not kept, so there is nothing to resume.
        assert err == "" and session_dirs(loopdeck_home) == []
    else:
        sid = resumed_id(err, loopdeck_home)
        assert err == f"Resume this session with: loopdeck --resume {sid[:8]}\n"


def test_the_real_app_in_a_terminal_prints_the_hint_after_restoring_it(
    workspace: Path, tmp_path: Path, loopdeck_home: Path
) -> None:
    """In a pseudo-terminal the app opens (the terminal check passes), answers, and on
    Ctrl+C twice leaves the alternate screen before it prints how to resume."""
    pytest.importorskip("pty")
    script = write_script(tmp_path / "s.json", [{"text": "Hello from the script."}])
    argv = ["-m", "app.cli", "say hello", "--model", f"scripted:{script}"]
    env = {**os.environ, "LOOPDECK_HOME": str(loopdeck_home), "COLUMNS": "100", "LINES": "30"}
    with AppInPty(argv, env, workspace) as app:
        app.read_until(lambda out: b"Hello from the script." in out, TIMEOUT)
        assert b"Hello from the script." in app.seen, app.seen[-500:]
        os.write(app.fd, b"\x03\x03")  # Ctrl+C twice: quit
        app.read_until(lambda out: b"Resume this session with" in out and out.endswith(b"\n"), 30)
        status = app.wait_exit(TIMEOUT)
    seen = app.seen
    assert status is not None and os.waitstatus_to_exitcode(status) == 0
    sid = resumed_id(seen.decode("utf-8", "replace"), loopdeck_home)
    left_screen = seen.rindex(b"\x1b[?1049l")  # the alternate screen is left first
    hint = seen.rindex(f"Resume this session with: loopdeck --resume {sid[:8]}".encode())
    assert left_screen < hint
