"""Everything loopdeck writes under ``$LOOPDECK_HOME`` is private: files 0600, folders 0700.

Logs hold prompts, paths and tool output. Each test runs under umask 0, so a file
that relies on the umask (rather than asking for 0600) shows up as world-writable.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from agent.log.writer import set_aside_torn_tail
from tests.support.cli import run, write_script

_BESIDE_PYTHON = Path(sys.executable).with_name("loopdeck")


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws


def modes(home: Path) -> dict[str, str]:
    """Every path under ``home`` (and home itself) whose mode is not private."""
    loose: dict[str, str] = {}
    paths = [home, *home.rglob("*")]
    assert len(paths) > 1, f"nothing was written under {home}"
    for path in paths:
        mode = stat.S_IMODE(path.lstat().st_mode)
        wanted = 0o700 if path.is_dir() else 0o600
        if mode != wanted:
            loose[str(path.relative_to(home.parent))] = oct(mode)
    return loose


def test_a_session_and_the_resume_of_a_torn_log_write_only_private_files(
    open_umask: None,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "one"}, {"text": "two"}])
    code, _, err = run(capsys, "-p", "hi", "--model", f"scripted:{script}")
    assert code == 0, err
    assert modes(loopdeck_home) == {}

    (sid,) = [p.name for p in (loopdeck_home / "session-state").iterdir()]
    log = loopdeck_home / "session-state" / sid / "events.jsonl"
    with log.open("a", encoding="utf-8") as fh:
        fh.write('{"type":"user.mess')  # a writer that died mid-line
    code, _, err = run(capsys, "-p", "again", "--model", f"scripted:{script}", "--resume", sid)
    assert code == 0, err
    assert [p.name.startswith("events.torn-") for p in log.parent.glob("*.jsonl")].count(True) == 1
    assert modes(loopdeck_home) == {}


def test_the_runtime_log_is_private(open_umask: None, tmp_path: Path, loopdeck_home: Path) -> None:
    command = (
        [str(_BESIDE_PYTHON)] if _BESIDE_PYTHON.exists() else [sys.executable, "-m", "app.cli"]
    )
    env = dict(os.environ, LOOPDECK_HOME=str(loopdeck_home))
    # stdin at EOF: the runtime starts, finds its client gone, and stops.
    done = subprocess.run(
        [*command, "--headless", "--stdio"],
        input=b"",  # a pipe closed at once
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    logs = list((loopdeck_home / "logs").glob("headless-*.log"))
    assert len(logs) == 1 and "runtime starting" in logs[0].read_text("utf-8")
    assert modes(loopdeck_home) == {}


def test_torn_fragments_set_aside_in_the_same_second_are_all_kept(
    open_umask: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class FrozenClock(datetime):
        @classmethod
        def now(cls, tz: object = None) -> FrozenClock:  # type: ignore[override]
            return cls(2025, 1, 1, 12, 0, 0)

    monkeypatch.setattr("agent.log.writer.datetime", FrozenClock)
    log = tmp_path / "events.jsonl"
    for fragment in ("first half", "second half"):
        log.write_bytes(b'{"type":"x","id":"a"}\n' + fragment.encode())
        assert set_aside_torn_tail(log) is not None
    kept = sorted(p.read_text() for p in tmp_path.glob("events.torn-*.jsonl"))
    assert kept == ["first half", "second half"]
    assert all(
        stat.S_IMODE(p.stat().st_mode) == 0o600 for p in tmp_path.glob("events.torn-*.jsonl")
    )
