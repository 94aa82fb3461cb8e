"""The app draws a turn's speed (live while it streams) and a cut attempt's text."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from agent.transcript.blocks import TurnBlock
from app.app import LoopdeckApp
from tests.support.snapshot_support import TERMINAL, make_app, settle
from tests.support.snapshot_support import pinned as pinned  # autouse: 140 ms an event
from tests.support.snapshot_support import workspace as workspace  # the fixture
from widgets.turn_digest import TurnDigest
from widgets.turn_view import CutAttemptView, TurnView

SnapCompare = Callable[..., bool]
WORDS = " ".join(f"word{i}" for i in range(24))
DROPPED = {"type": "server", "message": "connection dropped mid-stream"}


def screen_text(app: LoopdeckApp) -> str:
    """The screen as plain text (the SVG screenshot without its markup)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def until(pilot: Pilot[Any], check: Callable[[], bool]) -> None:
    for _ in range(1000):
        if check():
            return
        await pilot.pause(0.01)
    raise AssertionError("timed out")


async def test_the_running_turn_shows_its_speed_live_then_the_recorded_one(
    workspace: Path,
) -> None:
    reply = {"text": WORDS, "delay_ms": 3000, "usage": {"completion_tokens": 30}}
    app = make_app(workspace, [reply], prompt="Count.")
    async with app.run_test(size=TERMINAL) as pilot:

        def streaming() -> TurnBlock | None:
            turn = app.timeline.transcript.current_turn
            return turn if turn is not None and turn.speed.chunks >= 3 else None

        await until(pilot, lambda: streaming() is not None)
        await pilot.pause()
        live = screen_text(app)
        assert re.search(r"Turn 1 .*first token 140ms · \d+(\.\d)? tok/s .*working…", live)

        await settle(expect_turns=1)(pilot)
        done = screen_text(app)
        # 30 tokens from the first of 24 deltas (140 ms after the request) to the reply
        # (140 ms after the last delta): 30 / 3.36 s.
        assert "first token 140ms · 8.9 tok/s" in done
        assert "working…" not in done


async def test_a_cut_attempt_is_shown_until_the_retry_replaces_it(workspace: Path) -> None:
    cut = {"text": "The answer is", "error": DROPPED}
    app = make_app(workspace, [cut, {"text": "The answer is 42."}], prompt="What is it?")
    async with app.run_test(size=TERMINAL) as pilot:
        await settle(expect_turns=1)(pilot)
        assert not app.query(CutAttemptView)  # replaced by the retry's reply
        assert "attempt 1, cut" not in screen_text(app)


async def test_a_cut_attempt_nothing_replaced_stays_drawn_as_cut(workspace: Path) -> None:
    app = make_app(workspace, [{"text": "The answer is", "error": DROPPED}] * 4, prompt="Go.")
    async with app.run_test(size=TERMINAL) as pilot:
        await settle(expect_turns=1)(pilot)
        (view,) = app.query(CutAttemptView)
        assert isinstance(view.parent, TurnView)
        text = screen_text(app)
        assert "✂ attempt 4, cut" in text and "The answer is" in text
        # Drawn the same once the turn is history (a digest).
        digest = TurnDigest(view.block)
        assert "attempt 4, cut" in str(digest.render().renderables[1])  # type: ignore[attr-defined]


def test_snapshot_cut_attempt_after_the_retries_ran_out(
    snap_compare: SnapCompare, workspace: Path
) -> None:
    """Every attempt drops mid-reply: the last attempt's text, struck through, then the
    error; the header counts the retries."""
    turns: list[dict[str, Any]] = [{"text": "Reading `shop/pricing.py`, the", "error": DROPPED}] * 4
    app = make_app(workspace, turns, prompt="Summarize shop/pricing.py.")
    assert snap_compare(app, terminal_size=TERMINAL, run_before=settle(expect_turns=1))


def test_snapshot_turn_speed_and_usage(snap_compare: SnapCompare, workspace: Path) -> None:
    """A finished turn's header: duration, tokens in/out, cost, first token, tokens/s."""
    reply = {
        "text": "`apply_discount` multiplies by `1 - rate` and never rounds to cents.",
        "delay_ms": 200,
        "usage": {"prompt_tokens": 1840, "completion_tokens": 21, "cost": 0.0042},
    }
    app = make_app(workspace, [reply], prompt="Summarize shop/pricing.py.")
    assert snap_compare(app, terminal_size=TERMINAL, run_before=settle(expect_turns=1))


async def test_the_status_bar_of_a_resumed_session_counts_the_whole_session(
    workspace: Path, loopdeck_home: Path
) -> None:
    from agent.log.store import SessionStore
    from agent.session.session import Session
    from tests.support.scripting import scripted

    usage = [{"prompt_tokens": 1000, "completion_tokens": 5, "cost": 0.001}]
    usage.append({"prompt_tokens": 1200, "completion_tokens": 7, "cost": 0.002})
    turns: list[dict[str, Any]] = [{"text": f"Reply {i}.", "usage": u} for i, u in enumerate(usage)]
    store = SessionStore(loopdeck_home)
    first = await Session.create(model=scripted(turns), cwd=workspace, store=store)
    await first.send_and_wait("one")
    await first.close()

    async def reopen() -> Session:
        return await Session.resume(store=store, session_id=first.id, model=scripted(turns))

    app = LoopdeckApp(reopen, initial_prompt="two")
    async with app.run_test(size=TERMINAL) as pilot:
        await settle(expect_turns=2)(pilot)
        status = app.status.render().plain
        assert "2.2k in · 12 out" in status and "$0.0030" in status
