"""The autopilot permission level in the app, for Pilot tests: a :class:`Harness` over a
scripted session that edits greet.py then runs a command, and helpers that wait for the
session to open and for the level dialog to take keys or close."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from agent.events.schema import ElicitationCompletedData, ElicitationRequestedData, Mode
from agent.log.store import SessionStore
from agent.permissions.rules import PermissionPolicy
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.permission_ui import EDIT, bash
from tests.support.pilot import wait_for
from tests.support.scripting import FakeRecorder, scripted
from widgets.permission_level import PermissionLevelScreen

DONE = {"name": "task_complete", "arguments": {"summary": "Fixed and built."}}
EDIT_AND_BUILD = [
    {"text": "Fixing, then building.", "tool_calls": [EDIT, bash("touch built.txt")]},
    {"text": "", "tool_calls": [DONE]},
]


class Harness:
    """The app over a scripted session, recording the session's events."""

    def __init__(
        self,
        cwd: Path,
        *,
        turns: list[dict[str, Any]] | None = None,
        mode: Mode = "interactive",
        policy: PermissionPolicy | None = None,
        initial_prompt: str | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.model = scripted(turns if turns is not None else EDIT_AND_BUILD)
        self.recorder = FakeRecorder()

        async def opener() -> Session:
            session = await Session.create(
                model=self.model, cwd=cwd, mode=mode, store=store, policy=policy
            )
            session.subscribe(self.recorder)
            return session

        self.app = LoopdeckApp(opener, initial_prompt=initial_prompt, nudge_cap=5)

    @property
    def session(self) -> Session:
        assert self.app.session is not None, "the session has not opened"
        return self.app.session

    def results(self) -> list[str]:
        """Each permission.completed's result kind, in order."""
        return [str(e.data.result["kind"]) for e in self.recorder.of("permission.completed")]  # type: ignore[attr-defined]

    def questions(self) -> list[ElicitationRequestedData]:
        out = [e.data for e in self.recorder.of("elicitation.requested")]
        assert all(isinstance(d, ElicitationRequestedData) for d in out)
        return out  # type: ignore[return-value]

    def answers(self) -> list[ElicitationCompletedData]:
        out = [e.data for e in self.recorder.of("elicitation.completed")]
        assert all(isinstance(d, ElicitationCompletedData) for d in out)
        return out  # type: ignore[return-value]

    def dialog(self) -> PermissionLevelScreen | None:
        screen = self.app.screen
        return screen if isinstance(screen, PermissionLevelScreen) else None


async def opened(pilot: Pilot[Any], h: Any) -> None:
    """Wait for the session to open (``h`` is any harness with an ``app``)."""
    await wait_for(pilot, lambda: h.app.session is not None, "the session to open")


async def dialog_armed(pilot: Pilot[Any], h: Harness) -> PermissionLevelScreen:
    await wait_for(
        pilot, lambda: (d := h.dialog()) is not None and d.arming.armed, "the level dialog"
    )
    dialog = h.dialog()
    assert dialog is not None
    return dialog


async def dialog_gone(pilot: Pilot[Any], h: Harness) -> None:
    await wait_for(pilot, lambda: h.dialog() is None, "the dialog to close")
    await pilot.pause()
