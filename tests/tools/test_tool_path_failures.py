"""A path the OS rejects fails one tool call, readably; the run goes on and ends normally."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from copilot.generated import session_events

from agent.events.schema import ToolExecutionCompleteData
from agent.log.store import SessionStore
from agent.permissions.rules import PermissionPolicy
from tests.support.scripting import new_session, scripted

LONG = "n" * 300 + ".txt"  # over the 255 bytes a file name may have


def _loop(ws: Path) -> None:
    (ws / "loop").symlink_to("loop")


def _file(ws: Path) -> None:
    (ws / "f.txt").write_text("counter\n")


def _dir(ws: Path) -> None:
    (ws / "d").mkdir()


def _nothing(_ws: Path) -> None:
    pass


CASES: list[tuple[str, dict[str, Any], Callable[[Path], None], str]] = [
    ("create", {"path": LONG, "file_text": "x"}, _nothing, "too long"),
    ("create", {"path": f"sub/{LONG}/x.txt", "file_text": "x"}, _nothing, "too long"),
    ("edit", {"path": LONG, "old_str": "a", "new_str": "b"}, _nothing, "too long"),
    ("view", {"path": LONG}, _nothing, "too long"),
    ("grep", {"pattern": "x", "path": LONG}, _nothing, "too long"),
    ("glob", {"pattern": "*.py", "path": LONG}, _nothing, "too long"),
    ("create", {"path": "x" * 5000, "file_text": "x"}, _nothing, "too long"),
    ("create", {"path": "loop/x.txt", "file_text": "x"}, _loop, "link"),
    ("edit", {"path": "loop", "old_str": "a", "new_str": "b"}, _loop, "link"),
    ("view", {"path": "loop"}, _loop, "link"),
    ("create", {"path": "f.txt/x.txt", "file_text": "x"}, _file, "not a directory"),
    ("edit", {"path": "f.txt/x.txt", "old_str": "a", "new_str": "b"}, _file, "not a directory"),
    ("view", {"path": "f.txt/x.txt"}, _file, "not a directory"),
    ("create", {"path": "d", "file_text": "x"}, _dir, "directory"),
    ("edit", {"path": "d", "old_str": "a", "new_str": "b"}, _dir, "directory"),
    ("create", {"path": "a\0b", "file_text": "x"}, _nothing, "NUL"),
    ("edit", {"path": "a\0b", "old_str": "a", "new_str": "b"}, _nothing, "NUL"),
    ("view", {"path": "a\0b"}, _nothing, "NUL"),
    ("create", {"path": "bad-\ud800.txt", "file_text": "x"}, _nothing, "UTF-8"),
    ("edit", {"path": "bad-\ud800.txt", "old_str": "a", "new_str": "b"}, _nothing, "UTF-8"),
    ("view", {"path": "bad-\ud800.txt"}, _nothing, "UTF-8"),
]


@pytest.mark.parametrize(("tool", "arguments", "setup", "expected"), CASES)
@pytest.mark.parametrize("allow_all", [False, True], ids=["asks", "allow-all"])
async def test_os_rejected_path_fails_the_call_and_the_run_goes_on(
    tmp_path: Path,
    tool: str,
    arguments: dict[str, Any],
    setup: Callable[[Path], None],
    expected: str,
    allow_all: bool,
) -> None:
    model = scripted(
        [
            {"text": "", "tool_calls": [{"name": tool, "arguments": arguments}]},
            {"text": "", "tool_calls": [{"name": "view", "arguments": {"path": "."}}]},
            {"text": "recovered"},
        ]
    )
    store = SessionStore(tmp_path / "home")
    policy = PermissionPolicy(allow_all=allow_all)
    (tmp_path / "ws").mkdir()
    setup(tmp_path / "ws")
    session, rec = await new_session(model, tmp_path, store=store, policy=policy)
    outcome = await session.send_and_wait("go")
    await session.close()

    assert outcome.error is None and rec.of("session.error") == []
    assert outcome.final_text == "recovered"
    completes = [e.data for e in rec.of("tool.execution_complete")]
    assert all(isinstance(c, ToolExecutionCompleteData) for c in completes)
    assert len(rec.of("tool.execution_start")) == len(completes) == 2
    first = completes[0]
    assert isinstance(first, ToolExecutionCompleteData)
    assert not first.success and first.error is not None
    assert expected.lower() in first.error.message.lower()
    assert "crashed" not in first.error.message
    # The model read the failure and its next call (in the next turn) ran.
    assert expected.lower() in model.seen_messages[1][-1]["content"].lower()
    second = completes[1]
    assert isinstance(second, ToolExecutionCompleteData) and second.success
    assert rec.types()[-1] == "session.idle"
    # Nothing was written, and every line recorded parses.
    assert sorted(os.listdir(tmp_path / "ws")) == sorted(_expected_entries(setup))
    log = store.events_path(session.id)
    for line in log.read_text("utf-8").splitlines():
        session_events.session_event_from_dict(json.loads(line))


def _expected_entries(setup: Callable[[Path], None]) -> list[str]:
    return {_loop: ["loop"], _file: ["f.txt"], _dir: ["d"]}.get(setup, [])
