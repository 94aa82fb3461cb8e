"""Plan mode through the unmodified Copilot SDK: mode set, the exit-plan-mode
handler, and the ``session.plan.read/update/delete`` methods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

copilot = pytest.importorskip("copilot")

from copilot.generated.rpc import ModeSetRequest, PlanUpdateRequest  # noqa: E402
from copilot.generated.session_events import (  # noqa: E402
    ExitPlanModeCompletedData,
    ExitPlanModeRequestedData,
    SessionMode,
    SessionPlanChangedData,
)

from tests.support.sdk_runtime import Recorder, Runtime, new_session, shared, within  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["shared"]  # the module's runtime, started once

PLAN = "1. Read README.md.\n2. Write the answer down."
PROPOSE = {"name": "exit_plan_mode", "arguments": {"summary": "Answer it", "plan": PLAN}}
DONE = {"name": "task_complete", "arguments": {"summary": "Answered: 42."}}


async def test_mode_plan_the_handler_approves_into_autopilot(shared: Runtime) -> None:
    asked: list[dict[str, Any]] = []

    def on_plan(request: Any, _context: dict[str, str]) -> dict[str, Any]:
        asked.append(dict(request))
        return {"approved": True, "selectedAction": "autopilot", "feedback": "go ahead"}

    session = await new_session(
        shared,
        [
            {
                "text": "Reading.",
                "tool_calls": [{"name": "view", "arguments": {"path": "README.md"}}],
            },
            {"text": "Plan ready.", "tool_calls": [PROPOSE]},
            {"text": "", "tool_calls": [DONE]},
        ],
        on_exit_plan_mode_request=on_plan,
    )
    rec = Recorder()
    session.on(rec)
    await within(session.rpc.mode.set(ModeSetRequest(mode=SessionMode.PLAN)))
    assert await within(session.rpc.mode.get()) == SessionMode.PLAN
    await within(session.send_and_wait("what is the answer?", timeout=30))

    assert asked == [
        {
            "summary": "Answer it",
            "planContent": PLAN,
            "actions": ["interactive", "autopilot", "exit_only"],
            "recommendedAction": "interactive",
        }
    ]
    requested = rec.of("exit_plan_mode.requested")[0].data
    assert isinstance(requested, ExitPlanModeRequestedData) and requested.plan_content == PLAN
    completed = rec.of("exit_plan_mode.completed")[0].data
    assert isinstance(completed, ExitPlanModeCompletedData)
    assert completed.approved and completed.selected_action is not None
    assert completed.selected_action.value == "autopilot" and completed.feedback == "go ahead"
    assert await within(session.rpc.mode.get()) == SessionMode.AUTOPILOT
    assert rec.of("session.task_complete")

    # The plan RPCs: read, update (recorded), delete.
    read = await within(session.rpc.plan.read())
    assert read.exists and read.content == PLAN
    assert read.path is not None and Path(read.path).name == "plan.md"
    await within(session.rpc.plan.update(PlanUpdateRequest(content="1. Done.")))
    assert (await within(session.rpc.plan.read())).content == "1. Done."
    await within(session.rpc.plan.delete())
    gone = await within(session.rpc.plan.read())
    assert not gone.exists and gone.content is None

    async def operations() -> list[str]:
        while len(ops := [e.data for e in rec.of("session.plan_changed")]) < 3:
            await __import__("asyncio").sleep(0.01)
        return [d.operation.value for d in ops if isinstance(d, SessionPlanChangedData)]

    assert await within(operations()) == ["create", "update", "delete"]


async def test_keep_planning_from_the_handler_sends_its_feedback(shared: Runtime) -> None:
    answers = [
        {"approved": False, "feedback": "mention the README"},
        {"approved": True, "selectedAction": "interactive"},
    ]

    def on_plan(request: Any, _context: dict[str, str]) -> dict[str, Any]:
        return answers.pop(0)

    revised = {"name": "exit_plan_mode", "arguments": {"summary": "v2", "plan": PLAN + " (README)"}}
    session = await new_session(
        shared,
        [
            {"text": "Plan.", "tool_calls": [PROPOSE]},
            {"text": "Revised.", "tool_calls": [revised]},
            {"text": "Implementing."},
        ],
        on_exit_plan_mode_request=on_plan,
    )
    rec = Recorder()
    session.on(rec)
    # The agent mode can also come with the message itself.
    reply = await within(session.send_and_wait("plan it", agent_mode="plan", timeout=30))
    assert reply is not None and reply.data.content == "Implementing."
    done = [e.data for e in rec.of("exit_plan_mode.completed")]
    assert [(d.approved, d.feedback) for d in done] == [  # type: ignore[union-attr]
        (False, "mention the README"),
        (True, None),
    ]
    results = [e.data for e in rec.of("tool.execution_complete")]
    assert "mention the README" in results[0].result.content  # type: ignore[union-attr]
    assert await within(session.rpc.mode.get()) == SessionMode.INTERACTIVE


async def test_without_a_handler_the_plan_is_kept_and_nothing_implemented(
    shared: Runtime,
) -> None:
    session = await new_session(
        shared, [{"text": "Plan.", "tool_calls": [PROPOSE]}, {"text": "That is the plan."}]
    )
    rec = Recorder()
    session.on(rec)
    await within(session.send_and_wait("plan it", agent_mode="plan", timeout=30))
    [done] = [e.data for e in rec.of("exit_plan_mode.completed")]
    assert done.approved and done.selected_action.value == "exit_only"  # type: ignore[union-attr]
    assert await within(session.rpc.mode.get()) == SessionMode.INTERACTIVE
    assert (await within(session.rpc.plan.read())).content == PLAN
