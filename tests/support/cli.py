"""Running the ``loopdeck`` command and reading what it left: in-process (:func:`run`) or
as its own process (:func:`loopdeck`), the scripts its scripted model follows, and the
session folders, logs and metadata under a LOOPDECK_HOME."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.cli import main

TIMEOUT = 60  # seconds a command run as a process may take: generous, a hang still fails
GREP_X = {"name": "grep", "arguments": {"pattern": "needle"}}  # finds notes.txt's needle
RESUME_HINT = re.compile(r"loopdeck --resume ([0-9a-f-]+)")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory: a workspace holding notes.txt, with a needle in it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("a needle in a haystack\n", encoding="utf-8")
    monkeypatch.chdir(ws)
    return ws


def write_script(path: Path, turns: list[dict[str, Any]], when_exhausted: str = "stop") -> Path:
    """A script for ``--model scripted:PATH``."""
    path.write_text(json.dumps({"turns": turns, "when_exhausted": when_exhausted}), "utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``loopdeck argv`` in-process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse / parser.exit
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def loopdeck(
    *argv: str,
    home: Path | str,
    cwd: Path,
    stdout: int | None = subprocess.PIPE,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.CompletedProcess[str]:
    """``loopdeck argv`` as its own process, stdout/stdin not a terminal."""
    env = {**os.environ, "LOOPDECK_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *argv],
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=TIMEOUT,
    )


def session_dirs(home: Path) -> list[Path]:
    """The session folders under ``home``, sorted (none if there is no session-state)."""
    root = home / "session-state"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def only_session(home: Path) -> Path:
    """The folder of the one session under ``home`` (fails if there are more or none)."""
    sessions = [p for p in (home / "session-state").iterdir() if p.is_dir()]
    assert len(sessions) == 1, sessions
    return sessions[0]


def log_of(home: Path, session_id: str) -> list[dict[str, Any]]:
    """Each line of the session's events.jsonl, parsed."""
    path = home / "session-state" / session_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def meta_of(home: Path, session_id: str) -> dict[str, Any]:
    """The session's session.json."""
    data: dict[str, Any] = json.loads(
        (home / "session-state" / session_id / "session.json").read_text("utf-8")
    )
    return data


def resumed_id(err: str, home: Path) -> str:
    """The full id of the session the stderr resume hint names (it must exist)."""
    match = RESUME_HINT.search(err)
    assert match, f"no resume hint on stderr: {err!r}"
    prefix = match.group(1)
    found = [p.name for p in session_dirs(home) if p.name.startswith(prefix)]
    assert len(found) == 1, (prefix, found)
    return found[0]
