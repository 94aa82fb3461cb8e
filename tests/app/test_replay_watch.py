"""Replay and watch over recorded fixtures, and finding sessions to open.

Fixtures (``tests/fixtures/<name>/events.jsonl``):

* ``loopdeck-session``: a real scripted autopilot session (6 turns, 5 tool calls, a
  nudge, an edit with its diff, a 42 s pause during a bash call, task_complete),
  recorded by ``record_loopdeck_session.py`` with pinned ids and timestamps;
* ``copilot-session``: written by hand from the Copilot SDK's public event schema,
  with types loopdeck does not model and one no schema knows (``future.thing``);
* ``torn``: the start of the loopdeck session, its last line cut mid-JSON;
* ``empty``: 0 bytes.

Watch tests run real writer processes: a small Python script appending lines (and
dying mid-line), and ``loopdeck --resume`` continuing a crashed session.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.events.schema import UnknownData, event_from_json
from agent.log.store import SessionNotFound
from app.locate import locate_session
from app.viewer import ReplayScreen, ViewerApp, WatchScreen
from tests.support.cli import run
from tests.support.paths import FIXTURES
from widgets.info_row import InfoRowView
from widgets.message_blocks import (
    NoticeView,
    NudgeView,
    RawView,
    TaskCompleteView,
    UserMessageView,
)
from widgets.turn_digest import TurnDigest

REPO = FIXTURES.parent.parent
SIZE = (100, 34)
LOOPDECK_ID = "1d0c5e55-0000-4000-8000-000000000001"
COPILOT_ID = "c0b1107e-5e55-4a1e-9d3c-7e57f1c5a001"
# Types in the Copilot fixture that loopdeck keeps as raw blocks.
COPILOT_RAW_TYPES = {
    "assistant.intent",
    "tool.execution_progress",
    "future.thing",
}
# Types it has no event model for: the raw ones, and hooks (drawn as info rows).
COPILOT_UNMODELLED = COPILOT_RAW_TYPES | {"hook.start", "hook.end"}


def fixture(name: str) -> Path:
    return FIXTURES / name / "events.jsonl"


def fixture_lines(name: str) -> list[str]:
    return fixture(name).read_text("utf-8").splitlines(keepends=True)


def bar(screen: ReplayScreen | WatchScreen) -> str:
    return str(screen.bar.render())


async def wait_until(
    pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 10.0, what: str = ""
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.02)


TURN = ".turn"  # a turn's widget: a live TurnView or, once it is history, a TurnDigest


def count(screen: ReplayScreen | WatchScreen, view: type | str) -> int:
    return len(screen.timeline.query(view))


def markers(screen: ReplayScreen | WatchScreen) -> list[str]:
    return [str(m.render()) for m in screen.timeline.query(".marker")]


# --- the fixtures themselves ---------------------------------------------------------


def test_copilot_fixture_follows_the_public_schema() -> None:
    """Every line parses with the official SDK; only ``future.thing`` is unknown to it."""
    from copilot.generated.session_events import SessionEventType, session_event_from_dict

    unknown_to_sdk = []
    unknown_to_loopdeck = set()
    for line in fixture_lines("copilot-session"):
        obj = json.loads(line)
        parsed = session_event_from_dict(obj)
        if parsed.type is SessionEventType.UNKNOWN:
            unknown_to_sdk.append(parsed.raw_type)
        if isinstance(event_from_json(line).data, UnknownData):
            unknown_to_loopdeck.add(obj["type"])
    assert unknown_to_sdk == ["future.thing"]
    assert unknown_to_loopdeck == COPILOT_UNMODELLED


def test_loopdeck_fixture_is_in_the_copilot_format_too() -> None:
    from copilot.generated.session_events import SessionEventType, session_event_from_dict

    types = []
    for line in fixture_lines("loopdeck-session"):
        parsed = session_event_from_dict(json.loads(line))
        assert parsed.type is not SessionEventType.UNKNOWN, line[:80]
        types.append(parsed.type.value)
    assert types.count("assistant.turn_start") == 6
    assert types.count("tool.execution_complete") == 5
    assert "session.task_complete" in types


def test_torn_and_empty_fixtures_are_what_they_claim() -> None:
    torn = fixture("torn").read_bytes()
    assert not torn.endswith(b"\n")
    *whole, tail = torn.split(b"\n")
    assert all(json.loads(line) for line in whole)
    with pytest.raises(json.JSONDecodeError):
        json.loads(tail)
    assert fixture("empty").stat().st_size == 0


# --- replay: what instant speed shows ------------------------------------------------


async def test_instant_replay_of_a_loopdeck_session_shows_every_block() -> None:
    screen = ReplayScreen(fixture("loopdeck-session"), speed=0.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = bar(screen)
        assert "■ end" in text and "turn 6 of 6" in text and "event 36/36" in text
        assert "instant" in text
        t = screen.timeline.transcript
        assert t.turns == 6 and t.tool_calls == 5 and t.task_completed
        assert screen.timeline.mounted_blocks == len(t.items) == 9
        assert count(screen, UserMessageView) == 1
        assert count(screen, NudgeView) == 1
        assert count(screen, TURN) == 6
        assert count(screen, TaskCompleteView) == 1
        assert count(screen, RawView) == 0
        # The last turn (the task_complete call) is on screen, scrolled to.
        last = screen.timeline.query(TURN).last()
        assert last.region.height > 0 and screen.timeline.is_vertical_scroll_end
        assert markers(screen) == []


async def test_instant_replay_of_a_copilot_session_keeps_unknown_types() -> None:
    screen = ReplayScreen(fixture("copilot-session"), speed=0.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "turn 3 of 3" in bar(screen) and "event 22/22" in bar(screen)
        t = screen.timeline.transcript
        assert t.session_id == COPILOT_ID and t.model == "claude-sonnet-4.5"
        assert t.turns == 3 and t.tool_calls == 1
        # Nothing dropped: every top-level block has its view.
        assert screen.timeline.mounted_blocks == len(t.items) == 11
        raw = [view.block.type for view in screen.timeline.query(RawView)]
        assert sorted(raw) == sorted(COPILOT_RAW_TYPES)
        # The hook's start and end are one row; the truncation another.
        rows = [view.block.kind for view in screen.timeline.query(InfoRowView)]
        assert rows == ["hook", "truncation"]
        assert count(screen, NoticeView) == 1  # session.info is modelled
        assert count(screen, UserMessageView) == 2
        assert count(screen, TURN) == 3
        # History is drawn by one TurnDigest per turn; the bash call is in one of them.
        (tool,) = [t for v in screen.timeline.query(TurnDigest) for t in v.block.tools]
        assert tool.name == "bash" and tool.status == "success"
        future = next(v for v in screen.timeline.query(RawView) if v.block.type == "future.thing")
        assert "sprocket" in str(future.render())


async def test_replay_of_a_torn_file_shows_what_is_whole() -> None:
    screen = ReplayScreen(fixture("torn"), speed=0.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert len(screen.index) == 9  # the cut line is not an event
        assert "turn 2 of 2" in bar(screen) and "event 9/9" in bar(screen)
        t = screen.timeline.transcript
        assert t.turns == 2
        assert count(screen, TURN) == 2 and count(screen, UserMessageView) == 1
        assert count(screen, RawView) == 0
        # Stepping and playing over the torn end do not crash either.
        for key in ("g", "right", "right", "right", "left", "G", "space", "plus", "plus", "plus"):
            await pilot.press(key)
        assert screen.speed == 16.0
        await wait_until(pilot, lambda: screen.position == len(screen.index), what="the end")
        assert screen.timeline.transcript.turns == 2


async def test_replay_of_an_empty_file_is_an_empty_timeline() -> None:
    screen = ReplayScreen(fixture("empty"), speed=0.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "turn 0 of 0" in bar(screen) and "event 0/0" in bar(screen)
        assert screen.timeline.mounted_blocks == 0
        for key in ("space", "right", "left", "g", "G", "plus", "minus", "space"):
            await pilot.press(key)
        await pilot.pause()
        assert "turn 0 of 0" in bar(screen)
        assert screen.timeline.mounted_blocks == 0
        assert app_is_running(pilot)


def app_is_running(pilot: Pilot[Any]) -> bool:
    return pilot.app.is_running and pilot.app.return_code is None


# --- replay: playback and controls ---------------------------------------------------


async def test_playback_at_high_speed_reaches_the_end_and_marks_the_long_pause() -> None:
    screen = ReplayScreen(fixture("loopdeck-session"), speed=16.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        assert screen.playing
        # 66.5 s recorded; the 42.7 s pause is cut to 3 s, so about 1.7 s at 16×.
        await wait_until(pilot, lambda: not screen.playing, timeout=8, what="the end")
        assert screen.position == len(screen.index) == 36
        text = bar(screen)
        assert "■ end" in text and "turn 6 of 6" in text and "16×" in text
        assert markers(screen) == ["⏩ 42.7s without events — shortened"]
        assert count(screen, TURN) == 6 and count(screen, TaskCompleteView) == 1
        # The marker sits where the pause was: after the bash turn, before the last one.
        children = list(screen.timeline.children)
        marker = next(c for c in children if c.has_class("marker"))
        turns = list(screen.timeline.query(TURN))
        assert children.index(turns[4]) < children.index(marker) < children.index(turns[5])


async def test_space_pauses_and_resumes() -> None:
    screen = ReplayScreen(fixture("loopdeck-session"), speed=1.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        assert "▶ playing" in bar(screen)
        await pilot.press("space")
        assert not screen.playing and "❚❚ paused" in bar(screen)
        held = screen.position
        await pilot.pause(1.0)  # longer than any recorded gap (0.7 s) at 1×
        assert screen.position == held and "❚❚ paused" in bar(screen)
        await pilot.press("space")
        assert screen.playing and "▶ playing" in bar(screen)
        await wait_until(pilot, lambda: screen.position > held, timeout=3, what="playback")
        await pilot.press("space")
        assert not screen.playing


async def test_arrows_step_turns_and_g_jumps() -> None:
    screen = ReplayScreen(fixture("loopdeck-session"), speed=0.0)
    starts = screen.index.turn_starts
    assert starts == [2, 7, 12, 16, 23, 30]
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.pause()

        async def press(key: str, turn: int, position: int) -> None:
            await pilot.press(key)
            await pilot.pause()
            assert f"turn {turn} of 6" in bar(screen), (key, bar(screen))
            assert f"event {position}/36" in bar(screen)
            assert screen.position == position
            assert screen.timeline.transcript.turns == turn
            assert count(screen, TURN) == turn
            assert not screen.playing

        await press("g", 0, 0)
        assert screen.timeline.mounted_blocks == 0 and "❚❚ paused" in bar(screen)
        await press("right", 1, starts[1])  # all of turn 1, up to turn 2's start
        await press("right", 2, starts[2])
        assert count(screen, NudgeView) == 0
        await press("n", 3, starts[3])
        assert count(screen, NudgeView) == 1  # it follows turn 3, before turn 4 starts
        await press("right", 4, starts[4])
        await press("left", 3, starts[3])
        await press("p", 2, starts[2])
        await press("G", 6, 36)
        assert "■ end" in bar(screen) and count(screen, TaskCompleteView) == 1
        await press("right", 6, 36)  # nothing after the end
        await press("left", 5, starts[5])
        await press("home", 0, 0)
        await press("end", 6, 36)


async def test_plus_and_minus_change_speed() -> None:
    screen = ReplayScreen(fixture("loopdeck-session"), speed=1.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.press("space")  # pause: speed changes alone
        seen = []
        for key in ("plus", "plus", "plus", "plus", "plus"):
            await pilot.press(key)
            seen.append(screen.speed)
        assert seen == [2.0, 4.0, 16.0, 0.0, 0.0]
        assert "instant" in bar(screen)
        assert screen.position < len(screen.index)  # paused: instant does not jump
        seen = []
        for key in ("minus", "minus", "minus", "minus", "minus"):
            await pilot.press(key)
            seen.append(screen.speed)
        assert seen == [16.0, 4.0, 2.0, 1.0, 1.0]
        assert "1×" in bar(screen)


async def test_speeding_up_to_instant_while_playing_jumps_to_the_end() -> None:
    screen = ReplayScreen(fixture("loopdeck-session"), speed=16.0)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.press("plus")
        await pilot.pause()
        assert screen.speed == 0.0 and not screen.playing
        assert screen.position == 36 and "■ end" in bar(screen)
        # Space at the end replays from the start (at 1×: instant cannot play).
        await pilot.press("space")
        assert screen.playing and screen.speed == 1.0
        assert screen.position < 36
        await pilot.press("space")


# --- watch: following another process --------------------------------------------------

# Appends lines of a fixture to a log, one at a time. With a cut, then writes only
# the first ``cut`` bytes of the next line, says "torn" and hangs until killed.
WRITER = r"""
import sys, time
log, source, start, stop, cut, prefix, step = sys.argv[1:8]
start, stop, cut = int(start), int(stop), int(cut)
lines = open(source, encoding="utf-8").read().splitlines(keepends=True)
with open(log, "a", encoding="utf-8") as fh:
    fh.write(prefix.replace("NL", "\n"))
    for line in lines[start:stop]:
        fh.write(line)
        fh.flush()
        if step == "1":
            sys.stdin.readline()  # the reader has seen this line: on to the next
        else:
            time.sleep(0.05)
    if cut:
        fh.write(lines[stop][:cut])
        fh.flush()
        print("torn", flush=True)
        time.sleep(60)
print("done", flush=True)
"""


async def start_writer(
    log: Path, start: int, stop: int, *, cut: int = 0, prefix: str = "", step: bool = False
) -> asyncio.subprocess.Process:
    """A process appending the fixture's lines ``start:stop``; with ``step``, one line
    each time the test writes a newline to its stdin (after the first)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRITER,
        str(log),
        str(fixture("loopdeck-session")),
        str(start),
        str(stop),
        str(cut),
        prefix,
        "1" if step else "0",
        stdin=asyncio.subprocess.PIPE if step else None,
        stdout=asyncio.subprocess.PIPE,
    )


async def said(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    return (await asyncio.wait_for(proc.stdout.readline(), 10)).decode().strip()


async def test_watch_follows_a_writer_process_through_its_crash(tmp_path: Path) -> None:
    lines = fixture_lines("loopdeck-session")
    log = tmp_path / LOOPDECK_ID / "events.jsonl"
    log.parent.mkdir()
    log.write_text("".join(lines[:2]), "utf-8")
    screen = WatchScreen(log)
    writers: list[asyncio.subprocess.Process] = []
    try:
        async with ViewerApp(screen).run_test(size=SIZE) as pilot:
            await pilot.pause()
            t = lambda: screen.timeline.transcript  # noqa: E731 (the watch may swap it)
            assert t().events == 2 and count(screen, UserMessageView) == 1
            # A writer appends events 2..20, then dies in the middle of event 21. It
            # writes one line at a time, each once the timeline has shown the one before.
            writer = await start_writer(log, 2, 21, cut=60, step=True)
            writers.append(writer)
            assert writer.stdin is not None
            seen = set()
            for shown in range(3, 22):
                await wait_until(pilot, lambda n=shown: t().events >= n, what=f"event {shown}")  # type: ignore[misc]
                seen.add(t().events)
                writer.stdin.write(b"\n")
                await writer.stdin.drain()
            assert len(seen - {2}) >= 2, f"the timeline did not grow gradually: {seen}"
            assert await said(writer) == "torn"
            await wait_until(pilot, lambda: t().events == 21, what="the whole events")
            await wait_until(
                pilot,
                lambda: "(a line is being written)" in bar(screen),
                timeout=2,
                what="the partial-line note",
            )
            assert "● live" in bar(screen)  # the edit call is still open
            writer.kill()
            await writer.wait()
            await pilot.pause(0.6)  # a few polls with the half line still there
            assert t().events == 21 and screen.problems == 0 and markers(screen) == []
            assert count(screen, TURN) == 4 and count(screen, NudgeView) == 1
            assert app_is_running(pilot)
            # A new writer ends the torn line and writes the rest (the lost event again).
            writer = await start_writer(log, 21, len(lines), prefix="NL")
            writers.append(writer)
            assert await said(writer) == "done"
            # The whole log (the poll that brings task_complete may not bring the rest).
            await wait_until(
                pilot,
                lambda: t().task_completed and t().events >= 36,
                what="the rest of the session",
            )
            await pilot.pause()
            assert t().turns == 6 and t().tool_calls == 5 and t().events == 36
            assert screen.problems == 1
            assert markers(screen) == ["⚠ an unreadable line in the log was skipped"]
            assert count(screen, TaskCompleteView) == 1
            assert "○ idle" in bar(screen) and "being written" not in bar(screen)
    finally:
        for proc in writers:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def test_watch_follows_loopdeck_resuming_a_crashed_session(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    """``loopdeck --resume`` sets a torn last line aside (cutting the log back to its last
    newline) before it appends: the watch drops the fragment, glues nothing to it, and
    shows every resumed event once."""
    folder = loopdeck_home / "session-state" / LOOPDECK_ID
    folder.mkdir(parents=True)
    log = folder / "events.jsonl"
    shutil.copy(fixture("loopdeck-session"), log)
    script = tmp_path / "resume.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {
                        "text": "Checked again.",
                        "delay_ms": 200,
                        "tool_calls": [
                            {"name": "task_complete", "arguments": {"summary": "Still done."}}
                        ],
                    }
                ],
                "when_exhausted": "repeat_last",
            }
        ),
        "utf-8",
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    screen = WatchScreen(log)
    async with ViewerApp(screen).run_test(size=SIZE) as pilot:
        await pilot.pause()
        t = lambda: screen.timeline.transcript  # noqa: E731
        assert t().turns == 6 and t().events == 36
        with log.open("a", encoding="utf-8") as fh:  # the writer died mid-line
            fh.write('{"type":"assistant.turn_start","data":{"turnId":"6","mo')
        await wait_until(
            pilot, lambda: "(a line is being written)" in bar(screen), timeout=2, what="note"
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "app.cli",
            "--resume",
            LOOPDECK_ID[:8],
            "-p",
            "Anything left?",
            "--autopilot",  # a resumed run is interactive unless asked again
            "--model",
            f"scripted:{script}",
            cwd=workspace,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()
        assert out.decode() == "Still done.\n"
        assert "torn last line" in err.decode()
        assert len(list(folder.glob("events.torn-*.jsonl"))) == 1
        # The resumed run has ended: wait until the timeline has read all it wrote.
        written = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
        await wait_until(
            pilot, lambda: t().turns == 7 and t().events >= len(written), what="the resumed turn"
        )
        await pilot.pause()
        assert screen.problems == 0 and markers(screen) == []
        assert count(screen, UserMessageView) == 2  # the first prompt and the new one, once
        assert count(screen, TaskCompleteView) == 2
        notices = [str(v.render()) for v in screen.timeline.query(NoticeView)]
        assert any("session resumed" in n for n in notices), notices
        assert "being written" not in bar(screen)
        assert t().events == len(written)


# --- finding sessions: sessions --copilot, locate_session, replay <prefix> -------------


@pytest.fixture
def homes(tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The loopdeck fixture under $LOOPDECK_HOME, the Copilot one under $COPILOT_HOME."""
    copilot = tmp_path / "copilot-home"
    for home, sid, name in (
        (loopdeck_home, LOOPDECK_ID, "loopdeck-session"),
        (copilot, COPILOT_ID, "copilot-session"),
    ):
        folder = home / "session-state" / sid
        folder.mkdir(parents=True)
        shutil.copy(fixture(name), folder / "events.jsonl")
    monkeypatch.setenv("COPILOT_HOME", str(copilot))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return copilot


def test_sessions_copilot_lists_copilot_cli_sessions(
    homes: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the first prompt uncut
    code, out, err = run(capsys, "sessions", "--copilot")
    assert code == 0, err
    header, row = out.splitlines()[:2]
    assert header.split()[:5] == ["ID", "STARTED", "CWD", "MODEL", "MODE"]
    cells = row.split()
    assert cells[0] == COPILOT_ID[:8]
    assert "/home/dev/notes" in row and "interactive" in row
    assert cells[cells.index("interactive") + 1 : cells.index("interactive") + 4] == [
        "3",  # turns
        "1",  # tools
        "completed",
    ]
    assert "21.7s" in row and "How many words are in README.md?" in row
    assert LOOPDECK_ID[:8] not in out  # only Copilot's sessions
    # And plain `sessions` lists loopdeck's only.
    code, out, _ = run(capsys, "sessions")
    assert code == 0 and LOOPDECK_ID[:8] in out and COPILOT_ID[:8] not in out
    assert "autopilot" in out and "Make Cart.add reject" in out


def test_sessions_copilot_with_no_sessions_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "nothing"))
    code, out, _ = run(capsys, "sessions", "--copilot")
    assert code == 0
    assert out == f"No sessions yet in {tmp_path / 'nothing' / 'session-state'}.\n"


def test_locate_session_finds_loopdeck_and_copilot_sessions(homes: Path) -> None:
    copilot_log = homes / "session-state" / COPILOT_ID / "events.jsonl"
    assert locate_session("c0b1") == copilot_log
    assert locate_session(COPILOT_ID) == copilot_log
    loopdeck_log = locate_session("1d0c")
    assert loopdeck_log.parent.name == LOOPDECK_ID and loopdeck_log.name == "events.jsonl"
    # A folder or a file path works as is.
    assert locate_session(str(copilot_log.parent)) == copilot_log
    assert locate_session(str(fixture("torn"))) == fixture("torn")
    with pytest.raises(SessionNotFound, match="no session 'ffff'"):
        locate_session("ffff")
    empty_dir = homes / "not-a-session"
    empty_dir.mkdir()
    with pytest.raises(SessionNotFound, match=r"holds no events\.jsonl"):
        locate_session(str(empty_dir))
    # Two Copilot sessions sharing a prefix: the ambiguity is reported as is.
    twin = homes / "session-state" / "c0b1aaaa-0000-4000-8000-000000000000"
    twin.mkdir()
    shutil.copy(copilot_log, twin / "events.jsonl")
    with pytest.raises(SessionNotFound, match="'c0b1' matches 2 sessions"):
        locate_session("c0b1")


def test_replay_subcommand_opens_a_copilot_session_by_prefix(
    homes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[tuple[Path, float]] = []

    def fake_run(self: ViewerApp) -> int:
        screen = self._viewer
        assert isinstance(screen, ReplayScreen)
        opened.append((screen.path, screen.speed))
        return 0

    monkeypatch.setattr(ViewerApp, "run", fake_run)
    monkeypatch.setattr("app.subcommands.need_terminal", lambda prog, instead: True)
    code, _, err = run(capsys, "replay", "c0b1107e", "--speed", "4x")
    assert code == 0, err
    assert opened == [(homes / "session-state" / COPILOT_ID / "events.jsonl", 4.0)]
    code, _, err = run(capsys, "replay", "nope")
    assert code == 2 and "loopdeck replay: no session 'nope'" in err
