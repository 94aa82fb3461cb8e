"""MCP in the terminal app: the permission prompt names the server and the tool and
shows exactly the arguments; ``y`` runs the call on the server (FakeMcpServer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import widgets.arming as arming
from agent.extensions.mcp.config import load_config
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.mcp_harness import fake_server
from tests.support.permission_ui import SIZE, armed, prompt_shown
from tests.support.pilot import text_of, wait_for
from tests.support.scripting import FakeRecorder, scripted


async def test_the_prompt_shows_server_tool_and_arguments_and_y_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arming, "ARM_DELAY", 0.05)
    call = {"name": "fake-ok", "arguments": {"word": "über"}}
    model = scripted([{"text": "", "tool_calls": [call]}, {"text": "the server said ok"}])
    recorder = FakeRecorder()
    config = load_config({}, additional=[json.dumps({"mcpServers": {"fake": fake_server()}})])
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def opener() -> Session:
        session = await Session.create(model=model, cwd=workspace, store=None)
        session.subscribe(recorder)
        session.start_mcp(config)
        assert session.mcp is not None
        await session.mcp.settled()  # the call below must find the tool offered
        return session

    app = LoopdeckApp(opener, nudge_cap=5)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None, "the session to open")
        app.prompt.text = "ask the server"
        await pilot.press("enter")
        view = await prompt_shown(pilot, _Prompts(app))
        shown = text_of(view)
        assert "Call ok on the MCP server fake?" in shown
        assert '"word": "über"' in shown
        assert "a always allow fake(ok) this session" in shown
        await armed(pilot, view)
        await pilot.press("y")
        await wait_for(pilot, lambda: bool(recorder.of("session.idle")), "session.idle")
        done = recorder.of("tool.execution_complete")[0].data
        assert done.success and done.result.content == "ok: über"  # type: ignore[attr-defined]


class _Prompts:
    """What prompt_shown needs of the harness: the one prompt on screen."""

    def __init__(self, app: LoopdeckApp) -> None:
        self.app = app

    def prompt_view(self) -> Any:
        from widgets.permission_prompt import PermissionPromptView

        views = list(self.app.query(PermissionPromptView))
        return views[0] if views else None
