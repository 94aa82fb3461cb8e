"""SVG snapshots of the terminal app (pytest-textual-snapshot).

Each test drives the real app on a scripted model in a temp workspace, waits until
the session is idle and nothing animates, then compares the screen with the SVG in
``tests/__snapshots__/``. Clock and ids are pinned (see ``tests/support/snapshot_support.py``).

Update after an intended visual change with
``pytest tests/widgets/test_snapshots.py --snapshot-update`` and look at the new pictures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.support.snapshot_support import (
    TERMINAL,
    choose_level,
    make_app,
    settle,
    token_usage,
)
from tests.support.snapshot_support import pinned as pinned  # autouse
from tests.support.snapshot_support import workspace as workspace  # the fixture

SnapCompare = Callable[..., bool]


# Every turn streams over this long, as a real model would: its view is mounted while
# the turn runs and takes the live path (streamed Markdown, then one final render), the
# same path every run. With no delay a whole turn is emitted before its view mounts.
STREAM_MS = 200


FINAL_ANSWER = (
    "There are **3 TODOs** in the project:\n"
    "\n"
    "- `shop/cart.py:11`: `Cart.add` accepts a zero or negative `qty`.\n"
    "- `shop/pricing.py:7`: `apply_discount` does not round to cents.\n"
    "- `tests/test_cart.py:8`: no test covers discount codes.\n"
    "\n"
    "Fix the first one: raise `ValueError` in `Cart.add` when `qty <= 0`."
)


def test_interactive_session_with_tools(snap_compare: SnapCompare, workspace: Path) -> None:
    """A typed prompt, a grep and a view, then a Markdown answer (list, inline code)."""
    turns: list[dict[str, Any]] = [
        {
            "text": "I'll look for TODO markers first.",
            "tool_calls": [{"name": "grep", "arguments": {"pattern": "TODO"}}],
            "delay_ms": STREAM_MS,
            "usage": token_usage(1840, 38),
        },
        {
            "text": "The cart one matters most; let me read `Cart.add`.",
            "tool_calls": [
                {"name": "view", "arguments": {"path": "shop/cart.py", "view_range": [10, 12]}}
            ],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2015, 41),
        },
        {"text": FINAL_ANSWER, "delay_ms": STREAM_MS, "usage": token_usage(2230, 96)},
    ]
    app = make_app(
        workspace, turns, prompt="Find the TODOs in this project and tell me what to fix first."
    )
    assert snap_compare(app, terminal_size=TERMINAL, run_before=settle(expect_turns=3))


SUMMARY = (
    "Proposed a guard for `Cart.add` (read-only tools, so nothing was edited):\n"
    "\n"
    "1. Raise `ValueError` when `qty <= 0`.\n"
    "2. Cover it with a test in `tests/test_cart.py`."
)


def test_autopilot_nudges_then_complete(snap_compare: SnapCompare, workspace: Path) -> None:
    """Autopilot: two nudges (numbered, against the cap), then task_complete."""
    turns: list[dict[str, Any]] = [
        {
            "text": "Finding `Cart.add`.",
            "tool_calls": [{"name": "grep", "arguments": {"pattern": "def add", "path": "shop"}}],
            "delay_ms": STREAM_MS,
            "usage": token_usage(1900, 30),
        },
        {
            "text": "It is in `shop/cart.py`; a guard belongs there.",
            "delay_ms": STREAM_MS,
            "usage": token_usage(1990, 22),
        },
        {
            "text": "Reading the method first.",
            "tool_calls": [
                {"name": "view", "arguments": {"path": "shop/cart.py", "view_range": [10, 12]}}
            ],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2150, 28),
        },
        {
            "text": "I only have read-only tools here.",
            "delay_ms": STREAM_MS,
            "usage": token_usage(2260, 18),
        },
        {
            "text": "",
            "tool_calls": [{"name": "task_complete", "arguments": {"summary": SUMMARY}}],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2380, 64),
        },
    ]
    app = make_app(
        workspace,
        turns,
        prompt="Make Cart.add reject a quantity of zero or less.",
        mode="autopilot",
        nudge_cap=5,
    )
    # Asked first (the rules would deny edits and shell): keep my rules.
    run_before = choose_level("3", settle(expect_turns=5))
    assert snap_compare(app, terminal_size=(100, 46), run_before=run_before)


def test_rate_limit_error_after_retries(snap_compare: SnapCompare, workspace: Path) -> None:
    """Every attempt is rate limited: the turn shows its retries, then the error and hint."""
    limited = {"error": {"type": "rate_limit", "message": "429 Too Many Requests: quota exceeded"}}
    turns: list[dict[str, Any]] = [limited] * 4  # the first call and its 3 retries
    app = make_app(workspace, turns, prompt="Summarize shop/pricing.py.")
    assert snap_compare(app, terminal_size=TERMINAL, run_before=settle(expect_turns=1))


def test_auth_error(snap_compare: SnapCompare, workspace: Path) -> None:
    """Not retryable: one failed call, then the error block with the auth hint."""
    turns: list[dict[str, Any]] = [
        {"error": {"type": "auth", "message": "401 Unauthorized: invalid API key"}}
    ]
    app = make_app(workspace, turns, prompt="Summarize shop/pricing.py.")
    assert snap_compare(app, terminal_size=TERMINAL, run_before=settle(expect_turns=1))


def test_empty_start_screen(snap_compare: SnapCompare, workspace: Path) -> None:
    """A fresh session before the first message: empty timeline, prompt, hint, status."""
    app = make_app(workspace, [])
    assert snap_compare(app, terminal_size=TERMINAL, run_before=settle())


NARROW = (80, 24)  # the classic terminal: banner and status bar laid out for it


def test_start_screen_at_80x24(snap_compare: SnapCompare, workspace: Path) -> None:
    """The welcome banner reflows as a paragraph instead of wrapping its lines again."""
    app = make_app(workspace, [])
    assert snap_compare(app, terminal_size=NARROW, run_before=settle())


def test_autopilot_status_at_80x24(snap_compare: SnapCompare, workspace: Path) -> None:
    """A status bar too long for 80 columns: the session id and the word "nudges" give
    way, tokens in/out and the cost stay (the permission level stays with the mode)."""
    usage = {"prompt_tokens": 18_450, "completion_tokens": 1_175, "cost": 0.0321}
    turns: list[dict[str, Any]] = [
        {
            "text": "Reading the method first.",
            "tool_calls": [
                {"name": "view", "arguments": {"path": "shop/cart.py", "view_range": [10, 12]}}
            ],
            "delay_ms": STREAM_MS,
            "usage": usage,
        },
        {"text": "A guard belongs in `Cart.add`.", "delay_ms": STREAM_MS, "usage": usage},
        {
            "text": "",
            "tool_calls": [{"name": "task_complete", "arguments": {"summary": SUMMARY}}],
            "delay_ms": STREAM_MS,
            "usage": usage,
        },
    ]
    app = make_app(
        workspace,
        turns,
        prompt="Make Cart.add reject a quantity of zero or less.",
        mode="autopilot",
        nudge_cap=5,
    )
    # Asked first (the rules would deny edits and shell): keep my rules.
    run_before = choose_level("3", settle(expect_turns=3))
    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_focused_card_opened_from_the_keyboard(snap_compare: SnapCompare, workspace: Path) -> None:
    """Tab to the timeline, k to the newest card, Enter opens it: the focused card is
    marked, the hint line lists the timeline's keys."""
    turns: list[dict[str, Any]] = [
        {
            "text": "Where does the cart keep its items?",
            "tool_calls": [{"name": "grep", "arguments": {"pattern": "self", "path": "shop"}}],
            "delay_ms": STREAM_MS,
            "usage": token_usage(1840, 38),
        },
        {"text": "In `self.items`, a list of tuples.", "delay_ms": STREAM_MS},
    ]
    app = make_app(workspace, turns, prompt="How does the cart store its items?")

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(expect_turns=2)(pilot)
        await pilot.press("tab", "k", "enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=TERMINAL, run_before=run_before)
