"""``loopdeck -p`` with sub-agents: the task call is printed like any tool; a sub-agent's
reply is not the answer, and its error is its call's, not the session's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.cli import workspace as workspace  # the fixture
from tests.support.subagents import explorer, task_call


def script(tmp_path: Path, sub: dict[str, object]) -> Path:
    path = tmp_path / "subs.json"
    body = {
        "turns": [
            {"text": "Delegating.", "tool_calls": [task_call("finder", "Find the needle.")]},
            {"text": "The answer."},
        ],
        "subagents": {"finder": sub},
    }
    path.write_text(json.dumps(body), "utf-8")
    return path


def test_a_sub_agents_reply_is_not_the_answer(
    workspace: Path, loopdeck_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, explorer("needle", "notes.txt line 1."))
    code, out, err = run(capsys, "-p", "find it", "--model", f"scripted:{path}")
    assert code == 0, err
    assert out.startswith("The answer.") and "notes.txt line 1." not in out
    assert "✓ task description=finder search" in err


def test_a_failed_sub_agent_is_its_calls_failure(
    workspace: Path, loopdeck_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, {"turns": [{"error": {"type": "auth", "message": "bad key"}}]})
    code, out, err = run(capsys, "-p", "find it", "--model", f"scripted:{path}")
    assert code == 0, err
    assert out.startswith("The answer.")
    assert "✗ task description=finder search — bad key" in err
    assert "error (auth)" not in err
