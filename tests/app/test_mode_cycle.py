"""Shift+Tab's cycle, Copilot CLI's: interactive → plan → autopilot → interactive.

When autopilot's permission question stands in the way (the rules would deny), the
mode key alone still leaves plan mode: Shift+Tab on the question goes on past
autopilot to interactive. Esc cancels the switch and its label says where that
leaves the user (the mode they were in).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import widgets.arming as arming
from tests.support.clock import quick_arm as quick_arm  # the fixture
from tests.support.permission_level import Harness, dialog_armed, dialog_gone, opened
from tests.support.permission_ui import SIZE
from tests.support.permission_ui import workspace as workspace  # the fixture
from tests.support.pilot import text_of, wait_for
from widgets.permission_level import PermissionLevelScreen

pytestmark = pytest.mark.usefixtures("quick_arm")

def shown(dialog: PermissionLevelScreen) -> str:
    return " ".join(" ".join(text_of(w) for w in dialog.query("*")).split())


def mode_changes(h: Harness) -> list[tuple[str, str]]:
    return [
        (e.data.previous_mode, e.data.new_mode)  # type: ignore[attr-defined]
        for e in h.recorder.of("session.mode_changed")
    ]


async def test_shift_tab_on_the_question_leaves_plan_mode_for_interactive(
    workspace: Path,
) -> None:
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("shift+tab")
        await wait_for(pilot, lambda: h.session.mode == "plan", "plan mode")
        await pilot.press("shift+tab")
        dialog = await dialog_armed(pilot, h)
        assert "Esc cancel (stay in plan)" in shown(dialog)
        assert "Shift+Tab interactive ·" in shown(dialog)

        await pilot.press("shift+tab")
        await dialog_gone(pilot, h)
        assert h.session.mode == "interactive"
        assert mode_changes(h) == [("interactive", "plan"), ("plan", "interactive")]
        # Not an answer: no level chosen, the next switch to autopilot asks again.
        assert [a.action for a in h.answers()] == ["cancel"]
        assert h.session.permission_level.level is None
        assert h.app.focused is h.app.prompt


async def test_a_quick_double_shift_tab_from_plan_passes_autopilot_by(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pressed before the question can take a choice: passing by grants nothing, so
    the guard against early keys does not hold it back."""
    monkeypatch.setattr(arming, "ARM_DELAY", 60.0)
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("shift+tab")
        await wait_for(pilot, lambda: h.session.mode == "plan", "plan mode")
        await pilot.press("shift+tab", "shift+tab")
        await dialog_gone(pilot, h)
        assert h.session.mode == "interactive"
        assert h.session.permission_level.level is None


async def test_esc_says_where_it_leaves_you(workspace: Path) -> None:
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        h.app.action_toggle_autopilot()  # the palette's, from interactive
        dialog = await dialog_armed(pilot, h)
        assert "Esc cancel (stay interactive)" in shown(dialog)
        assert "Shift+Tab" not in shown(dialog)  # the same place as Esc: not offered
        await pilot.press("shift+tab")  # nothing to go on to
        await pilot.pause()
        assert h.dialog() is dialog
        await pilot.press("escape")
        await dialog_gone(pilot, h)
        assert h.session.mode == "interactive"


async def test_starting_in_autopilot_esc_says_it_starts_interactive(workspace: Path) -> None:
    h = Harness(workspace, mode="autopilot", initial_prompt="go")
    async with h.app.run_test(size=SIZE) as pilot:
        dialog = await dialog_armed(pilot, h)
        assert "Esc cancel (start interactive)" in shown(dialog)
        await pilot.press("escape")
        await dialog_gone(pilot, h)
        assert h.session.mode == "interactive"
