"""SVG snapshots of ask_user and the todo list, at 120×40 and 80×24.

Same set-up as ``tests/widgets/test_snapshots.py`` (pinned clock and ids, a scripted model in
the ``make_workspace`` project). The question is shot while the model waits for the
answer; the todo list once the session is idle with items still open.

Update with ``pytest tests/widgets/test_snapshots_ask_user.py --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.app import LoopdeckApp
from tests.support.ask_user import todos
from tests.support.snapshot_support import (
    close_session_on_exit,
    make_app,
    settle,
    text_shown,
    token_usage,
    wait_for,
)
from tests.support.snapshot_support import pinned as pinned  # autouse
from tests.support.snapshot_support import workspace as workspace  # the fixture
from widgets.ask_user_prompt import AskUserPromptView
from widgets.turn_view import TurnView

SnapCompare = Callable[..., bool]
STREAM_MS = 200
SIZES = [(120, 40), (80, 24)]


ASK = {
    "name": "ask_user",
    "arguments": {
        "question": "Should Cart.add reject a quantity of zero, or drop the item?",
        "choices": ["Reject it with a ValueError (Recommended)", "Drop the item silently"],
    },
}


def waiting_for_the_answer() -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, LoopdeckApp)
        app.prompt.cursor_blink = False

        def waiting() -> bool:
            views = list(app.query(AskUserPromptView))
            turns = list(app.query(TurnView))
            return (
                len(views) == 1
                and views[0].arming.armed
                and not views[0].answer.done()
                and len(turns) == 1
                and text_shown(turns[0])
            )

        await wait_for(pilot, waiting)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_ask_user_waits_inline_for_the_answer(
    snap_compare: SnapCompare, workspace: Path, size: tuple[int, int]
) -> None:
    turns: list[dict[str, Any]] = [
        {
            "text": "`Cart.add` takes any quantity today. One decision before I change it:",
            "tool_calls": [ASK],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2150, 61),
        }
    ]
    app = make_app(workspace, turns, prompt="Make Cart.add safe for bad quantities.")
    close_session_on_exit(app)
    assert snap_compare(app, terminal_size=size, run_before=waiting_for_the_answer())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_todo_list_is_pinned_above_the_prompt(
    snap_compare: SnapCompare, workspace: Path, size: tuple[int, int]
) -> None:
    turns: list[dict[str, Any]] = [
        {
            "text": "Three TODOs to fix; I'll keep a list.",
            "tool_calls": [
                todos(
                    ("cart-guard", "Rejecting bad quantities in Cart.add", "in_progress"),
                    ("cents", "Rounding discounts to cents", "pending"),
                    ("code-tests", "Testing the discount codes", "pending"),
                )
            ],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2300, 88),
        },
        {
            "text": "The guard is in. Next, the rounding.",
            "tool_calls": [
                todos(
                    ("cart-guard", "Rejecting bad quantities in Cart.add", "done"),
                    ("cents", "Rounding discounts to cents", "in_progress"),
                    ("code-tests", "Testing the discount codes", "pending"),
                )
            ],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2610, 52),
        },
        {
            "text": "Pausing here: one of three done, the rounding is next.",
            "delay_ms": STREAM_MS,
            "usage": token_usage(2790, 17),
        },
    ]
    app = make_app(workspace, turns, prompt="Fix the TODOs, one by one.")
    assert snap_compare(app, terminal_size=size, run_before=settle(expect_turns=3))
