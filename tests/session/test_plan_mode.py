"""Plan mode in the engine: read-only tools, the plan kept, exit_plan_mode answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import (
    ExitPlanModeCompletedData,
    ExitPlanModeRequestedData,
    SessionModeChangedData,
    SessionPlanChangedData,
    ToolExecutionCompleteData,
)
from agent.log.store import SessionStore
from agent.transcript.fold import Transcript
from agent.transcript.plan_review import PlanDecision, PlanReview
from tests.support.scripting import new_session, scripted

session_events = pytest.importorskip("copilot.generated.session_events")

PLAN = "1. Add `greet()` to app.py.\n2. Test it in test_app.py."
EXIT = {"name": "exit_plan_mode", "arguments": {"summary": "Add greet()", "plan": PLAN}}


class FakeReviewer:
    """Answers each plan with the next decision, keeping what it was shown."""

    def __init__(self, *decisions: PlanDecision) -> None:
        self.decisions = list(decisions)
        self.seen: list[PlanReview] = []

    async def __call__(self, review: PlanReview) -> PlanDecision:
        self.seen.append(review)
        return self.decisions.pop(0)


def _results(events: list[Any]) -> dict[str, ToolExecutionCompleteData]:
    return {
        e.data.tool_call_id: e.data for e in events if isinstance(e.data, ToolExecutionCompleteData)
    }


async def test_plan_mode_offers_only_read_tools_and_refuses_a_write(tmp_path: Path) -> None:
    model = scripted(
        [
            {
                "text": "Writing straight away.",
                "tool_calls": [
                    {"id": "w", "name": "create", "arguments": {"path": "x.txt", "file_text": "x"}},
                    {"id": "s", "name": "bash", "arguments": {"command": "touch y.txt"}},
                ],
            },
            {"text": "Understood."},
        ]
    )
    session, rec = await new_session(model, tmp_path, mode="plan")
    await session.send_and_wait("add greet")
    # Reading, asking the user and keeping the checklist change nothing in the workspace.
    assert model.seen_tools[0] == [
        "view",
        "grep",
        "glob",
        "ask_user",
        "update_todos",
        "exit_plan_mode",
    ]
    results = _results(rec.events)
    for call_id in ("w", "s"):
        assert not results[call_id].success
        assert "Plan mode is read-only" in (results[call_id].error.message or "")  # type: ignore[union-attr]
    assert not (session.cwd / "x.txt").exists() and not (session.cwd / "y.txt").exists()
    assert "# Mode: plan" in session.system_prompt()
    assert "exit_plan_mode" in session.system_prompt()
    await session.close()


async def test_approved_plan_moves_to_autopilot_and_the_loop_goes_on(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    model = scripted(
        [
            {"text": "Looking.", "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
            {"text": "Here is the plan.", "tool_calls": [EXIT]},
            {
                "text": "Done.",
                "tool_calls": [{"name": "task_complete", "arguments": {"summary": "greeted"}}],
            },
        ]
    )
    session, rec = await new_session(model, tmp_path, mode="plan", store=store)
    reviewer = FakeReviewer(PlanDecision("autopilot"))
    session.plan.reviewer = reviewer
    outcome = await session.send_and_wait("add greet")

    assert outcome.task_complete
    assert reviewer.seen[0].plan == PLAN and reviewer.seen[0].summary == "Add greet()"
    assert session.mode == "autopilot"
    # The turn after the approval is offered autopilot's tools.
    assert "task_complete" in model.seen_tools[2] and "create" in model.seen_tools[2]
    datas = [e.data for e in rec.events]
    changed = [d for d in datas if isinstance(d, SessionPlanChangedData)]
    assert [d.operation for d in changed] == ["create"]
    requested = next(d for d in datas if isinstance(d, ExitPlanModeRequestedData))
    assert requested.plan_content == PLAN
    completed = next(d for d in datas if isinstance(d, ExitPlanModeCompletedData))
    assert completed.approved and completed.selected_action == "autopilot"
    modes = [d for d in datas if isinstance(d, SessionModeChangedData)]
    assert [(m.previous_mode, m.new_mode) for m in modes] == [("plan", "autopilot")]
    assert session.plan.read() == PLAN
    assert (store.session_dir(session.id) / "plan.md").read_text("utf-8") == PLAN
    await session.close()

    # Every line written parses with the official parser, the new types as themselves.
    lines = store.events_path(session.id).read_text("utf-8").splitlines()
    for line in lines:
        wire = json.loads(line)
        parsed = session_events.session_event_from_dict(wire)
        assert parsed.type.value == wire["type"]
    types = [json.loads(line)["type"] for line in lines]
    for etype in ("session.plan_changed", "exit_plan_mode.requested", "exit_plan_mode.completed"):
        assert etype in types

    # Replay folds the plan and the user's answer.
    transcript = Transcript()
    from agent.log.store import read_events

    for event in read_events(store.events_path(session.id)).events:
        transcript.apply(event)
    assert transcript.plan is not None
    assert transcript.plan.plan == PLAN and transcript.plan.status == "approved"
    assert transcript.plan.selected_action == "autopilot"


async def test_keep_planning_sends_the_feedback_to_the_model(tmp_path: Path) -> None:
    revised = {
        "name": "exit_plan_mode",
        "arguments": {"summary": "v2", "plan": PLAN + "\n3. Docs."},
    }
    model = scripted(
        [
            {"text": "Plan.", "tool_calls": [{**EXIT, "id": "first"}]},
            {"text": "Revised.", "tool_calls": [{**revised, "id": "second"}]},
            {"text": "Implementing."},
        ]
    )
    session, rec = await new_session(model, tmp_path, mode="plan")
    session.plan.reviewer = FakeReviewer(
        PlanDecision(None, "also update the docs"), PlanDecision("interactive")
    )
    await session.send_and_wait("add greet")
    results = _results(rec.events)
    assert "also update the docs" in results["first"].result.content  # type: ignore[union-attr]
    # What the model read next: the feedback, as the tool's result.
    tool_messages = [m for m in model.seen_messages[1] if m.get("role") == "tool"]
    assert "also update the docs" in str(tool_messages[-1]["content"])
    completed = [e.data for e in rec.events if isinstance(e.data, ExitPlanModeCompletedData)]
    assert [(c.approved, c.feedback) for c in completed] == [
        (False, "also update the docs"),
        (True, None),
    ]
    assert session.mode == "interactive"
    assert session.plan.read() == PLAN + "\n3. Docs."
    changed = [e.data.operation for e in rec.events if isinstance(e.data, SessionPlanChangedData)]
    assert changed == ["create", "update"]
    await session.close()


async def test_nobody_to_ask_ends_plan_mode_without_implementing(tmp_path: Path) -> None:
    model = scripted([{"text": "Plan.", "tool_calls": [EXIT]}, {"text": "The plan: greet()."}])
    session, rec = await new_session(model, tmp_path, mode="plan")
    outcome = await session.send_and_wait("add greet")  # no reviewer: headless
    completed = next(e.data for e in rec.events if isinstance(e.data, ExitPlanModeCompletedData))
    assert completed.approved and completed.selected_action == "exit_only"
    assert session.mode == "interactive"
    result = next(iter(_results(rec.events).values()))
    assert "do not change anything" in result.result.content  # type: ignore[union-attr]
    assert outcome.final_text == "The plan: greet()."
    await session.close()


async def test_abort_while_asked_settles_the_request(tmp_path: Path) -> None:
    import asyncio

    model = scripted([{"text": "Plan.", "tool_calls": [EXIT]}])
    session, rec = await new_session(model, tmp_path, mode="plan")
    asked = asyncio.Event()

    async def never(review: PlanReview) -> PlanDecision:
        asked.set()
        await asyncio.Future()
        raise AssertionError("unreachable")

    session.plan.reviewer = never
    future = session.send("add greet")
    await asked.wait()
    assert session.plan.pending is not None
    session.abort()
    outcome = await future
    assert outcome.aborted
    completed = [e.data for e in rec.events if isinstance(e.data, ExitPlanModeCompletedData)]
    assert len(completed) == 1 and completed[0].approved is None
    assert session.plan.pending is None and session.mode == "plan"
    assert rec.types()[-1] == "session.idle"
    await session.close()


async def test_resume_closes_a_question_a_crash_left_open(tmp_path: Path) -> None:
    """The last run died while the plan waited for the user: resume settles it."""
    import asyncio
    import shutil

    from agent.session.session import Session

    store = SessionStore(tmp_path / "home")
    model = scripted([{"text": "Plan.", "tool_calls": [EXIT]}])
    session, rec = await new_session(model, tmp_path, mode="plan", store=store)
    asked = asyncio.Event()

    async def never(review: PlanReview) -> PlanDecision:
        asked.set()
        await asyncio.Future()
        raise AssertionError("unreachable")

    session.plan.reviewer = never
    session.send("add greet")
    await asked.wait()
    await asyncio.wait_for(_written(rec, "exit_plan_mode.requested"), 10)
    # What a crash at this moment leaves on disk: the request, no answer.
    crashed = "0badc0de-0000-4000-8000-000000000001"
    shutil.copytree(store.session_dir(session.id), store.session_dir(crashed))
    await session.close()

    resumed = await Session.resume(store=store, session_id=crashed, model=scripted([]))
    after = [e.data for e in resumed.backlog if isinstance(e.data, ExitPlanModeCompletedData)]
    assert len(after) == 1 and after[0].approved is None
    assert not resumed.plan.unanswered
    transcript = Transcript()
    for event in resumed.backlog:
        transcript.apply(event)
    assert transcript.plan is not None and transcript.plan.status == "unanswered"
    assert resumed.plan.read() == PLAN
    await resumed.close()


async def _written(rec: Any, etype: str) -> None:
    import asyncio

    while not rec.of(etype):
        await asyncio.sleep(0.01)
