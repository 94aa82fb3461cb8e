"""Plan mode for SDK apps: the ``session.plan.*`` methods and the exit-plan-mode question.

An app that registered ``on_exit_plan_mode_request`` (``requestExitPlanMode`` on
create/resume) is asked ``exitPlanMode.request`` when the model proposes its plan,
and its answer (``approved``, ``selectedAction``, ``feedback``) decides. Without a
handler, or when the app cannot answer, the answer is the unattended one of
:mod:`agent.session.plan_mode` (``exit_only``): nobody approved an implementation.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from agent.session.session import Session
from agent.transcript.plan_review import UNATTENDED, PlanDecision, PlanReview, PlanReviewer
from app.server.rpc import INVALID_PARAMS, Connection, ConnectionClosed, RpcError

log = logging.getLogger(__name__)


class PlanAsker(Protocol):
    """Who the plan question goes to: a hosted session's id, owner and opt-in."""

    @property
    def id(self) -> str: ...

    @property
    def owner(self) -> Connection | None: ...

    @property
    def answers_plans(self) -> bool: ...


def plan_read(session: Session) -> dict[str, Any]:
    try:
        content = session.plan.read()
    except OSError as exc:
        raise RpcError(INVALID_PARAMS, f"cannot read the plan: {exc}") from exc
    path = session.plan.path
    return {"exists": content is not None, "content": content, "path": str(path) if path else None}


def plan_update(session: Session, params: dict[str, Any]) -> dict[str, Any]:
    content = params.get("content")
    if not isinstance(content, str):
        raise RpcError(INVALID_PARAMS, "content must be a string")
    try:
        session.plan.update(content)
    except OSError as exc:
        raise RpcError(INVALID_PARAMS, f"cannot write the plan: {exc}") from exc
    return {}


def plan_delete(session: Session) -> dict[str, Any]:
    session.plan.delete()
    return {}


def app_plan_reviewer(hosted: PlanAsker) -> PlanReviewer:
    """Ask the attached app, if it said it answers (``requestExitPlanMode``)."""

    async def review(plan: PlanReview) -> PlanDecision:
        conn = hosted.owner
        if not hosted.answers_plans or conn is None or conn.closed:
            return UNATTENDED
        params = {
            "sessionId": hosted.id,
            "summary": plan.summary,
            "planContent": plan.plan,
            "actions": list(plan.actions),
            "recommendedAction": plan.recommended,
        }
        try:
            answer = await conn.request("exitPlanMode.request", params)
        except (RpcError, ConnectionClosed) as exc:
            log.warning("exitPlanMode.request failed: %s", exc)
            return UNATTENDED
        return decision_of(answer, plan)

    return review


def decision_of(answer: Any, plan: PlanReview) -> PlanDecision:
    """The app's ``{approved, selectedAction?, feedback?}`` as a decision."""
    if not isinstance(answer, dict):
        return UNATTENDED
    feedback = answer.get("feedback") if isinstance(answer.get("feedback"), str) else None
    if not answer.get("approved"):
        return PlanDecision(None, feedback)
    chosen = answer.get("selectedAction")
    action = next((a for a in plan.actions if a == chosen), plan.recommended)
    return PlanDecision(action, feedback)
