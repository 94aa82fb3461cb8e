"""What the model means to do, in the transcript: the plan it proposes with
``exit_plan_mode`` (a :class:`~agent.transcript.blocks.PlanBlock`, approved or not), the plan
file's changes and its checklist of todos (one notice each).

Pure Python: no UI imports.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from agent.events import todos
from agent.events.schema import (
    Event,
    ExitPlanModeCompletedData,
    ExitPlanModeRequestedData,
    SessionPlanChangedData,
)
from agent.transcript.blocks import Change, NoticeBlock, PlanBlock

if TYPE_CHECKING:
    from agent.transcript.state import TranscriptState

_PLAN_NOTICE = {
    "create": "plan written",
    "update": "plan updated",
    "delete": "plan deleted",
}


def plan_changed(
    t: TranscriptState, d: SessionPlanChangedData, ts: datetime | None
) -> list[Change]:
    msg = _PLAN_NOTICE.get(d.operation, f"plan: {d.operation}")
    return [t._add(NoticeBlock(t._new_id(), "plan", msg, timestamp=ts))]


def plan_requested(
    t: TranscriptState, d: ExitPlanModeRequestedData, ts: datetime | None
) -> list[Change]:
    block = PlanBlock(t._new_id(), d.request_id, d.summary, d.plan_content, timestamp=ts)
    t._plans[d.request_id] = block
    t.plan = block
    return [t._add(block)]


def plan_completed(
    t: TranscriptState, event: Event, d: ExitPlanModeCompletedData, ts: datetime | None
) -> list[Change]:
    block = t._plans.pop(d.request_id, None)
    if block is None:
        return [t._raw(event.type, d, ts)]
    block.status = "unanswered" if d.approved is None else "approved" if d.approved else "rejected"
    block.selected_action = d.selected_action
    block.feedback = d.feedback
    return [Change("updated", block)]


def todos_changed(t: TranscriptState, ts: datetime | None) -> list[Change]:
    known = t.todos.changed()
    message = todos.summary(t.todos.items or []) if known else "todos changed"
    return [t._add(NoticeBlock(t._new_id(), "todos", message, timestamp=ts))]
