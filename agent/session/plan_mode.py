"""Plan mode: the session's plan, what may run while planning, and leaving plan mode.

In plan mode the model may only read. The tool layer enforces it, not the prompt
alone: :func:`plan_registry` offers the read tools and ``exit_plan_mode`` only, and
:meth:`PlanMode.refusal` turns any other call (a write, a shell command, an app's
tool) into a failed result the model reads.

The plan is kept on the session: ``plan.md`` in its folder (in memory for a session
without a store), each write recorded as ``session.plan_changed``. The model proposes
leaving plan mode with ``exit_plan_mode`` (its plan and a summary): the plan is saved,
``exit_plan_mode.requested`` asks the user, and ``exit_plan_mode.completed`` records the
answer — approved (the session goes on in interactive or autopilot mode) or not (keep
planning; the feedback goes to the model).

Nobody to ask (``-p``, an SDK app without an exit-plan-mode handler: ``reviewer`` is
None): the answer is automatic, :data:`UNATTENDED` — ``exit_only``, the plan is kept,
plan mode ends and the model is told not to implement it, so a headless planning run
ends with its plan and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agent.events.schema import (
    Event,
    EventData,
    ExitPlanModeCompletedData,
    ExitPlanModeRequestedData,
    Mode,
    SessionPlanChangedData,
)
from agent.tools.base import ToolResult
from agent.transcript.plan_review import (
    UNATTENDED,
    PlanDecision,
    PlanReview,
    PlanReviewer,
    mode_after,
)

if TYPE_CHECKING:
    from agent.log.store import SessionStore
    from agent.models.base import ModelClient
    from agent.tools.base import Tool
    from agent.tools.registry import ToolRegistry

PLAN_FILE = "plan.md"
EXIT_TOOL = "exit_plan_mode"


def read_only(full: ToolRegistry) -> list[Tool]:
    """The tools of ``full`` that only read (plan mode's, with exit_plan_mode)."""
    tools = (full.get(name) for name in full.names())
    return [t for t in tools if t is not None and t.kind == "read" and t.name != EXIT_TOOL]


def plan_registry(full: ToolRegistry, exit_tool: Tool) -> ToolRegistry:
    """The tools offered in plan mode: the read-only ones of ``full``, and ``exit_tool``."""
    from agent.tools.registry import ToolRegistry

    return ToolRegistry([*read_only(full), exit_tool])


class PlanHost(Protocol):
    id: str
    store: SessionStore | None
    model: ModelClient

    @property
    def mode(self) -> Mode: ...

    def emit(self, data: EventData) -> Event: ...

    def set_mode(self, mode: Mode) -> None: ...

    async def persist(self) -> None: ...


class PlanMode:
    def __init__(self, host: PlanHost) -> None:
        self.host = host
        # Set by a UI (or an SDK app) that can ask the user; None: UNATTENDED.
        self.reviewer: PlanReviewer | None = None
        self.pending: PlanReview | None = None  # asked now, not yet answered
        self.unanswered: set[str] = set()  # request ids in the log without an answer
        self._text: str | None = None  # the plan of a session without a folder

    def fold(self, event: Event) -> None:
        match event.data:
            case ExitPlanModeRequestedData(request_id=rid):
                self.unanswered.add(rid)
            case ExitPlanModeCompletedData(request_id=rid):
                self.unanswered.discard(rid)
            case _:
                pass

    def settle_unanswered(self) -> None:
        """On resume: a question the last run left open is closed, unanswered."""
        for request_id in sorted(self.unanswered):
            self.host.emit(ExitPlanModeCompletedData(request_id=request_id))

    # --- the plan ------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        store = self.host.store
        return store.session_dir(self.host.id) / PLAN_FILE if store is not None else None

    def read(self) -> str | None:
        """The plan's text, or None when there is none."""
        path = self.path
        if path is None:
            return self._text
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def update(self, content: str) -> None:
        """Replace the plan (``session.plan_changed``). Raises OSError if unwritable."""
        operation = "create" if self.read() is None else "update"
        path = self.path
        if path is None:
            self._text = content
        else:
            _write_private(path, content)
        self.host.emit(SessionPlanChangedData(operation=operation))

    def delete(self) -> bool:
        """Remove the plan; False when there was none."""
        if self.read() is None:
            return False
        path = self.path
        if path is None:
            self._text = None
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.host.emit(SessionPlanChangedData(operation="delete"))
        return True

    # --- leaving plan mode -----------------------------------------------------------

    def refusal(self, tool_name: str) -> ToolResult:
        """The result of a call plan mode does not allow."""
        return ToolResult.failure(
            f"Plan mode is read-only: {tool_name} cannot run while planning (only view, "
            "grep and glob can). Finish the plan and call exit_plan_mode; once the user "
            "approves it, you can make changes."
        )

    async def propose(self, summary: str, plan: str) -> ToolResult:
        """Keep ``plan``, ask the user, and apply the answer. The model reads the result."""
        plan = plan.strip() or (self.read() or "").strip()
        if not plan:
            return ToolResult.failure(
                "exit_plan_mode needs the plan: pass it as `plan` (Markdown: the steps, the "
                "files each touches, how to verify)."
            )
        if plan != (self.read() or "").strip():
            try:
                self.update(plan)
            except OSError as exc:
                return ToolResult.failure(f"could not save the plan: {exc.strerror or exc}")
        review = PlanReview(request_id=str(uuid.uuid4()), summary=summary.strip(), plan=plan)
        self.host.emit(
            ExitPlanModeRequestedData(
                request_id=review.request_id,
                summary=review.summary,
                plan_content=plan,
                actions=list(review.actions),
                recommended_action=review.recommended,
                model=self.host.model.name,
            )
        )
        self.pending = review
        try:
            if self.reviewer is not None:
                # On disk and drawn (the plan above its question) before a human is asked.
                await self.host.persist()
            decision = await self.reviewer(review) if self.reviewer is not None else UNATTENDED
        except asyncio.CancelledError:
            # Aborted while the user was deciding: the request is settled, unanswered.
            self.host.emit(ExitPlanModeCompletedData(request_id=review.request_id))
            raise
        finally:
            self.pending = None
        return self._apply(review, decision)

    def _apply(self, review: PlanReview, decision: PlanDecision) -> ToolResult:
        feedback = (decision.feedback or "").strip() or None
        if decision.action is None:
            self.host.emit(
                ExitPlanModeCompletedData(
                    request_id=review.request_id, approved=False, feedback=feedback
                )
            )
            said = f" Their feedback: {feedback}" if feedback else ""
            return ToolResult(
                content=f"The user did not approve the plan and wants to keep planning.{said}"
                " Stay in plan mode: investigate what they raised, revise the plan, and call "
                "exit_plan_mode again when it is ready."
            )
        action = decision.action
        self.host.emit(
            ExitPlanModeCompletedData(
                request_id=review.request_id,
                approved=True,
                selected_action=action,
                feedback=feedback,
            )
        )
        self.host.set_mode(mode_after(action))
        said = f" Their note: {feedback}" if feedback else ""
        if action == "exit_only":
            if decision is UNATTENDED:
                return ToolResult(
                    content="The plan is saved. Nobody can review it in this run, so plan "
                    "mode has ended without implementing it: do not change anything. End "
                    "your turn now with a short summary of the plan."
                )
            return ToolResult(
                content=f"The user approved the plan but does not want it implemented now.{said}"
                " Do not change anything; end your turn."
            )
        how = (
            "You are now in autopilot mode: implement the plan step by step, verify it, "
            "and call task_complete when everything is done."
            if mode_after(action) == "autopilot"
            else "You are now in interactive mode: implement the plan, step by step."
        )
        return ToolResult(content=f"The user approved the plan.{said} {how}")


def _write_private(path: Path, content: str) -> None:
    """Write ``content`` whole or not at all, readable by the user only."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(content)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
