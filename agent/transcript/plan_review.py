"""What the user is asked when the model proposes its plan, and what they answer.

Pure data, no tools and no I/O: the app and the timeline import it on the way to the
first frame. The flow itself is in :mod:`agent.session.plan_mode`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.events.schema import Mode, PlanAction

if TYPE_CHECKING:
    from agent.transcript.blocks import PlanBlock

# What the app offers, the recommended first.
ACTIONS: tuple[PlanAction, ...] = ("interactive", "autopilot", "exit_only")


@dataclass(frozen=True, slots=True)
class PlanReview:
    """A plan put to the user: answer it with a :class:`PlanDecision`."""

    request_id: str
    summary: str
    plan: str
    actions: tuple[PlanAction, ...] = ACTIONS
    recommended: PlanAction = "interactive"


@dataclass(frozen=True, slots=True)
class PlanDecision:
    """``action`` None: not approved, keep planning (with ``feedback`` for the model)."""

    action: PlanAction | None
    feedback: str | None = None


PlanReviewer = Callable[[PlanReview], Awaitable[PlanDecision]]
UNATTENDED = PlanDecision("exit_only")


_DECIDED = {
    "interactive": "approved — implementing in interactive mode",
    "autopilot": "approved — implementing in autopilot",
    "autopilot_fleet": "approved — implementing in autopilot",
    "exit_only": "approved — plan mode ended, nothing implemented",
}


def outcome_text(block: PlanBlock) -> str:
    """A proposed plan's state in words, for the timeline and exports."""
    match block.status:
        case "pending":
            text = "◆ awaiting your approval"
        case "approved":
            text = "✔ " + _DECIDED.get(block.selected_action or "interactive", "approved")
        case "rejected":
            text = "↺ not approved — keep planning"
        case _:
            text = "■ unanswered (the turn was stopped)"
    return text


def mode_after(action: PlanAction) -> Mode:
    return "autopilot" if action in ("autopilot", "autopilot_fleet") else "interactive"
