"""Plan mode in the app: the plan drawn, approved into autopilot (with the permission
choice) or sent back with feedback, a write refused while planning, the plan panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

import widgets.arming as arming
from agent.events.schema import ExitPlanModeCompletedData, SessionModeChangedData
from agent.permissions.rules import PermissionPolicy
from tests.support.app_harness import send
from tests.support.clock import quick_arm as quick_arm  # the fixture
from tests.support.permission_level import Harness, dialog_armed, dialog_gone, opened
from tests.support.permission_ui import GREET, SIZE, wait_idle
from tests.support.permission_ui import workspace as workspace  # the fixture
from tests.support.pilot import text_of, wait_for
from tests.support.timed_keys import press_at
from widgets.plan_panel import PlanPanel
from widgets.plan_view import PlanApproval, PlanView

PLAN = "1. Change the greeting in `greet.py`.\n2. Build with `touch built.txt`."
PROPOSE = {"name": "exit_plan_mode", "arguments": {"summary": "Fix the greeting", "plan": PLAN}}
LOOK = {"name": "view", "arguments": {"path": "greet.py"}}
EDIT = {
    "name": "edit",
    "arguments": {"path": "greet.py", "old_str": '"Hello, "', "new_str": '"Hi, "'},
}
DONE = {"name": "task_complete", "arguments": {"summary": "Greeting fixed."}}

pytestmark = pytest.mark.usefixtures("quick_arm")  # none of these is about the arming delay


def approval(h: Harness) -> PlanApproval | None:
    found = list(h.app.query(PlanApproval))
    return found[0] if found else None


async def approval_armed(pilot: Pilot[Any], h: Harness) -> PlanApproval:
    import time

    def armed() -> bool:
        view = approval(h)
        return view is not None and time.monotonic() - view.arming.shown_at >= 0.05

    await wait_for(pilot, armed, "the plan's approval question")
    view = approval(h)
    assert view is not None
    return view


def modes(h: Harness) -> list[tuple[str, str]]:
    out = []
    for e in h.recorder.of("session.mode_changed"):
        assert isinstance(e.data, SessionModeChangedData)
        out.append((e.data.previous_mode, e.data.new_mode))
    return out


def panel_text(h: Harness) -> str | None:
    """The open plan panel's text, once it is drawn; None while there is none."""
    screen = h.app.screen
    if not isinstance(screen, PlanPanel) or not screen.query("#plan-panel-body"):
        return None
    return " ".join(text_of(w) for w in screen.query("*"))


def completions(h: Harness) -> list[ExitPlanModeCompletedData]:
    out = [e.data for e in h.recorder.of("exit_plan_mode.completed")]
    assert all(isinstance(d, ExitPlanModeCompletedData) for d in out)
    return out  # type: ignore[return-value]


async def test_plan_approved_into_autopilot_with_the_permission_choice(workspace: Path) -> None:
    h = Harness(
        workspace,
        mode="plan",
        turns=[
            {"text": "Reading first.", "tool_calls": [LOOK]},
            {"text": "My plan.", "tool_calls": [PROPOSE]},
            {"text": "Fixing.", "tool_calls": [EDIT]},
            {"text": "", "tool_calls": [DONE]},
        ],
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        view = await approval_armed(pilot, h)
        [plan_view] = h.app.query(PlanView)
        # The plan is drawn above its question, not after it.
        drawn = list(h.app.timeline.children)
        assert drawn.index(plan_view) < drawn.index(view)
        shown = text_of(plan_view)
        assert "Fix the greeting" in shown and "Change the greeting" in shown
        assert "awaiting your approval" in shown
        assert h.session.mode == "plan" and h.app.focused is view

        await pilot.press("2")  # yes, in autopilot: the level is asked first
        await dialog_armed(pilot, h)
        await pilot.press("2")  # allow edits only
        await dialog_gone(pilot, h)
        await wait_idle(pilot, h)

        assert modes(h) == [("plan", "autopilot")]
        [done] = completions(h)
        assert done.approved and done.selected_action == "autopilot"
        assert h.session.permission_level.level == "edits"
        assert 'return "Hi, " + name' in (workspace / "greet.py").read_text()
        assert h.recorder.of("session.task_complete")
        assert approval(h) is None
        assert "approved — implementing in autopilot" in text_of(plan_view)
        assert "autopilot" in text_of(h.app.status)


async def test_cancelling_the_autopilot_choice_asks_the_plan_again(workspace: Path) -> None:
    h = Harness(workspace, mode="plan", turns=[{"text": "Plan.", "tool_calls": [PROPOSE]}])
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        await approval_armed(pilot, h)
        await pilot.press("2")
        await dialog_armed(pilot, h)
        await pilot.press("escape")  # no level: not autopilot after all
        await dialog_gone(pilot, h)
        view = await approval_armed(pilot, h)
        assert not completions(h) and h.session.mode == "plan"
        assert h.app.focused is view
        await pilot.press("1")  # yes, in interactive mode
        await wait_idle(pilot, h)
        assert modes(h) == [("plan", "interactive")]
        assert [c.selected_action for c in completions(h)] == ["interactive"]


async def test_keep_planning_sends_the_feedback_and_the_model_revises(workspace: Path) -> None:
    revised = {"name": "exit_plan_mode", "arguments": {"summary": "v2", "plan": PLAN + "\n3. Doc."}}
    h = Harness(
        workspace,
        mode="plan",
        turns=[
            {"text": "Plan.", "tool_calls": [PROPOSE]},
            {"text": "Revised.", "tool_calls": [revised]},
            {"text": "Implementing it now."},
        ],
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        await approval_armed(pilot, h)
        await pilot.press("3")
        await pilot.press(*"add docs")
        await pilot.press("enter")
        # The model reads the feedback and proposes again: a second question.
        await wait_for(pilot, lambda: len(h.recorder.of("exit_plan_mode.requested")) == 2, "v2")
        await approval_armed(pilot, h)
        first = h.model.seen_messages[1]
        assert "add docs" in str([m for m in first if m.get("role") == "tool"][-1]["content"])
        views = list(h.app.query(PlanView))
        assert len(views) == 2 and "keep planning" in text_of(views[0])
        assert "add docs" in text_of(views[0])
        await pilot.press("1")
        await wait_idle(pilot, h)
        assert [(c.approved, c.feedback) for c in completions(h)] == [
            (False, "add docs"),
            (True, None),
        ]
        assert modes(h) == [("plan", "interactive")]
        assert h.session.plan.read() == PLAN + "\n3. Doc."


async def test_a_write_is_refused_in_plan_mode_even_when_allowed(workspace: Path) -> None:
    h = Harness(
        workspace,
        mode="plan",
        policy=PermissionPolicy.from_flags(allow_all=True),  # the rules would allow it
        turns=[
            {"text": "Editing anyway.", "tool_calls": [EDIT]},
            {
                "text": "Running.",
                "tool_calls": [{"name": "bash", "arguments": {"command": "touch x"}}],
            },
            {"text": "Understood: planning only."},
        ],
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        await wait_idle(pilot, h)
        results = [e.data for e in h.recorder.of("tool.execution_complete")]
        assert [r.success for r in results] == [False, False]  # type: ignore[attr-defined]
        assert all("Plan mode is read-only" in r.error.message for r in results)  # type: ignore[attr-defined]
        assert (workspace / "greet.py").read_text() == GREET
        assert not (workspace / "x").exists()
        assert not h.recorder.of("permission.requested")  # refused before any rule


async def test_the_plan_panel_shows_the_current_plan(workspace: Path) -> None:
    h = Harness(workspace, mode="plan", turns=[{"text": "Plan.", "tool_calls": [PROPOSE]}])
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: panel_text(h) is not None, "the plan panel")
        assert "No plan yet" in (panel_text(h) or "")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(h.app.screen, PlanPanel), "closed")

        await send(pilot, h, "fix the greeting")
        await approval_armed(pilot, h)
        await pilot.press("1")
        await wait_idle(pilot, h)
        h.app.action_show_plan()
        await wait_for(pilot, lambda: panel_text(h) is not None, "the plan panel")
        assert "Change the greeting" in (panel_text(h) or "")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(h.app.screen, PlanPanel), "closed")


async def test_keys_pressed_as_the_question_appears_do_not_answer(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arming, "ARM_DELAY", 60.0)
    h = Harness(workspace, mode="plan", turns=[{"text": "Plan.", "tool_calls": [PROPOSE]}])
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        await wait_for(pilot, lambda: approval(h) is not None, "the question")
        await pilot.press("1", "2")
        await pilot.pause()
        assert approval(h) is not None and not completions(h)
        assert h.session.mode == "plan" and h.session.plan.pending is not None
        await pilot.press("shift+tab")  # no mode switch under a waiting plan
        await pilot.pause()
        assert h.session.mode == "plan"


async def test_a_key_typed_once_the_question_shows_answers_however_late_it_is_handled(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured from the question's first paint to the key's arrival: a "1" typed before
    the paint does not approve, one typed ARM_DELAY after it does, whenever handled."""
    monkeypatch.setattr(arming, "ARM_DELAY", 0.3)
    h = Harness(
        workspace,
        mode="plan",
        turns=[{"text": "Plan.", "tool_calls": [PROPOSE]}, {"text": "Done."}],
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        await wait_for(pilot, lambda: (v := approval(h)) is not None and v.arming.drawn, "paint")
        view = approval(h)
        assert view is not None
        painted = view.arming.shown_at
        await press_at(pilot, "1", painted - 0.01)
        assert not view.answer.done()
        await press_at(pilot, "1", painted + 0.31)
        await wait_for(pilot, lambda: h.session.mode == "interactive", "the approval")


async def test_a_recorded_session_draws_the_plan_above_its_question(
    workspace: Path, tmp_path: Path
) -> None:
    # With a log, events reach the timeline once written: the question must wait for
    # its plan to be drawn, not appear before it.
    from agent.log.store import SessionStore

    h = Harness(
        workspace,
        mode="plan",
        turns=[{"text": "My plan.", "tool_calls": [PROPOSE]}, {"text": "Kept planning."}],
        store=SessionStore(tmp_path / "home"),
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        view = await approval_armed(pilot, h)
        [plan_view] = h.app.query(PlanView)
        drawn = list(h.app.timeline.children)
        assert drawn.index(plan_view) < drawn.index(view)
        await pilot.press("1")  # approved: the session ends its turn before the app closes
        await wait_idle(pilot, h)
        assert [d.selected_action for d in completions(h)] == ["interactive"]
