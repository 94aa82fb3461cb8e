"""End to end through the real CLI: an autopilot session fixes a bug and proves it.

A tiny project with a failing test; a scripted model views the code, runs the tests
(they fail), edits the bug, runs them again (they pass) and completes the task, with
``--allow-tool write --allow-tool 'shell(python:*)'``. Then everything recorded is
checked: the file on disk, the tool results, ``events.jsonl`` (paired turns and tool
calls, permission events, the edit's unified diff, every line parsed by the official
SDK parser), replay (the index and the fold agree with the log) and ``loopdeck export``.
Without allow rules, a headless run is refused the edit and says so on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.log.replay import EventIndex
from agent.log.store import read_events
from agent.transcript.blocks import TurnBlock
from agent.transcript.fold import Transcript, fold
from tests.support.cli import only_session, run, write_script

session_events = pytest.importorskip("copilot.generated.session_events")

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = CALC.replace("a - b", "a + b")
TESTS = (
    "from calc import add, mul\n"
    "\n"
    "\n"
    "def test_add():\n"
    "    assert add(2, 3) == 5, add(2, 3)\n"
    "\n"
    "\n"
    "def test_mul():\n"
    "    assert mul(2, 3) == 6\n"
    "\n"
    "\n"
    'if __name__ == "__main__":\n'
    "    test_add()\n"
    "    test_mul()\n"
    '    print("2 tests passed")\n'
)
RUN_TESTS = "python test_calc.py"
SUMMARY = "Fixed `add` in calc.py: it subtracted. `python test_calc.py` now passes."
PROMPT = "The tests fail. Find the bug and fix it."


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def turn(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"text": text, "tool_calls": list(calls)}


EDIT_ADD = call("edit", path="calc.py", old_str="    return a - b\n", new_str="    return a + b\n")
FIX_SCRIPT = [
    turn("Reading the code first.", call("view", path="calc.py")),
    turn("Running the tests.", call("bash", command=RUN_TESTS)),
    turn("`add` subtracts; fixing it.", EDIT_ADD),
    turn("Running the tests again.", call("bash", command=RUN_TESTS)),
    turn("", call("task_complete", summary=SUMMARY)),
]
EXPECTED_TOOLS = ["view", "bash", "edit", "bash", "task_complete"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "calc-project"
    ws.mkdir()
    (ws / "calc.py").write_text(CALC, encoding="utf-8")
    (ws / "test_calc.py").write_text(TESTS, encoding="utf-8")
    # `python` in the agent's shell is this interpreter, whatever PATH the tests run with.
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.chdir(tmp_path)  # --cwd, not the current directory, picks the workspace
    return ws


def data_of(lines: list[dict[str, Any]], etype: str) -> list[dict[str, Any]]:
    return [line["data"] for line in lines if line["type"] == etype]


def shape(t: Transcript) -> list[tuple[Any, ...]]:
    """What a transcript shows, turn by turn, comparable across folds."""
    return [
        (
            block.number,
            block.status,
            block.text,
            [(c.name, c.status, c.permission, c.result, c.detailed_content) for c in block.tools],
        )
        for block in t.items
        if isinstance(block, TurnBlock)
    ]


def test_autopilot_fixes_the_bug_and_everything_recorded_replays(
    project: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path / "fix.json", FIX_SCRIPT)
    code, out, err = run(
        capsys,
        "-p",
        PROMPT,
        "--model",
        f"scripted:{script}",
        "--autopilot",
        "--allow-tool",
        "write",
        "--allow-tool",
        "shell(python:*)",
        "--cwd",
        str(project),
    )

    # --- the outcome ------------------------------------------------------------------
    assert code == 0, err
    assert (project / "calc.py").read_text("utf-8") == FIXED
    assert out.strip() == SUMMARY
    lines_err = [line for line in err.splitlines() if line[:1] in "✓✗"]
    assert [line.split()[:2] for line in lines_err] == [
        ["✓", "view"],
        ["✗", "bash"],  # the tests fail first
        ["✓", "edit"],
        ["✓", "bash"],
        ["✓", "task_complete"],
    ]
    assert "Permission denied" not in err

    # --- events.jsonl -------------------------------------------------------------------
    session_dir = only_session(loopdeck_home)
    path = session_dir / "events.jsonl"
    raw_lines = [line for line in path.read_text("utf-8").splitlines() if line.strip()]
    lines = [json.loads(line) for line in raw_lines]
    for line in lines:  # every line is an event the official SDK understands
        parsed = session_events.session_event_from_dict(line)
        assert parsed.type != session_events.SessionEventType.UNKNOWN, line["type"]
        assert parsed.type.value == line["type"] and str(parsed.id) == line["id"]

    types = [line["type"] for line in lines]
    assert types[0] == "session.start" and types.count("user.message") == 1  # no nudges
    starts = [d["turnId"] for d in data_of(lines, "assistant.turn_start")]
    ends = [d["turnId"] for d in data_of(lines, "assistant.turn_end")]
    assert len(starts) == 5 and starts == ends
    assert_paired(lines)
    tool_starts = data_of(lines, "tool.execution_start")
    tool_ends = {d["toolCallId"]: d for d in data_of(lines, "tool.execution_complete")}
    assert [d["toolName"] for d in tool_starts] == EXPECTED_TOOLS
    assert [d["toolCallId"] for d in tool_starts] == list(tool_ends)
    results = [tool_ends[d["toolCallId"]] for d in tool_starts]
    assert [r["success"] for r in results] == [True, False, True, True, True]

    first_run, edit, second_run = results[1], results[2], results[3]
    assert "AssertionError" in first_run["error"]["message"]
    assert "exit code 1" in first_run["error"]["message"]
    assert "2 tests passed" in second_run["result"]["content"]
    assert second_run["result"]["content"].endswith("<exited with exit code 0>")
    diff = edit["result"]["detailedContent"]
    assert diff.startswith("--- a/calc.py\n+++ b/calc.py\n@@ -1,")
    assert "\n-    return a - b\n+    return a + b\n" in diff
    assert edit["result"]["content"].startswith("Edited calc.py")

    # Reads need no permission; each write and shell call was requested and approved.
    requested = data_of(lines, "permission.requested")
    completed = data_of(lines, "permission.completed")
    assert [r["permissionRequest"]["kind"] for r in requested] == ["shell", "write", "shell"]
    assert [r["requestId"] for r in requested] == [c["requestId"] for c in completed]
    assert [c["result"] for c in completed] == [{"kind": "approved"}] * 3
    assert [c["toolCallId"] for c in completed] == [tool_starts[i]["toolCallId"] for i in (1, 2, 3)]
    write_request = requested[1]["permissionRequest"]
    assert write_request["fileName"] == "calc.py" and write_request["diff"] == diff
    assert requested[0]["permissionRequest"]["fullCommandText"] == RUN_TESTS
    (done,) = data_of(lines, "session.task_complete")
    assert done["summary"] == SUMMARY
    assert types[-1] == "assistant.turn_end" and "session.idle" not in types  # ephemeral
    # One unbroken chain: each event's parent is the event written before it.
    assert [line["parentId"] for line in lines[1:]] == [line["id"] for line in lines[:-1]]

    # --- replay: the index reads back every line, and folds to the same transcript ------
    index = EventIndex.build(session_dir)
    assert len(index) == len(lines) and index.types == types
    assert len(index.turn_starts) == 5
    replayed = index.read(0, len(index))
    assert [e.id for e in replayed] == [line["id"] for line in lines]
    assert [e.wire() for e in replayed] == lines  # nothing lost or changed in the round trip
    from_index = fold(replayed, replay=True)
    from_store = fold(read_events(path).events, replay=True)
    assert shape(from_index) == shape(from_store)
    turns = shape(from_index)
    assert [[tool[0] for tool in t[3]] for t in turns] == [[name] for name in EXPECTED_TOOLS]
    assert [t[3][0][1] for t in turns] == ["success", "failure", "success", "success", "success"]
    assert [t[3][0][2] for t in turns] == [None, "approved", "approved", "approved", None]
    assert turns[2][3][0][4] == diff
    assert from_index.task_completed and from_index.task_summary == SUMMARY
    assert not from_index.busy

    # --- export ---------------------------------------------------------------------------
    code, markdown, err = run(capsys, "export", session_dir.name[:8], "--format", "md")
    assert code == 0, err
    assert "```diff" in markdown
    assert "  -    return a - b" in markdown and "  +    return a + b" in markdown
    assert f"## ✔ Task complete\n\n{SUMMARY}" in markdown
    assert "nudge" not in markdown.lower()
    assert "2 tests passed" in markdown


def assert_paired(lines: list[dict[str, Any]]) -> None:
    """Each turn ends before the next starts; each tool call completes inside its turn."""
    open_turn: str | None = None
    open_tools: set[str] = set()
    for line in lines:
        data = line["data"]
        match line["type"]:
            case "assistant.turn_start":
                assert open_turn is None, "a turn started inside another"
                open_turn = data["turnId"]
            case "assistant.turn_end":
                assert data["turnId"] == open_turn and not open_tools
                open_turn = None
            case "tool.execution_start":
                assert data["turnId"] == open_turn
                open_tools.add(data["toolCallId"])
            case "tool.execution_complete":
                open_tools.remove(data["toolCallId"])
    assert open_turn is None and not open_tools


@pytest.mark.parametrize("autopilot", [False, True], ids=["headless", "headless-autopilot"])
def test_without_allow_rules_the_edit_is_denied_and_reported(
    project: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    autopilot: bool,
) -> None:
    gave_up = "I may not edit files in this run; add --allow-tool write to let me."
    script_turns = [turn("`add` subtracts; fixing it.", EDIT_ADD), turn(gave_up)]
    if autopilot:
        script_turns[1] = turn(gave_up, call("task_complete", summary=gave_up))
    script = write_script(tmp_path / "no-rules.json", script_turns)
    flags = ["--autopilot"] if autopilot else []
    code, out, err = run(
        capsys, "-p", PROMPT, "--model", f"scripted:{script}", *flags, "--cwd", str(project)
    )

    assert code == 0, err
    assert (project / "calc.py").read_text("utf-8") == CALC
    assert out.strip() == gave_up
    (denied,) = [line for line in err.splitlines() if line.startswith("✗ edit")]
    who = "autopilot" if autopilot else "this non-interactive run"
    assert f"Permission denied: writing calc.py needs approval and {who} cannot ask" in denied
    assert "--allow-tool" in denied

    lines = [json.loads(line) for line in (only_session(loopdeck_home) / "events.jsonl").open()]
    (completed,) = data_of(lines, "permission.completed")
    assert completed["result"] == {
        "kind": "denied-no-approval-rule-and-could-not-request-from-user"
    }
    (result,) = data_of(lines, "tool.execution_complete")[:1]
    assert result["success"] is False
