"""The headless CLI contract: ``loopdeck -p``, ``loopdeck sessions``, exit codes."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.models.select import PROVIDER_DEFAULTS
from tests.support.cli import (
    GREP_X,
    log_of,
    meta_of,
    resumed_id,
    run,
    session_dirs,
    write_script,
)
from tests.support.cli import workspace as workspace  # the fixture

# --- text output -------------------------------------------------------------------


def test_text_interactive_prints_final_answer_and_resume_hint(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"text": "Let me search.", "tool_calls": [GREP_X]}, {"text": "Found it in notes.txt."}],
    )
    code, out, err = run(capsys, "-p", "where is the needle?", "--model", f"scripted:{script}")
    assert code == 0
    assert out == "Found it in notes.txt.\n"
    assert "✓ grep pattern=needle" in err
    sid = resumed_id(err, loopdeck_home)
    assert err.rstrip().endswith(f"Resume this session with: loopdeck --resume {sid[:8]}")
    meta = meta_of(loopdeck_home, sid)
    assert meta["cwd"] == str(workspace)
    assert meta["mode"] == "interactive"
    assert meta["turns"] == 2
    assert meta["firstPrompt"] == "where is the needle?"


def test_text_autopilot_prints_task_complete_summary(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "Searching.", "tool_calls": [GREP_X]},
            {
                "text": "All done.",
                "tool_calls": [
                    {"name": "task_complete", "arguments": {"summary": "Needle is in notes.txt"}}
                ],
            },
        ],
    )
    code, out, err = run(
        capsys, "-p", "find the needle", "--autopilot", "--model", f"scripted:{script}"
    )
    assert code == 0
    assert out == "Needle is in notes.txt\n"
    sid = resumed_id(err, loopdeck_home)
    assert meta_of(loopdeck_home, sid)["mode"] == "autopilot"
    types = [e["type"] for e in log_of(loopdeck_home, sid)]
    assert types.count("session.task_complete") == 1
    assert types.count("user.message") == 1  # no nudge was needed


# --- json output -------------------------------------------------------------------


def test_json_output_is_one_event_per_line_ending_with_idle(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"text": "Looking.", "tool_calls": [GREP_X]}, {"text": "It is in notes.txt."}],
    )
    code, out, err = run(
        capsys, "-p", "find it", "--output-format", "json", "--model", f"scripted:{script}"
    )
    assert code == 0
    lines = out.splitlines()
    assert len(lines) > 5
    events = [json.loads(line) for line in lines]
    for event in events:
        assert {"type", "data", "id", "timestamp"} <= event.keys(), event
        assert isinstance(event["data"], dict)
    types = [e["type"] for e in events]
    assert types[-1] == "session.idle"
    assert types.count("session.idle") == 1
    assert events[-1]["data"].get("aborted") is None
    prompts = [e["data"]["content"] for e in events if e["type"] == "user.message"]
    assert prompts == ["find it"]
    assert "tool.execution_complete" in types
    messages = [e["data"]["content"] for e in events if e["type"] == "assistant.message"]
    assert messages == ["Looking.", "It is in notes.txt."]
    # Every stdout line parsed as JSON above: no plain-text answer; the hint is on stderr.
    resumed_id(err, loopdeck_home)


# --- exit codes --------------------------------------------------------------------


def test_provider_auth_error_exits_1(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "auth.json", [{"error": {"type": "auth", "message": "invalid API key"}}]
    )
    code, out, err = run(capsys, "-p", "hi", "--model", f"scripted:{script}")
    assert code == 1
    assert out == ""
    assert "error (auth): invalid API key" in err
    assert "Traceback" not in err
    sid = resumed_id(err, loopdeck_home)
    errors = [e for e in log_of(loopdeck_home, sid) if e["type"] == "session.error"]
    assert [e["data"]["errorType"] for e in errors] == ["auth"]


def test_bad_cwd_exits_2(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "does-not-exist"
    code, out, err = run(capsys, "-p", "hi", "--model", "scripted:demo", "--cwd", str(missing))
    assert code == 2
    assert out == ""
    assert f"--cwd {missing}: not a directory" in err
    assert session_dirs(loopdeck_home) == []


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_empty_prompt_exits_2(
    workspace: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str], prompt: str
) -> None:
    code, _, err = run(capsys, "-p", prompt, "--model", "scripted:demo")
    assert code == 2
    assert "-p needs a non-empty prompt" in err
    assert session_dirs(loopdeck_home) == []


def test_unknown_shipped_script_exits_2(
    workspace: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-p", "hi", "--model", "scripted:no-such-script")
    assert code == 2
    assert "no shipped script named 'no-such-script'" in err
    assert "demo" in err  # lists what is shipped
    assert "Traceback" not in err
    assert session_dirs(loopdeck_home) == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"turns": [', "not valid JSON"),
        ('{"turns": [{"txt": "typo"}]}', "turns.0.txt"),
        ('{"turns": [{"error": {"type": "boom"}}]}', "turns.0.error.type must be one of"),
        ('{"turns": [], "when_exhausted": "loop"}', "when_exhausted"),
    ],
)
def test_malformed_script_exits_2_naming_the_file(
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    problem: str,
) -> None:
    bad = tmp_path / "broken-script.json"
    bad.write_text(content, "utf-8")
    code, out, err = run(capsys, "-p", "hi", "--model", f"scripted:{bad}")
    assert code == 2
    assert out == ""
    assert str(bad) in err
    assert problem in err
    assert "Traceback" not in err
    assert session_dirs(loopdeck_home) == []


def test_missing_script_file_exits_2(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.json"
    code, _, err = run(capsys, "-p", "hi", "--model", f"scripted:{missing}")
    assert code == 2
    assert f"script file not found: {missing}" in err


def test_resume_and_continue_together_is_bad_usage(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-p", "hi", "--resume", "abc", "--continue")
    assert code == 2
    assert "not allowed with argument" in err


def test_autopilot_cap_without_task_complete_exits_3(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "never.json", [{"text": "Still thinking."}], when_exhausted="repeat_last"
    )
    code, out, err = run(
        capsys,
        "-p",
        "do it",
        "--autopilot",
        "--max-autopilot-continues",
        "2",
        "--model",
        f"scripted:{script}",
    )
    assert code == 3
    assert out == "Still thinking.\n"
    sid = resumed_id(err, loopdeck_home)
    # Says what happened and how to go on.
    assert (
        "Autopilot stopped at its cap of 2 nudges without the task marked complete (exit 3)." in err
    )
    assert f'To go on: loopdeck -p "…" --resume {sid[:8]} --autopilot ' in err
    assert "--max-autopilot-continues N" in err
    log = log_of(loopdeck_home, sid)
    users = [e["data"] for e in log if e["type"] == "user.message"]
    nudges = [u for u in users if u.get("isAutopilotContinuation")]
    assert len(nudges) == 2
    assert len(users) == 3  # the prompt and the two nudges
    assert [e["type"] for e in log].count("assistant.turn_start") == 3
    stopped = [e for e in log if e["type"] == "session.autopilot_stopped"]
    assert len(stopped) == 1
    assert "2 nudges" in stopped[0]["data"]["reason"]
    assert not any(e["type"] == "session.task_complete" for e in log)


def test_negative_autopilot_cap_is_bad_usage(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-p", "x", "--autopilot", "--max-autopilot-continues", "-1")
    assert code == 2
    assert "must be 0 or more" in err


def test_sigint_aborts_with_130_and_idle_last(
    workspace: Path, tmp_path: Path, loopdeck_home: Path
) -> None:
    script = write_script(tmp_path / "slow.json", [{"text": "slow reply", "delay_ms": 30_000}])
    stderr_path = tmp_path / "stderr.txt"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app.cli",
                "-p",
                "take your time",
                "--output-format",
                "json",
                "--model",
                f"scripted:{script}",
            ],
            cwd=workspace,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        assert proc.stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        try:
            seen: list[str] = []
            # Interrupt mid-turn: once the model call is under way.
            while not seen or json.loads(seen[-1])["type"] != "assistant.turn_start":
                line = lines.get(timeout=15)
                assert line is not None, "loopdeck exited before starting a turn"
                seen.append(line)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=5)
            elapsed = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    rest: list[str] = seen
    while (line := lines.get(timeout=5)) is not None:
        rest.append(line)
    err = stderr_path.read_text("utf-8")
    assert code == 130, err
    assert elapsed < 4
    events = [json.loads(line) for line in rest]
    assert events[-1]["type"] == "session.idle"
    assert events[-1]["data"]["aborted"] is True
    assert [e["type"] for e in events].count("session.idle") == 1
    assert "abort" in [e["type"] for e in events]
    assert "Traceback" not in err
    sid = resumed_id(err, loopdeck_home)
    types = [e["type"] for e in log_of(loopdeck_home, sid)]
    assert types.count("assistant.turn_start") == types.count("assistant.turn_end") == 1


# --- resume ------------------------------------------------------------------------


def test_resume_by_prefix_continues_session_and_script(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"text": "answer one"}, {"text": "answer two"}, {"text": "answer three"}],
    )
    model = f"scripted:{script}"
    code, out, err = run(capsys, "-p", "first question", "--model", model)
    assert (code, out) == (0, "answer one\n")
    sid = resumed_id(err, loopdeck_home)
    assert meta_of(loopdeck_home, sid)["turns"] == 1

    code, out, err = run(capsys, "-p", "second question", "--model", model, "--resume", sid[:6])
    assert (code, out) == (0, "answer two\n")
    assert resumed_id(err, loopdeck_home) == sid
    assert [p.name for p in session_dirs(loopdeck_home)] == [sid]  # same file, no new session
    meta = meta_of(loopdeck_home, sid)
    assert meta["turns"] == 2
    assert meta["firstPrompt"] == "first question"
    log = log_of(loopdeck_home, sid)
    types = [e["type"] for e in log]
    assert types.count("session.start") == 1
    assert types.count("session.resume") == 1
    prompts = [e["data"]["content"] for e in log if e["type"] == "user.message"]
    assert prompts == ["first question", "second question"]
    replies = [e["data"]["content"] for e in log if e["type"] == "assistant.message"]
    assert replies == ["answer one", "answer two"]


def test_continue_picks_latest_session_of_this_directory(
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "answer one"}, {"text": "answer two"}])
    model = f"scripted:{script}"
    _, _, err = run(capsys, "-p", "here", "--model", model)
    here_id = resumed_id(err, loopdeck_home)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _, _, err = run(capsys, "-p", "there", "--model", model)
    there_id = resumed_id(err, loopdeck_home)
    assert there_id != here_id

    # Back in the first directory: --continue takes its session, not the newer one,
    # and without --model it reuses the model the session recorded.
    monkeypatch.chdir(workspace)
    code, out, err = run(capsys, "-p", "and again", "--continue")
    assert (code, out) == (0, "answer two\n")
    assert resumed_id(err, loopdeck_home) == here_id
    assert meta_of(loopdeck_home, here_id)["turns"] == 2
    assert meta_of(loopdeck_home, there_id)["turns"] == 1


def test_resume_unknown_id_exits_2(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    run(capsys, "-p", "hello", "--model", f"scripted:{script}")
    before = [p.name for p in session_dirs(loopdeck_home)]
    code, out, err = run(
        capsys, "-p", "hi", "--model", f"scripted:{script}", "--resume", "ffffffff-nope"
    )
    assert code == 2
    assert out == ""
    assert "no session 'ffffffff-nope'" in err  # looked up in loopdeck's and Copilot's
    assert "Traceback" not in err
    assert [p.name for p in session_dirs(loopdeck_home)] == before


def test_continue_with_no_sessions_exits_2(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-p", "hi", "--model", "scripted:demo", "--continue")
    assert code == 2
    assert f"no sessions in {workspace} yet" in err


# --- loopdeck sessions -------------------------------------------------------------


def test_sessions_lists_id_mode_turns_and_first_prompt(
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("HOME", str(tmp_path))
    code, out, _ = run(capsys, "sessions")
    assert code == 0
    assert "No sessions yet" in out

    chat = write_script(
        tmp_path / "chat.json",
        [
            {
                "text": "Looking.",
                "tool_calls": [GREP_X],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "cost": 0.002},
            },
            {"text": "ok", "usage": {"prompt_tokens": 1300, "completion_tokens": 5, "cost": 0.003}},
        ],
    )
    done = write_script(
        tmp_path / "done.json",
        [{"tool_calls": [{"name": "task_complete", "arguments": {"summary": "did it"}}]}],
    )
    _, _, err = run(capsys, "-p", "explain the needle", "--model", f"scripted:{chat}")
    chat_id = resumed_id(err, loopdeck_home)
    _, _, err = run(capsys, "-p", "fix everything", "--autopilot", "--model", f"scripted:{done}")
    auto_id = resumed_id(err, loopdeck_home)

    code, out, _ = run(capsys, "sessions")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "ID",
        "STARTED",
        "CWD",
        "MODEL",
        "MODE",
        "TURNS",
        "TOOLS",
        "OUTCOME",
        "TOOK",
        "IN",
        "OUT",
        "COST",
        "FIRST",
        "PROMPT",
    ]
    rows = {line.split()[0]: line for line in lines[1:3]}
    assert set(rows) == {chat_id[:8], auto_id[:8]}
    took = r"\d+(ms|\.\d+s)"
    # Tokens and cost as the session's timeline counts them (a script without usage: 0).
    chat_row = (
        rf"\binteractive\s+2\s+1\s+completed\s+{took}\s+2\.5k\s+35\s+\$0\.0050"
        r"\s+explain the needle$"
    )
    assert re.search(chat_row, rows[chat_id[:8]])
    auto_row = rf"\bautopilot\s+1\s+1\s+completed\s+{took}\s+0\s+0\s+-\s+fix everything$"
    assert re.search(auto_row, rows[auto_id[:8]])
    assert "  ~/ws  " in rows[chat_id[:8]]  # cwd shown relative to $HOME
    # Most recent first.
    assert lines[1].startswith(auto_id[:8])
    assert "loopdeck --resume ID" in out and "loopdeck replay ID" in out
    assert "more elsewhere" not in out

    # A session of another directory is left out here, counted, and shown by --all.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _, _, err = run(
        capsys, "-p", "other place", "--model", f"scripted:{chat}", "--cwd", str(elsewhere)
    )
    other_id = resumed_id(err, loopdeck_home)
    code, out, _ = run(capsys, "sessions")
    assert code == 0
    assert other_id[:8] not in out
    assert "1 more elsewhere: loopdeck sessions --all" in out
    code, out, _ = run(capsys, "sessions", "--all")
    assert code == 0
    other_row = (
        rf"^{other_id[:8]} .*~/elsewhere\s+\S+\s+interactive\s+2\s+1\s+completed\s+{took}"
        r"\s+2\.5k\s+35\s+\$0\.0050\s+other place$"
    )
    assert re.search(other_row, out, re.M)
    assert chat_id[:8] in out and auto_id[:8] in out


# --- system prompt and model setup ---------------------------------------------------


def test_show_system_prompt_names_cwd_and_task_complete_in_autopilot(
    workspace: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--show-system-prompt", "--model", "scripted:demo")
    assert code == 0
    assert f"Working directory: {workspace}" in out
    assert "# Mode: interactive" in out
    assert "task_complete" not in out

    code, out, _ = run(capsys, "--show-system-prompt", "--autopilot", "--model", "scripted:demo")
    assert code == 0
    assert f"Working directory: {workspace}" in out
    assert "# Mode: autopilot" in out
    assert "call task_complete" in out
    assert session_dirs(loopdeck_home) == []  # printing the prompt starts no session


def test_show_system_prompt_honours_cwd_flag(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    code, out, _ = run(capsys, "--show-system-prompt", "--cwd", str(other))
    assert code == 0
    assert f"Working directory: {other}" in out


def test_no_model_configured_explains_and_stays_offline(
    workspace: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for keys, _ in PROVIDER_DEFAULTS:
        for key in keys:
            monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("LOOPDECK_MODEL", raising=False)

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("loopdeck touched the network without a model")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setitem(sys.modules, "litellm", None)  # importing it would fail loudly

    code, out, err = run(capsys, "-p", "hello")
    assert code == 2  # non-zero: nothing can run
    assert out == ""
    assert "No model is configured" in err
    assert "--model scripted:demo" in err
    assert "LOOPDECK_MODEL" in err
    assert "Traceback" not in err
    assert session_dirs(loopdeck_home) == []
