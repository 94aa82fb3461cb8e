"""One malformed line never crashes a reader.

Each test plants one kind of damage seen in real use in a log (or its metadata) and
runs the readers over it: ``export``, ``sessions``, ``-p --resume`` (text and json),
the replay index, watch. A reader keeps every line it can, shows the rest as a
warning row, and leaves the file as it was; a resume chains new events to the last
event whose id the official parser accepts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from copilot.generated.session_events import session_event_from_dict

from agent.events.base import is_event_id
from agent.events.schema import EventParseError, SessionWarningData, event_from_json
from agent.log.replay import EventIndex, LogFollower
from agent.log.store import SessionStore, read_events
from app.viewer import ViewerApp, WatchScreen
from tests.support.cli import run, write_script
from tests.support.paths import FIXTURES


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_line(depth: int) -> str:
    """A user.message carrying an extra field nested ``depth`` levels deep."""
    head = '{"type":"user.message","data":{"content":"deep","extra":'
    return head + nested(depth) + '},"id":"d","timestamp":"2025-01-01T00:00:00Z"}'


def recorded_session(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str], replies: int = 2
) -> tuple[str, Path, str]:
    """A real session on disk (one answered prompt): its id, log path and model spec."""
    script = write_script(
        tmp_path / "s.json",
        [
            {"text": "looking", "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
            *({"text": f"answer {n}"} for n in range(replies)),
        ],
    )
    model = f"scripted:{script}"
    code, _, _ = run(capsys, "-p", "first question", "--model", model)
    assert code == 0
    (sid,) = [p.name for p in (home / "session-state").iterdir()]
    return sid, home / "session-state" / sid / "events.jsonl", model


def edit_line(path: Path, index: int, change: Any) -> None:
    lines = path.read_text("utf-8").splitlines()
    obj = json.loads(lines[index])
    change(obj)
    lines[index] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", "utf-8")


def new_lines_parse_officially(before: list[str], after: list[str]) -> list[dict[str, Any]]:
    """Lines appended by a resume: each parses with the official parser."""
    assert after[: len(before)] == before, "a resume must only append"
    added = [json.loads(line) for line in after[len(before) :]]
    for obj in added:
        session_event_from_dict(obj)
    return added


# --- a parentId that is not a string -------------------------------------------------


def test_a_non_string_parent_id_is_read_by_export_sessions_and_resume(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid, log, model = recorded_session(tmp_path, loopdeck_home, capsys)
    edit_line(log, 2, lambda o: o.update(parentId=1))
    # Without metadata the listing reads the log itself (older and foreign sessions).
    (log.parent / "session.json").unlink()

    code, out, err = run(capsys, "export", sid)
    assert (code, err) == (0, "")
    assert "## User" in out and "first question" in out

    code, out, err = run(capsys, "sessions", "--all")
    assert code == 0 and sid[:8] in out and "first question" in out

    before = log.read_text("utf-8").splitlines()
    code, out, err = run(capsys, "-p", "second", "--model", model, "--resume", sid)
    assert code == 0, err
    assert out == "answer 1\n"
    new_lines_parse_officially(before, log.read_text("utf-8").splitlines())


# --- deep nesting ------------------------------------------------------------------------


def test_a_line_nested_1000_deep_is_an_unreadable_row_in_every_reader(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid, log, model = recorded_session(tmp_path, loopdeck_home, capsys)
    lines = log.read_text("utf-8").splitlines()
    lines.insert(3, deep_line(1000))
    log.write_text("\n".join(lines) + "\n", "utf-8")
    (log.parent / "session.json").unlink()

    with pytest.raises(EventParseError):
        event_from_json(deep_line(1000))
    read = read_events(log)
    assert len(read.events) == len(lines) - 1
    assert [p.line for p in read.problems] == [4]

    index = EventIndex.build(log)
    rows = index.read_rows(0, len(index))
    assert len(rows) == len(lines)
    assert isinstance(rows[3].data, SessionWarningData)
    assert rows[3].data.warning_type == "unreadable_line"

    follower = LogFollower(log)
    polled = list(follower.poll())
    with pytest.raises(ValueError):
        event_from_json(polled[3])

    code, out, err = run(capsys, "export", sid)
    assert code == 0 and "*events.jsonl line 4: unreadable line" in out
    code, out, _ = run(capsys, "sessions", "--all")
    assert code == 0 and sid[:8] in out

    code, out, err = run(capsys, "-p", "second", "--model", model, "--resume", sid)
    assert code == 0 and out == "answer 1\n"
    assert "warning: events.jsonl line 4: unreadable line" in err
    assert log.read_text("utf-8").splitlines()[3] == deep_line(1000)  # kept on disk


async def test_watch_survives_lines_nested_1000_deep(tmp_path: Path) -> None:
    log = tmp_path / "s" / "events.jsonl"
    log.parent.mkdir()
    lines = (FIXTURES / "loopdeck-session" / "events.jsonl").read_text("utf-8").splitlines()
    log.write_text("\n".join([*lines[:3], deep_line(1000), *lines[3:5]]) + "\n", "utf-8")
    screen = WatchScreen(log)
    async with ViewerApp(screen).run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        t = screen.timeline.transcript
        assert t.events == 6  # five events and the warning row in place of the deep line
        with log.open("a", encoding="utf-8") as fh:
            fh.write(deep_line(5000) + "\n" + lines[5] + "\n")
        deadline = asyncio.get_running_loop().time() + 10
        while screen.timeline.transcript.events < 7:
            assert asyncio.get_running_loop().time() < deadline, "the watch stopped following"
            await pilot.pause(0.05)
        assert screen.problems == 1
        assert pilot.app.is_running


@pytest.mark.parametrize("depth", [256, 500, 990])
def test_json_output_of_a_resume_survives_lines_nested_hundreds_deep(
    depth: int,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sid, log, model = recorded_session(tmp_path, loopdeck_home, capsys)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(deep_line(depth).replace('"id":"d"', '"id":"d2"') + "\n")
    code, out, err = run(
        capsys, "-p", "again", "--model", model, "--resume", sid, "--output-format", "json"
    )
    assert code == 0, err
    printed = [json.loads(line) for line in out.splitlines()]
    assert printed[-1]["type"] == "session.idle"
    assert any(e["type"] == "session.warning" and "nested" in e["data"]["message"] for e in printed)


def test_a_deeply_nested_metadata_file_is_ignored(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid, log, _ = recorded_session(tmp_path, loopdeck_home, capsys)
    (log.parent / "session.json").write_text(nested(5000), "utf-8")
    code, out, err = run(capsys, "sessions")
    assert (code, err) == (0, "")
    assert sid[:8] in out and "first question" in out


# --- damaged metadata ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [{"turns": "abc"}, {"turns": None}, {"toolCalls": [1]}, {"cwd": 7}, {"startedAt": {}}],
    ids=["turns-abc", "turns-null", "toolcalls-list", "cwd-int", "started-object"],
)
def test_sessions_reads_the_log_when_metadata_fields_have_the_wrong_type(
    damage: dict[str, Any],
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sid, log, model = recorded_session(tmp_path, loopdeck_home, capsys)
    meta_path = log.parent / "session.json"
    meta = json.loads(meta_path.read_text("utf-8"))
    meta.update(damage)
    meta_path.write_text(json.dumps(meta), "utf-8")

    code, out, err = run(capsys, "sessions")
    assert (code, err) == (0, "")
    (row,) = [line for line in out.splitlines() if line.startswith(sid[:8])]
    assert row.split()[6:8] == ["2", "1"]  # turns and tool calls (after the model), from the log
    summary = SessionStore(loopdeck_home).summary(sid)
    assert (summary.turns, summary.tool_calls, summary.cwd) == (2, 1, str(workspace))

    code, out, err = run(capsys, "-p", "again", "--model", model, "--resume", sid)
    assert code == 0, err


# --- a corrupted id at the end of the log ------------------------------------------------


@pytest.mark.parametrize("bad_id", ["0f9c-not-a-uuid", "", 12345, None])
def test_resume_chains_new_events_to_the_last_valid_id(
    bad_id: object,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sid, log, model = recorded_session(tmp_path, loopdeck_home, capsys)
    before = log.read_text("utf-8").splitlines()
    last_valid = json.loads(before[-2])["id"]
    edit_line(log, len(before) - 1, lambda o: o.update(id=bad_id))
    before = log.read_text("utf-8").splitlines()

    code, _, err = run(capsys, "-p", "again", "--model", model, "--resume", sid)
    assert code == 0, err
    added = new_lines_parse_officially(before, log.read_text("utf-8").splitlines())
    assert added[0]["parentId"] == last_valid
    assert all(is_event_id(e["parentId"]) for e in added)


def test_is_event_id_accepts_only_uuids() -> None:
    assert is_event_id("00000000-0000-4000-8000-000000000001")
    assert not is_event_id("d") and not is_event_id(1) and not is_event_id(None)


# --- text the terminal or a file cannot take -------------------------------------------------


def test_a_lone_surrogate_escape_is_shown_as_a_replacement_character(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid, log, model = recorded_session(tmp_path, loopdeck_home, capsys)
    edit_line(log, 1, lambda o: o["data"].update(content="half \udc00 a pair"))
    assert "\\udc00" in log.read_text("utf-8")

    target = tmp_path / "out.md"
    code, _, err = run(capsys, "export", sid, "-o", str(target))
    assert code == 0, err
    assert "half \ufffd a pair" in target.read_text("utf-8")
    code, out, err = run(
        capsys, "-p", "again", "--model", model, "--resume", sid, "--output-format", "json"
    )
    assert code == 0, err
    out.encode("utf-8")  # what a UTF-8 terminal or pipe receives


def test_resume_ignores_a_recorded_cwd_that_is_not_a_path(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid, log, model = recorded_session(tmp_path, loopdeck_home, capsys)
    meta_path = log.parent / "session.json"
    meta = json.loads(meta_path.read_text("utf-8"))
    meta["cwd"] = "/tmp/a\x00b"
    meta_path.write_text(json.dumps(meta), "utf-8")
    code, out, err = run(capsys, "-p", "again", "--model", model, "--resume", sid)
    assert code == 0, err
    assert out == "answer 1\n"


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_a_start_time_the_local_zone_cannot_hold_is_listed_as_written(
    stamp: str,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from app.session_browser import _short_time

    sid, log, _ = recorded_session(tmp_path, loopdeck_home, capsys)
    edit_line(log, 0, lambda o: o["data"].update(startTime=stamp))
    (log.parent / "session.json").unlink()
    code, out, err = run(capsys, "sessions")
    assert (code, err) == (0, "")
    assert f"{sid[:8]}  {stamp}" in out
    assert _short_time(stamp) == stamp[:16]  # the browser's column
