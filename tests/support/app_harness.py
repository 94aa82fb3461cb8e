"""The terminal app over a scripted session, for Pilot tests: :class:`Harness` builds
``LoopdeckApp`` around a session with a scripted model and records its events; helpers
wait for the session to open or go idle, send a prompt, answer the autopilot level."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

import widgets.timeline as timeline_module
from agent.events.schema import Mode
from agent.session.session import Session
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agent.tools.registry import ToolRegistry, default_tools
from app.app import LoopdeckApp
from tests.support.pilot import wait_for
from tests.support.scripting import FakeRecorder, scripted
from tests.support.snapshot_support import _animating
from widgets.permission_level import PermissionLevelScreen

SIZE = (100, 36)


class FakeGateTool(Tool):
    """A tool that runs until the test opens its gate: holds a send busy on demand."""

    name = "gate"
    description = "waits for the test"
    Args = ToolArgs

    def __init__(self) -> None:
        self.opened = asyncio.Event()

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        await self.opened.wait()
        return ToolResult(content="gate opened")

    def registry(self, mode: Mode) -> ToolRegistry:
        registry = default_tools(autopilot=mode == "autopilot")
        registry.register(self)
        return registry


class Harness:
    """A LoopdeckApp over a scripted session, with a recorder of the session's events."""

    def __init__(
        self,
        turns: list[dict[str, Any]],
        cwd: Path,
        *,
        mode: Mode = "interactive",
        registry_factory: Callable[[Mode], ToolRegistry] | None = None,
        **app_kwargs: Any,
    ) -> None:
        self.model = scripted(turns)
        self.recorder = FakeRecorder()

        async def opener() -> Session:
            session = await Session.create(
                model=self.model,
                cwd=cwd,
                mode=mode,
                store=None,
                registry_factory=registry_factory,
            )
            session.subscribe(self.recorder)
            return session

        self.app = LoopdeckApp(opener, **app_kwargs)

    @property
    def session(self) -> Session:
        assert self.app.session is not None, "the session has not opened"
        return self.app.session

    def idles(self) -> int:
        return len(self.recorder.of("session.idle"))


async def settled(pilot: Pilot[Any]) -> None:
    """Wait until no turn streams, flushes or renders any more (its last render done)."""
    await wait_for(pilot, lambda: not _animating(pilot.app), "the final render")  # type: ignore[arg-type]


async def started(pilot: Pilot[Any], h: Harness) -> None:
    await wait_for(pilot, lambda: h.app.session is not None, "the session to open")


async def keep_my_rules(pilot: Pilot[Any], h: Harness) -> None:
    """Answer the permission level asked before autopilot with 3, keep my rules."""
    await wait_for(
        pilot,
        lambda: isinstance(h.app.screen, PermissionLevelScreen) and h.app.screen.arming.armed,
        "the permission level dialog",
    )
    await pilot.press("3")
    await wait_for(pilot, lambda: not isinstance(h.app.screen, PermissionLevelScreen), "close")
    await pilot.pause()


async def wait_idle(pilot: Pilot[Any], h: Harness, idles: int = 1) -> None:
    """Wait for the ``idles``-th session.idle, then for the app to settle."""
    await wait_for(
        pilot,
        lambda: h.idles() >= idles and not h.session.busy and not h.app.status.busy,
        f"session.idle #{idles}",
    )
    await pilot.pause()


async def send(pilot: Pilot[Any], h: Any, text: str) -> None:
    """Put ``text`` in the prompt and press Enter (``h`` is any harness with an ``app``)."""
    h.app.prompt.text = text
    await pilot.press("enter")


def make_workspace(tmp_path: Path) -> Path:
    """A small project (src/, tests/, README.md) for the agent to read and edit."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text(
        "".join(f"def handler_{i}():\n    return {i}\n\n" for i in range(6)), encoding="utf-8"
    )
    (ws / "src" / "util.py").write_text("def helper():\n    pass\n", encoding="utf-8")
    (ws / "src" / "cli.py").write_text("import sys\n", encoding="utf-8")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_app.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    (ws / "README.md").write_text("# demo\n", encoding="utf-8")
    return ws


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture(autouse=True)
def every_turn_live(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every turn's live widgets (cards, headers) so a test can read them after the
    session ends; in the app only the running turn stays live. History (TurnDigest) has
    its own tests in tests/widgets/test_turn_digest.py. Autouse where imported."""
    monkeypatch.setattr(timeline_module, "LIVE_TURNS", 1000)
