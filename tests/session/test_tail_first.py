"""Resume draws the tail of a long log before its session is open: read back from the
log's end (agent.session.tail_resume.read_tail), numbered as in the whole log, and kept when
the session opens (or drawn again from the session when the log changed meanwhile)."""

from __future__ import annotations

import asyncio
import json
import sys
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import agent.log.line_heads
import agent.session.tail_resume
from agent.events.schema import AssistantUsageData, Event
from agent.events.usage_ledger import UsageLedger
from agent.log.replay import EventIndex
from agent.log.store import SessionStore
from agent.session.session import Session
from agent.session.tail_resume import TailPreview, plan_resume, read_tail
from agent.system.ripgrep import find_rg
from app.resume_view import counts_before
from tests.support.compaction import notes, tool_turn
from tests.support.paths import ROOT
from tests.support.scripting import new_session, scripted


async def _log(tmp_path: Path, turns: int) -> tuple[SessionStore, str]:
    store = SessionStore(tmp_path / "home")
    notes(tmp_path / "ws", 300)
    model = scripted([tool_turn(i) for i in range(turns)] + [{"text": "done"}])
    session, _ = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("Read the notes.")
    await session.close()
    return store, session.id


def _whole(path: Path, tail_turns: int) -> tuple[int, int, int, int]:
    """What resume reads from the whole index: (tail offset, turns before it, usage
    checkpoint offset before it, events shown)."""
    plan = plan_resume(path, tail_turns)
    index = plan.index
    usage = [
        index.offsets[i]
        for i in range(plan.tail_start)
        if index.types[i] == "session.usage_checkpoint"
    ]
    return (
        index.offsets[plan.tail_start] if plan.tail_start < len(index) else index.size,
        counts_before(index, plan.tail_start).turns,
        usage[-1] if usage else -1,
        sum(1 for e in plan.shown if e is not None),
    )


def _seen(preview: TailPreview) -> tuple[int, int, int, int]:
    return (preview.offset, preview.turns_before, preview.usage_offset, len(preview.events))


def count_by(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Count the lines before a tail in this process, or by ripgrep however short."""
    if how == "ripgrep":
        if find_rg() is None:
            pytest.skip("ripgrep (rg) is not installed")
        monkeypatch.setattr(agent.log.line_heads, "RG_MIN_BYTES", 0)
    else:
        monkeypatch.setattr(agent.log.line_heads, "find_rg", lambda: None)


@pytest.mark.parametrize("how", ["here", "ripgrep"])
@pytest.mark.parametrize("tail_turns", [1, 3, 8, 12, 40])
async def test_the_tail_read_back_from_the_end_is_the_tail_of_the_whole_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail_turns: int, how: str
) -> None:
    store, sid = await _log(tmp_path, 12)
    path = store.events_path(sid)
    count_by(how, monkeypatch)
    # Tiny windows and chunks: the window grows back several times, and lines (and
    # the type a count looks for) span the chunks they are counted in.
    monkeypatch.setattr(agent.session.tail_resume, "_TAIL_WINDOW", 200)
    monkeypatch.setattr(agent.log.line_heads, "COUNT_CHUNK", 37)
    preview = read_tail(path, tail_turns)
    assert _seen(preview) == _whole(path, tail_turns)
    if tail_turns <= 3:
        assert preview.index.start > 0  # only the end was indexed
    numbers = [e.data.turn_id for e in preview.events if e.type == "assistant.turn_start"]
    assert len(numbers) == min(tail_turns, 13)


async def test_when_ripgrep_fails_the_turns_are_counted_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, sid = await _log(tmp_path, 12)
    path = store.events_path(sid)
    fake = tmp_path / "fake-rg"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('999')\nsys.exit(2)\n")
    fake.chmod(0o755)
    monkeypatch.setattr(agent.log.line_heads, "find_rg", lambda: str(fake))
    monkeypatch.setattr(agent.log.line_heads, "RG_MIN_BYTES", 0)
    monkeypatch.setattr(agent.session.tail_resume, "_TAIL_WINDOW", 200)
    preview = read_tail(path, 2)
    assert preview.index.start > 0
    assert _seen(preview) == _whole(path, 2)


async def test_a_log_whose_lines_do_not_start_with_their_type_is_counted_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, sid = await _log(tmp_path, 10)
    path = store.events_path(sid)
    # Another writer's key order: "type" is not first, so heads cannot be counted.
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    path.write_text(
        "".join(json.dumps({"id": r["id"], **r}) + "\n" for r in rows), encoding="utf-8"
    )
    monkeypatch.setattr(agent.session.tail_resume, "_TAIL_WINDOW", 200)
    monkeypatch.setattr(agent.log.line_heads, "COUNT_CHUNK", 37)
    preview = read_tail(path, 3)
    assert preview.index.start > 0
    assert _seen(preview) == _whole(path, 3)
    assert preview.turns_before == 8  # 11 turns, the last 3 drawn


async def test_a_usage_checkpoint_far_before_the_window_is_found_back_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, sid = await _log(tmp_path, 10)
    path = store.events_path(sid)
    lines = path.read_text("utf-8").splitlines(keepends=True)
    # One checkpoint, early in the log: the one before the tail is far back.
    ledger = UsageLedger()
    ledger.add(AssistantUsageData(model="scripted:test", input_tokens=1_234, output_tokens=56))
    first = 3
    kept = [*lines[:first], Event.new(ledger.checkpoint(), None).to_json() + "\n", *lines[first:]]
    path.write_text("".join(kept), encoding="utf-8")
    monkeypatch.setattr(agent.session.tail_resume, "_TAIL_WINDOW", 200)
    monkeypatch.setattr(agent.log.line_heads, "COUNT_CHUNK", 53)
    preview = read_tail(path, 2)
    assert preview.usage_offset == sum(len(line.encode()) for line in kept[:first])
    assert preview.usage is not None and preview.usage.type == "session.usage_checkpoint"
    assert _seen(preview) == _whole(path, 2)


async def test_a_short_log_is_read_whole(tmp_path: Path) -> None:
    store, sid = await _log(tmp_path, 2)
    path = store.events_path(sid)
    preview = read_tail(path, 20)
    assert preview.index.start == 0 and preview.tail_start == 0
    assert preview.turns_before == 0 and preview.usage is None
    assert len(preview.events) == len(EventIndex.build(path))


_FRAMES = 500  # pauses the app is given to draw the tail (it needs a few)


def _future(path: Path) -> Future[TailPreview]:
    done: Future[TailPreview] = Future()
    done.set_result(read_tail(path))
    return done


def _turns(app: object) -> list[int]:
    transcript = app.timeline.transcript  # type: ignore[attr-defined]
    return [b.number for b in transcript.items if type(b).__name__ == "TurnBlock"]


async def test_the_app_draws_the_tail_before_the_session_opens_and_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.app import LoopdeckApp

    store, sid = await _log(tmp_path, 12)
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 3)
    release = asyncio.Event()

    async def reopen() -> Session:
        await release.wait()
        return await Session.resume(store=store, session_id=sid, model=scripted([]))

    app = LoopdeckApp(reopen, tail=_future(store.events_path(sid)))
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(_FRAMES):
            if _turns(app):
                break
            await pilot.pause()
        # Drawn while the session is still opening, numbered as in the whole log.
        assert app.session is None
        assert _turns(app) == [11, 12, 13]
        drawn = {id(view) for view in app.timeline.query("TurnDigest")}
        assert drawn
        # The status line speaks of the log being resumed, not of a new session.
        for _ in range(_FRAMES):
            if "resuming" in str(app.status.render()):
                break
            await pilot.pause()
        status = str(app.status.render())
        assert sid[:8] in status and "resuming…" in status and "turns 13" in status, status
        assert "no model" not in status, status
        release.set()
        while app.session is None:
            await pilot.pause()
        await pilot.pause()
        transcript = app.timeline.transcript
        assert _turns(app) == [11, 12, 13]
        assert transcript.turns == 13 and transcript.tool_calls == 12  # the whole session's
        # Kept: the same widgets, and what resuming added after them.
        assert {id(view) for view in app.timeline.query("TurnDigest")} >= drawn
        resumed = [b for b in transcript.items if getattr(b, "kind", "") == "resume"]
        assert len(resumed) == 1 and app.timeline.query("NoticeView")
        row = app.timeline.query_one(".load-earlier")
        assert row.display and "10 earlier turns" in str(row.render())
        app.timeline.load_earlier()
        await pilot.pause()
        assert _turns(app)[:4] == [8, 9, 10, 11]
        ids = [b.block_id for b in transcript.items]
        assert len(set(ids)) == len(ids)


def _first_frame_app(opener: object, tail: Future[TailPreview]) -> object:
    """The app, noting which turns its first frame showed."""
    from app.app import LoopdeckApp

    class FirstFrame(LoopdeckApp):
        first_frame: list[int] | None = None

        def _display(self, screen: Any, renderable: Any) -> None:
            if renderable is not None and self.first_frame is None:
                self.first_frame = _turns(self)
            super()._display(screen, renderable)

    return FirstFrame(opener, tail=tail)  # type: ignore[arg-type]


@pytest.mark.parametrize("read_before_the_app", [True, False])
async def test_a_tail_read_while_the_app_loaded_is_in_its_first_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_before_the_app: bool
) -> None:
    store, sid = await _log(tmp_path, 6)
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 3)
    path = store.events_path(sid)
    tail: Future[TailPreview] = _future(path) if read_before_the_app else Future()
    release = asyncio.Event()

    async def reopen() -> Session:
        await release.wait()
        return await Session.resume(store=store, session_id=sid, model=scripted([]))

    app: Any = _first_frame_app(reopen, tail)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(_FRAMES):
            if app.first_frame is not None:
                break
            await pilot.pause()
        if read_before_the_app:
            assert app.first_frame == [5, 6, 7]
        else:
            # Still being read: the first frame comes without it, the tail after.
            assert app.first_frame == []
            tail.set_result(read_tail(path))
            for _ in range(_FRAMES):
                if _turns(app):
                    break
                await pilot.pause()
            assert _turns(app) == [5, 6, 7]
        for _ in range(_FRAMES):
            if "resuming" in str(app.status.render()):
                break
            await pilot.pause()
        assert "resuming…" in str(app.status.render())
        release.set()
        while app.session is None:
            await pilot.pause()
        await pilot.pause()
        assert _turns(app) == [5, 6, 7] and app.timeline.transcript.turns == 7


async def test_a_log_that_changed_after_its_tail_was_drawn_is_drawn_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.app import LoopdeckApp

    store, sid = await _log(tmp_path, 6)
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 3)
    path = store.events_path(sid)
    tail = _future(path)
    release = asyncio.Event()

    async def reopen() -> Session:
        await release.wait()
        # Another run of the session wrote two more turns meanwhile.
        session = await Session.resume(
            store=store, session_id=sid, model=scripted([tool_turn(7), {"text": "more"}])
        )
        await session.send_and_wait("Once more.")
        await session.close()
        return await Session.resume(store=store, session_id=sid, model=scripted([]))

    app = LoopdeckApp(reopen, tail=tail)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(_FRAMES):
            if _turns(app):
                break
            await pilot.pause()
        assert _turns(app) == [5, 6, 7]
        release.set()
        while app.session is None:
            await pilot.pause()
        await pilot.pause()
        transcript = app.timeline.transcript
        whole = counts_before(EventIndex.build(path), len(EventIndex.build(path))).turns
        assert whole > 7 and transcript.turns == whole
        assert _turns(app) == [whole - 2, whole - 1, whole]
        ids = [b.block_id for b in transcript.items]
        assert len(set(ids)) == len(ids)


async def test_the_index_reads_a_timestamp_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.log.replay

    store, sid = await _log(tmp_path, 3)
    path = store.events_path(sid)
    read: list[bytes] = []
    real = agent.log.replay._envelope_stamp

    def counting(line: bytes, *, whole: bool) -> bytes | None:
        read.append(line)
        return real(line, whole=whole)

    monkeypatch.setattr(agent.log.replay, "_envelope_stamp", counting)
    index = EventIndex.build(path)
    assert len(index) > 10 and read == []  # indexing never looks for timestamps
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    last = rows[-1]["timestamp"]
    assert index.times[-1] == datetime.fromisoformat(last).timestamp()
    assert len(read) == 1 and len(read[0]) <= 300  # the line's tail, not the line
    assert index.times[-1] is not None and len(read) == 1  # read once


async def test_the_cli_starts_reading_the_tail_only_for_a_session_resumed_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.cli import build_parser
    from app.tui import start_tail

    store, sid = await _log(tmp_path, 4)
    monkeypatch.setenv("LOOPDECK_HOME", str(store.root.parent))
    parser = build_parser()
    assert start_tail(parser.parse_args([]), tmp_path) is None  # a new session
    assert start_tail(parser.parse_args(["--resume", "no-such-id"]), tmp_path) is None
    copied = tmp_path / "elsewhere" / "events.jsonl"  # outside the store: forked
    copied.parent.mkdir()
    copied.write_bytes(store.events_path(sid).read_bytes())
    assert start_tail(parser.parse_args(["--resume", str(copied)]), tmp_path) is None
    future = start_tail(parser.parse_args(["--resume", sid[:8]]), tmp_path)
    assert future is not None
    preview = future.result(timeout=60)
    assert preview.index.path == store.events_path(sid)
    assert _seen(preview) == _whole(store.events_path(sid), agent.session.tail_resume.TAIL_TURNS)


async def test_the_drawn_tail_mounts_its_last_blocks_first_then_the_rest_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.app import LoopdeckApp
    from app.resume_view import FIRST_BLOCKS, draw_preview, mount_rest

    store, sid = await _log(tmp_path, 14)
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 10)
    preview = read_tail(store.events_path(sid))
    never = asyncio.Event()

    async def opener() -> Session:
        await never.wait()
        raise AssertionError("not opened here")

    app = LoopdeckApp(opener)
    async with app.run_test(size=(100, 30)) as pilot:
        timeline = app.timeline
        mounted = draw_preview(timeline, preview)
        assert mounted is not None
        await mounted
        # The first frame lays out and paints a screen's worth, not the whole tail.
        items = timeline.transcript.items
        assert len(items) > FIRST_BLOCKS
        assert timeline.mounted_blocks == FIRST_BLOCKS
        assert timeline.hidden_blocks == len(items) - FIRST_BLOCKS
        await mount_rest(timeline)
        await pilot.pause()
        assert timeline.hidden_blocks == 0 and timeline.mounted_blocks == len(items)
        numbers = [view.block.number for view in timeline.query("TurnDigest")]
        last = timeline.transcript.turns
        assert numbers == list(range(last - 9, last + 1))  # in log order, as in the whole log
        assert not timeline.query_one(".load-earlier").display


def test_the_tail_is_handed_over_with_markdown_loaded(tmp_path: Path) -> None:
    """Loaded after the tail was handed over, its import lock held the app's first
    paint of the tail (a stall of 40-70 ms)."""
    import os
    import subprocess
    import sys

    store, sid = asyncio.run(_log(tmp_path, 3))
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from app.cli import build_parser\n"
        "from app.tui import start_tail\n"
        "future = start_tail(build_parser().parse_args(['--resume', sys.argv[1]]), Path.cwd())\n"
        "future.result(timeout=60)\n"
        "module = sys.modules.get('rich.markdown')\n"
        "print('LOADED' if module is not None and hasattr(module, 'Markdown') else 'NOT')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, sid],
        cwd=ROOT,
        env={**os.environ, "LOOPDECK_HOME": str(store.root.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip().splitlines()[-1:] == ["LOADED"], done.stderr[-2000:]


async def test_a_tail_that_does_not_fill_the_screen_mounts_more_before_the_session_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.app import LoopdeckApp
    from app.resume_view import FIRST_BLOCKS

    store, sid = await _log(tmp_path, 14)
    monkeypatch.setattr(agent.session.tail_resume, "TAIL_TURNS", 10)
    never = asyncio.Event()

    async def opener() -> Session:
        await never.wait()
        raise AssertionError("not opened here")

    app = LoopdeckApp(opener, tail=_future(store.events_path(sid)))
    async with app.run_test(size=(100, 300)) as pilot:  # taller than the whole tail
        timeline = app.timeline
        for _ in range(_FRAMES):
            if timeline.mounted_blocks > FIRST_BLOCKS and timeline.hidden_blocks == 0:
                break
            await pilot.pause()
        assert app.session is None
        assert timeline.hidden_blocks == 0
        assert timeline.mounted_blocks == len(timeline.transcript.items) > FIRST_BLOCKS
