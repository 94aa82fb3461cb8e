"""The app's permission prompt over a scripted session, for Pilot tests: the edit and the
command the scripts ask about, a :class:`Harness` that records every permission asked and
answered, and helpers that wait for the prompt, its arming and the session's idle."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

import widgets.arming as arming
from agent.events.schema import Mode, PermissionCompletedData, ToolExecutionCompleteData
from agent.permissions.rules import PermissionAnswer, PermissionPolicy, PermissionPrompt
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.pilot import wait_for
from tests.support.scripting import FakeRecorder, scripted
from widgets.permission_level import PermissionLevelScreen
from widgets.permission_prompt import PermissionPromptView

SIZE = (100, 36)

GREET = 'def greet(name):\n    return "Hello, " + name\n'
FIXED = 'def greet(name):\n    return "Hi, " + name\n'
EDIT = {
    "name": "edit",
    "arguments": {"path": "greet.py", "old_str": '"Hello, "', "new_str": '"Hi, "'},
}
OLD_LINE = '-    return "Hello, " + name'
NEW_LINE = '+    return "Hi, " + name'


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


class Harness:
    """The app over a scripted session; records events and every permission asked."""

    def __init__(
        self,
        turns: list[dict[str, Any]],
        cwd: Path,
        *,
        mode: Mode = "interactive",
        policy: PermissionPolicy | None = None,
    ) -> None:
        self.model = scripted(turns)
        self.recorder = FakeRecorder()
        self.asked: list[PermissionPrompt] = []

        async def opener() -> Session:
            session = await Session.create(
                model=self.model, cwd=cwd, mode=mode, store=None, policy=policy
            )
            session.subscribe(self.recorder)
            return session

        self.app = LoopdeckApp(opener, nudge_cap=5)

    @property
    def session(self) -> Session:
        assert self.app.session is not None, "the session has not opened"
        return self.app.session

    def count_asks(self) -> None:
        """Wrap the app's asker (set when the session opens) to record each prompt."""
        ask = self.session.permissions.asker
        assert ask is not None, "the app did not install its asker"

        async def counting(prompt: PermissionPrompt) -> PermissionAnswer:
            self.asked.append(prompt)
            return await ask(prompt)

        self.session.permissions.asker = counting

    def completed(self) -> list[dict[str, Any]]:
        out = []
        for event in self.recorder.of("permission.completed"):
            assert isinstance(event.data, PermissionCompletedData)
            out.append(event.data.result)
        return out

    def tool_results(self) -> list[ToolExecutionCompleteData]:
        out = []
        for event in self.recorder.of("tool.execution_complete"):
            assert isinstance(event.data, ToolExecutionCompleteData)
            out.append(event.data)
        return out

    def prompt_view(self) -> PermissionPromptView | None:
        views = list(self.app.query(PermissionPromptView))
        assert len(views) <= 1, "two permission prompts at once"
        return views[0] if views else None


async def start(pilot: Pilot[Any], h: Harness, text: str) -> None:
    """Wait for the session, count the prompts it asks, send ``text``."""
    await wait_for(pilot, lambda: h.app.session is not None, "the session to open")
    h.count_asks()
    h.app.prompt.text = text
    await pilot.press("enter")


async def keep_my_rules(pilot: Pilot[Any], h: Harness) -> None:
    """Answer the level asked before autopilot with 3, keep my rules."""
    await wait_for(
        pilot,
        lambda: isinstance(h.app.screen, PermissionLevelScreen) and h.app.screen.arming.armed,
        "the permission level dialog",
    )
    await pilot.press("3")
    await wait_for(pilot, lambda: h.app.session is not None, "the session to open")
    await wait_for(pilot, lambda: h.session.permission_level.level == "rules", "the level")


async def prompt_shown(pilot: Pilot[Any], h: Harness) -> PermissionPromptView:
    await wait_for(pilot, lambda: h.prompt_view() is not None, "the permission prompt")
    view = h.prompt_view()
    assert view is not None
    return view


async def armed(pilot: Pilot[Any], view: PermissionPromptView) -> None:
    """Wait until the prompt takes keys (ARM_DELAY after it appeared)."""
    await wait_for(
        pilot,
        lambda: time.monotonic() - view.arming.shown_at >= arming.ARM_DELAY + 0.02,
        "the prompt to arm",
    )


async def wait_idle(pilot: Pilot[Any], h: Any) -> None:
    """Wait for session.idle (``h`` is any harness with a recorder and a session)."""
    await wait_for(
        pilot,
        lambda: bool(h.recorder.of("session.idle")) and not h.session.busy,
        "session.idle",
    )
    await pilot.pause()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace holding greet.py, the file :data:`EDIT` changes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "greet.py").write_text(GREET, encoding="utf-8")
    return ws
