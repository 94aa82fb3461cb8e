"""``--mode plan`` on the command line: headless runs answer exit_plan_mode themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import log_of, meta_of, resumed_id, run, write_script
from tests.support.cli import workspace as workspace  # the fixture

session_events = pytest.importorskip("copilot.generated.session_events")

PLAN = "1. Look at notes.txt.\n2. Replace the needle."


def test_headless_plan_mode_keeps_the_plan_and_changes_nothing(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(
        tmp_path / "plan.json",
        [
            {
                "text": "Reading.",
                "tool_calls": [{"name": "view", "arguments": {"path": "notes.txt"}}],
            },
            {
                "text": "Editing right away.",
                "tool_calls": [
                    {
                        "name": "edit",
                        "arguments": {"path": "notes.txt", "old_str": "needle", "new_str": "pin"},
                    }
                ],
            },
            {
                "text": "The plan.",
                "tool_calls": [
                    {"name": "exit_plan_mode", "arguments": {"summary": "Swap it", "plan": PLAN}}
                ],
            },
            {"text": "Planned: swap the needle."},
        ],
    )
    code, out, err = run(
        capsys,
        "-p",
        "swap the needle",
        "--model",
        f"scripted:{script}",
        "--mode",
        "plan",
        "--allow-all-tools",
    )
    assert code == 0, err
    assert out == PLAN + "\n\n" + "Planned: swap the needle.\n"
    assert "✗ edit" in err and "Plan mode is read-only" in err
    assert "✓ exit_plan_mode" in err
    assert (workspace / "notes.txt").read_text() == "a needle in a haystack\n"
    session_id = resumed_id(err, loopdeck_home)
    plan_file = loopdeck_home / "session-state" / session_id / "plan.md"
    assert plan_file.read_text("utf-8") == PLAN and f"kept in {plan_file}" in err
    assert plan_file.stat().st_mode & 0o777 == 0o600
    log = log_of(loopdeck_home, session_id)
    [done] = [e["data"] for e in log if e["type"] == "exit_plan_mode.completed"]
    assert done == {"requestId": done["requestId"], "approved": True, "selectedAction": "exit_only"}
    assert [e["data"]["agentMode"] for e in log if e["type"] == "user.message"] == ["plan"]
    assert meta_of(loopdeck_home, session_id)["mode"] == "interactive"  # plan mode ended
    for wire in log:
        assert session_events.session_event_from_dict(wire).type.value == wire["type"]


def test_the_demo_plays_in_plan_mode_and_in_autopilot(
    workspace: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "-p", "survey", "--model", "scripted:demo", "--mode", "plan")
    assert code == 0, err
    assert "✓ exit_plan_mode" in err and out.startswith("1. Read the project's README")
    code, out, err = run(capsys, "-p", "survey", "--model", "scripted:demo", "--autopilot")
    assert code == 0, err
    assert "exit_plan_mode" not in err  # offered only in plan mode: the script skips it
    assert "✓ task_complete" in err
    # In autopilot it delegates a search to an explorer sub-agent.
    assert "✓ task description=Find the tests" in err


def test_mode_flags_that_disagree_exit_2(
    workspace: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "-p", "x", "--model", "scripted:demo", "--mode", "plan", "--autopilot"
    )
    assert code == 2 and "--autopilot and --mode plan disagree" in err


def test_show_system_prompt_in_plan_mode(
    workspace: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--show-system-prompt", "--mode", "plan", "--model", "scripted:demo")
    assert code == 0
    assert (
        "# Mode: plan" in out
        and "You have: view, grep, glob, exit_plan_mode, ask_user, update_todos." in out
    )
