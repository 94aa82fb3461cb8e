"""History turns: once the next turn starts, a turn is drawn by one TurnDigest.

Runs the real app with the real ``LIVE_TURNS``: the digest must show what the live
turn showed, and its tool calls must still expand, by click or with enter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.style import Style
from textual.geometry import Region
from textual.pilot import Pilot

from tests.support.app_harness import (
    SIZE,
    FakeGateTool,
    Harness,
    send,
    started,
    wait_idle,
)
from tests.support.app_harness import workspace as workspace  # the fixture
from tests.support.pilot import text_of, wait_for
from tests.support.streams import Stream
from tests.support.timeline_app import FakeDeferredTimelineApp, FakeTimelineApp
from widgets.timeline import LIVE_TURNS, Timeline
from widgets.tool_card import ToolCard
from widgets.turn_digest import TurnDigest
from widgets.turn_view import TurnView

TURNS = [
    {
        "text": "Looking around.",
        "tool_calls": [
            {"name": "grep", "arguments": {"pattern": "def handler_"}},
            {"name": "view", "arguments": {"path": "missing.txt"}},
        ],
    },
    {"text": "Six handlers in src/app.py."},
]


async def ask_and_wait(pilot: Pilot[Any], h: Harness) -> None:
    await started(pilot, h)
    await send(pilot, h, "find the handlers")
    await wait_idle(pilot, h)


def row_of(digest: TurnDigest, needle: str) -> int:
    """The row of the digest's first line containing ``needle``."""
    width, height = digest.outer_size
    lines = [line.text for line in digest.render_lines(Region(0, 0, width, height))]
    return next(y for y, line in enumerate(lines) if needle in line)


async def test_a_finished_turn_becomes_one_digest_showing_the_same(workspace: Path) -> None:
    assert LIVE_TURNS == 1
    h = Harness(TURNS, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot, h)

        (digest,) = h.app.query(TurnDigest)
        (live,) = h.app.query(TurnView)
        assert digest.block.number == 1 and live.block.number == 2
        assert not list(digest.children) and list(h.app.query(ToolCard)) == []
        shown = text_of(digest)
        assert "Turn 1" in shown and "Looking around." in shown
        assert "✓ grep" in shown and "src/app.py:1:def handler_0():" in shown
        assert "handler_5" not in shown and "more lines (enter to expand)" in shown
        assert "✗ view" in shown and "missing.txt" in shown
        # Order: header, reply, then the cards.
        assert shown.index("Turn 1") < shown.index("Looking around.") < shown.index("✓ grep")


async def test_clicking_a_card_in_a_digest_expands_that_card_only(workspace: Path) -> None:
    h = Harness(TURNS, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot, h)
        (digest,) = h.app.query(TurnDigest)
        grep, _view = digest.block.tools

        await pilot.click(digest, offset=(8, row_of(digest, "✓ grep")))
        await pilot.pause()
        assert digest.expanded == {grep.tool_call_id}
        assert "handler_5" in text_of(digest)

        await pilot.click(digest, offset=(8, row_of(digest, "✓ grep")))
        await pilot.pause()
        assert digest.expanded == set()
        assert "handler_5" not in text_of(digest)

        # A click on the reply's text is not a click on a card.
        await pilot.click(digest, offset=(8, row_of(digest, "Looking around.")))
        await pilot.pause()
        assert digest.expanded == set()


async def test_enter_on_a_digest_expands_all_its_cards_then_folds_them(workspace: Path) -> None:
    h = Harness(TURNS, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot, h)
        (digest,) = h.app.query(TurnDigest)
        ids = {tool.tool_call_id for tool in digest.block.tools}

        digest.focus()
        await pilot.press("enter")
        assert digest.expanded == ids and "handler_5" in text_of(digest)
        await pilot.press("enter")
        assert digest.expanded == set() and "handler_5" not in text_of(digest)


async def test_a_card_opened_while_live_stays_open_in_the_digest(workspace: Path) -> None:
    gate = FakeGateTool()
    turns = [
        {
            "text": "Searching, then waiting.",
            "tool_calls": [
                {"name": "grep", "arguments": {"pattern": "def handler_"}},
                {"name": "gate", "arguments": {}},
            ],
        },
        {"text": "Done."},
    ]
    h = Harness(turns, workspace, registry_factory=gate.registry)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "go")

        def grep_done() -> bool:
            return any(c.block.name == "grep" and c.block.finished for c in h.app.query(ToolCard))

        await wait_for(pilot, grep_done, "the grep card to finish")
        card = next(c for c in h.app.query(ToolCard) if c.block.name == "grep")
        card.action_toggle_output()
        assert card.expanded

        gate.opened.set()
        await wait_idle(pilot, h)
        (digest,) = h.app.query(TurnDigest)
        assert digest.expanded == {card.block.tool_call_id}
        assert "handler_5" in text_of(digest)


async def test_history_draws_inline_code_like_the_live_reply_in_every_theme(
    workspace: Path,
) -> None:
    h = Harness(TURNS, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await ask_and_wait(pilot, h)
        rich_default = Style(bold=True, color="cyan", bgcolor="black")
        dark = h.app.console.get_style("markdown.code")
        assert dark != rich_default and dark.bgcolor is not None

        h.app.theme = "textual-light"
        await pilot.pause()
        light = h.app.console.get_style("markdown.code")
        assert light != dark and light.bgcolor is not None
        # One theme pushed at a time: switching back restores the dark styles.
        h.app.theme = "textual-dark"
        await pilot.pause()
        assert h.app.console.get_style("markdown.code") == dark


async def test_a_turn_still_running_when_a_log_stops_becomes_history_once_it_ends() -> None:
    """A log loaded mid-turn (a replay jump, a resume after a crash) leaves that turn
    live; when later turns arrive and it has ended, it becomes a digest like any other."""
    stream = Stream()
    stream.start()
    stream.user("hi")
    stream.turn("t1", "first reply", end=False)
    split = len(stream.events)
    stream.turn("t2", "second reply")  # t2's start marks t1 done
    stream.turn("t3", "third reply")
    app = FakeTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.load(stream.events[:split])
        await pilot.pause()
        assert [type(v) for v in timeline._views.values()][-1] is TurnView
        for event in stream.events[split:]:
            timeline.apply(event)
        await pilot.pause(0.3)
        turns = [v for v in timeline._views.values() if isinstance(v, TurnView | TurnDigest)]
        assert [type(v).__name__ for v in turns] == ["TurnDigest", "TurnDigest", "TurnView"]


def two_turns() -> Stream:
    stream = Stream()
    stream.start()
    stream.user("hi")
    stream.turn("t1", "first reply")
    stream.turn("t2", "second reply")
    return stream


async def test_after_a_reset_the_first_turn_names_its_model_again() -> None:
    stream = two_turns()
    app = FakeTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.load(stream.events)
        await pilot.pause()
        timeline.reset()  # as a replay jump does, then it loads a window again
        timeline.load(stream.events[-5:])
        await pilot.pause()
        (first, *_) = [v for v in timeline._views.values() if isinstance(v, TurnDigest)]
        assert first.show_model


async def test_a_deferred_timeline_catches_up_once_the_burst_is_handled() -> None:
    stream = two_turns()
    app = FakeDeferredTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        for event in stream.events:
            timeline.apply(event)
        assert timeline.mounted_blocks == 0  # folded, not drawn yet
        assert len(timeline.transcript.items) == 3
        await pilot.pause()
        assert timeline.mounted_blocks == 3  # one pass drew the burst, no timer needed
        digests = [v for v in timeline._views.values() if isinstance(v, TurnDigest)]
        live = [v for v in timeline._views.values() if isinstance(v, TurnView)]
        # t1 ended within the burst: history at once; t2, the newest, is live.
        assert len(digests) == 1 and len(live) == 1


async def test_a_delta_for_a_live_turn_goes_straight_to_its_view() -> None:
    stream = Stream()
    stream.start()
    stream.turn("t1", "streaming text", end=False)
    deltas = [e for e in stream.events if e.type == "assistant.message_delta"]
    first_delta = stream.events.index(deltas[0])
    app = FakeDeferredTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        for event in stream.events[:first_delta]:  # the turn starts: drawn by a pass
            timeline.apply(event)
        await pilot.pause()
        (view,) = [v for v in timeline._views.values() if isinstance(v, TurnView)]
        timeline.apply(deltas[0])
        # No pass was needed: the view already holds the chunk, to flush on its timer.
        assert not timeline._unshown and not timeline._catch_up_due
        assert view._pending == deltas[0].data.delta_content


async def test_a_removed_digest_leaves_the_theme_signal() -> None:
    # Textual's signal drops a gone subscriber only when it next fires: a digest still
    # subscribed would stay alive, lines and all, until the user switches themes.
    app = FakeTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.load(two_turns().events)
        await pilot.pause()
        digests = [v for v in timeline._views.values() if isinstance(v, TurnDigest)]
        subscribers = app.theme_changed_signal._subscriptions
        assert digests and all(d in subscribers for d in digests)
        timeline.reset()
        await pilot.pause()
        assert not any(d in subscribers for d in digests)
