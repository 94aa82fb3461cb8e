"""Plan mode: the plan written, and the proposal to leave plan mode with it."""

from __future__ import annotations

from typing import Literal

from agent.events.base import EventData

# What the user may do with a proposed plan (the SDK's ExitPlanModeAction).
PlanAction = Literal["exit_only", "interactive", "autopilot", "autopilot_fleet"]


class SessionPlanChangedData(EventData):
    """The session's plan was written (its text is in the plan file, see session/plan_mode.py)."""

    TYPE = "session.plan_changed"
    operation: Literal["create", "update", "delete"]


class ExitPlanModeRequestedData(EventData):
    """The model proposes to leave plan mode with this plan; the user decides."""

    TYPE = "exit_plan_mode.requested"
    request_id: str
    summary: str
    plan_content: str
    actions: list[PlanAction]
    recommended_action: PlanAction
    model: str | None = None


class ExitPlanModeCompletedData(EventData):
    """The user's decision: approved with an action, or not (feedback: keep planning)."""

    TYPE = "exit_plan_mode.completed"
    request_id: str
    approved: bool | None = None
    selected_action: PlanAction | None = None
    feedback: str | None = None
    auto_approve_edits: bool | None = None
