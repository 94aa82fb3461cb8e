"""Replay and export draw a recorded plan and the user's answer to it."""

from __future__ import annotations

from pathlib import Path

from agent.log.store import SessionStore
from agent.transcript.plan_review import PlanDecision, PlanReview
from app.export import export_session
from app.viewer import ReplayScreen, ViewerApp
from tests.support.pilot import text_of
from tests.support.scripting import new_session, scripted
from widgets.message_blocks import NoticeView
from widgets.plan_view import PlanView

PLAN = "1. Add `greet()`.\n2. Test it."


async def _recorded(tmp_path: Path) -> Path:
    """A plan sent back with feedback, then a revised one approved into autopilot."""
    store = SessionStore(tmp_path / "home")
    first = {"name": "exit_plan_mode", "arguments": {"summary": "Greet", "plan": PLAN}}
    second = {
        "name": "exit_plan_mode",
        "arguments": {"summary": "Greet v2", "plan": PLAN + "\n3. Docs."},
    }
    model = scripted(
        [
            {"text": "Plan.", "tool_calls": [first]},
            {"text": "Revised.", "tool_calls": [second]},
            {
                "text": "Done.",
                "tool_calls": [{"name": "task_complete", "arguments": {"summary": "ok"}}],
            },
        ]
    )
    session, _ = await new_session(model, tmp_path, mode="plan", store=store)
    answers = [PlanDecision(None, "add docs"), PlanDecision("autopilot")]

    async def reviewer(_review: PlanReview) -> PlanDecision:
        return answers.pop(0)

    session.plan.reviewer = reviewer
    await session.send_and_wait("greet")
    await session.close()
    return store.events_path(session.id)


async def test_replay_draws_each_plan_with_its_outcome(tmp_path: Path) -> None:
    path = await _recorded(tmp_path)
    screen = ReplayScreen(path, speed=0.0)
    async with ViewerApp(screen).run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        views = list(screen.timeline.query(PlanView))
        assert len(views) == 2
        first, second = (text_of(v) for v in views)
        assert "Greet" in first and "Add greet()" in first
        assert "not approved — keep planning" in first and "add docs" in first
        assert "Docs." in second and "Docs." not in first
        assert "approved — implementing in autopilot" in second
        notices = [text_of(n) for n in screen.timeline.query(NoticeView)]
        assert "• plan written" in notices and "• plan updated" in notices
        assert "• mode: plan → autopilot" in notices


async def test_export_draws_the_plans_and_the_answers(tmp_path: Path) -> None:
    path = await _recorded(tmp_path)
    md = export_session(path, "md")
    assert "## ☰ Plan: Greet" in md and "1. Add `greet()`." in md
    assert "*↺ not approved — keep planning — “add docs”*" in md
    assert "## ☰ Plan: Greet v2" in md and "*✔ approved — implementing in autopilot*" in md
    html = export_session(path, "html")
    assert '<div class="plan"><h2>☰ Plan: Greet</h2>' in html
    assert "<code>greet()</code>" in html and "“add docs”" in html
