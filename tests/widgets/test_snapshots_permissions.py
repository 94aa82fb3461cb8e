"""SVG snapshots of permissions in the app: a prompt waiting on a diff, an autopilot denial.

Same set-up as ``tests/widgets/test_snapshots.py`` (pinned clock and ids, a scripted model in
the ``make_workspace`` project, HOME set so the welcome shows ``~/ws``). The waiting
prompt is shot while the turn is still running, so the one thing that animates there,
the tool card's spinner, is pinned to a single frame.

Update with ``pytest tests/widgets/test_snapshots_permissions.py --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

import widgets.tool_card as tool_card
from app.app import LoopdeckApp
from tests.support.snapshot_support import (
    TERMINAL,
    choose_level,
    close_session_on_exit,
    make_app,
    settle,
    text_shown,
    token_usage,
    wait_for,
)
from tests.support.snapshot_support import pinned as pinned  # autouse
from tests.support.snapshot_support import workspace as workspace  # the fixture
from widgets.permission_level import PermissionLevelScreen
from widgets.permission_prompt import PermissionPromptView
from widgets.turn_view import TurnView

SnapCompare = Callable[..., bool]
STREAM_MS = 200  # as in tests/widgets/test_snapshots.py: each turn streams, as a real model would


GUARD_EDIT = {
    "name": "edit",
    "arguments": {
        "path": "shop/cart.py",
        "old_str": "        # TODO: reject qty <= 0\n",
        "new_str": '        if qty <= 0:\n            raise ValueError("qty must be positive")\n',
    },
}


def waiting_for_permission() -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A ``run_before`` that waits until the prompt is drawn and the screen is still."""

    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, LoopdeckApp)
        app.prompt.cursor_blink = False

        def waiting() -> bool:
            views = list(app.query(PermissionPromptView))
            turns = list(app.query(TurnView))
            return (
                len(views) == 1
                and views[0].arming.drawn
                and not views[0].answer.done()
                and len(turns) == 1
                and text_shown(turns[0])
            )

        await wait_for(pilot, waiting)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()  # the prompt scrolling into view
        await pilot.pause()

    return run_before


def _edit_app(workspace: Path) -> LoopdeckApp:
    turns: list[dict[str, Any]] = [
        {
            "text": "I'll make `Cart.add` reject a quantity of zero or less.",
            "tool_calls": [GUARD_EDIT],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2210, 64),
        }
    ]
    app = make_app(workspace, turns, prompt="Make Cart.add reject a quantity of zero or less.")
    close_session_on_exit(app)
    return app


def test_permission_prompt_shows_the_edit_diff(
    snap_compare: SnapCompare, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interactive: the edit waits on the inline prompt, which shows its diff."""
    # The card spins while it waits; one frame keeps the picture the same every run.
    monkeypatch.setattr(tool_card, "SPINNER", tool_card.SPINNER[0])
    app = _edit_app(workspace)
    assert snap_compare(app, terminal_size=TERMINAL, run_before=waiting_for_permission())
    # Nothing was answered, so nothing changed.
    assert "# TODO: reject qty <= 0" in (workspace / "shop" / "cart.py").read_text()


DENIED_FOLLOW_UP = (
    "Running the tests needs approval, and this autopilot run has no rule allowing "
    "shell commands, so I could not check the change. Rerun with "
    "`--allow-tool 'shell(python:*)'` to let me run them."
)


def test_autopilot_denies_a_command(snap_compare: SnapCompare, workspace: Path) -> None:
    """Autopilot: a command without a rule is denied on the card; the model says so."""
    turns: list[dict[str, Any]] = [
        {
            "text": "Running the tests first.",
            "tool_calls": [{"name": "bash", "arguments": {"command": "python -m pytest -q tests"}}],
            "delay_ms": STREAM_MS,
            "usage": token_usage(1930, 31),
        },
        {
            "text": DENIED_FOLLOW_UP,
            "tool_calls": [
                {
                    "name": "task_complete",
                    "arguments": {"summary": "Could not run the tests: shell needs approval."},
                }
            ],
            "delay_ms": STREAM_MS,
            "usage": token_usage(2120, 58),
        },
    ]
    app = make_app(
        workspace, turns, prompt="Run the tests and tell me what fails.", mode="autopilot"
    )
    # Asked first (the rules would deny edits and shell): keep my rules.
    run_before = choose_level("3", settle(expect_turns=2))
    assert snap_compare(app, terminal_size=TERMINAL, run_before=run_before)


NARROW = (80, 24)


def test_autopilot_asks_for_the_permission_level(
    snap_compare: SnapCompare, workspace: Path
) -> None:
    """Starting in autopilot with rules that deny edits and shell: the choice, at 80x24."""
    app = make_app(
        workspace, [], prompt="Make Cart.add reject a quantity of zero or less.", mode="autopilot"
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        app.prompt.cursor_blink = False
        await wait_for(
            pilot, lambda: isinstance(app.screen, PermissionLevelScreen) and app.screen.arming.armed
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_the_status_bar_shows_the_chosen_level(snap_compare: SnapCompare, workspace: Path) -> None:
    """Toggle autopilot (the palette's), 2: autopilot with edits allowed, said in the
    timeline and the status bar."""
    app = make_app(workspace, [])

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle()(pilot)
        app.action_toggle_autopilot()
        await choose_level("2")(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)
