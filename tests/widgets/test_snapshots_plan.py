"""SVG snapshots of plan mode: a proposed plan waiting for the user's approval.

Same set-up as ``tests/widgets/test_snapshots_permissions.py`` (pinned clock and ids, a
scripted model in the ``make_workspace`` project). The shot is taken while the
exit_plan_mode call waits, so its card's spinner is pinned to one frame.

Update with ``pytest tests/widgets/test_snapshots_plan.py --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

import widgets.tool_card as tool_card
from app.app import LoopdeckApp
from tests.support.snapshot_support import (
    close_session_on_exit,
    make_app,
    pin_determinism,
    text_shown,
    wait_for,
)
from tests.support.snapshot_support import workspace as workspace  # the fixture
from widgets.plan_view import PlanApproval, PlanView
from widgets.turn_view import TurnView

SnapCompare = Callable[..., bool]
WIDE = (120, 40)
NARROW = (80, 24)
STREAM_MS = 200

PLAN = (
    "1. In `shop/cart.py`, make `Cart.add` raise `ValueError` when `qty <= 0`.\n"
    "2. In `tests/test_cart.py`, add a test for a zero and a negative quantity.\n"
    "3. Run `python -m pytest -q tests` to check both."
)
TURNS: list[dict[str, Any]] = [
    {
        "text": "Reading the cart first.",
        "tool_calls": [{"name": "view", "arguments": {"path": "shop/cart.py"}}],
        "delay_ms": STREAM_MS,
        "usage": {"prompt_tokens": 1980, "completion_tokens": 22},
    },
    {
        "text": "`Cart.add` accepts any quantity today. Here is my plan.",
        "tool_calls": [
            {
                "name": "exit_plan_mode",
                "arguments": {"summary": "Reject quantities of zero or less", "plan": PLAN},
            }
        ],
        "delay_ms": STREAM_MS,
        "usage": {"prompt_tokens": 2420, "completion_tokens": 96},
    },
]


@pytest.fixture(autouse=True)
def _pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    pin_determinism(monkeypatch)
    monkeypatch.setattr(tool_card, "SPINNER", tool_card.SPINNER[0])


async def waiting_for_approval(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, LoopdeckApp)
    app.prompt.cursor_blink = False

    def waiting() -> bool:
        asks = list(app.query(PlanApproval))
        turns = list(app.query(TurnView))
        return (
            len(asks) == 1
            and asks[0].arming.drawn
            and not asks[0].answer.done()
            and len(list(app.query(PlanView))) == 1
            and bool(turns)
            and text_shown(turns[-1])
        )

    await wait_for(pilot, waiting)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()  # the question scrolling into view
    await pilot.pause()


def _plan_app(workspace: Path) -> LoopdeckApp:
    app = make_app(
        workspace, TURNS, prompt="Make Cart.add reject a quantity of zero or less.", mode="plan"
    )
    close_session_on_exit(app)
    return app


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["120x40", "80x24"])
def test_a_plan_awaiting_approval(
    snap_compare: SnapCompare, workspace: Path, size: tuple[int, int]
) -> None:
    """Plan mode: the plan drawn in the timeline, the question under it, mode in the bar."""
    app = _plan_app(workspace)
    assert snap_compare(app, terminal_size=size, run_before=waiting_for_approval)
    # Nothing was approved, so nothing changed.
    assert "# TODO: reject qty <= 0" in (workspace / "shop" / "cart.py").read_text()
