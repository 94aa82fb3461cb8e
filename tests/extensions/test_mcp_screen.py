"""``/mcp`` and the status bar's ``mcp 1/2`` in the terminal app, against real servers
(mcp-server-time from PyPI, server-everything from npm): a server's process killed
while idle shows in the status bar, the screen says why, ``r`` brings it back; ``d`` /
``e`` disable and enable it for the session; the typed ``/mcp`` commands do the same."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from agent.extensions.mcp.config import load_config
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.mcp_harness import EVERYTHING, TIME, needs_everything, needs_time, processes_with
from tests.support.pilot import text_of, wait_for
from tests.support.scripting import scripted
from widgets.mcp_screen import McpScreen

SIZE = (100, 30)
pytestmark = [needs_time, needs_everything]


@pytest.fixture
def marker() -> Iterator[str]:
    """In the time server's environment, to find (and kill) its process."""
    mark = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    yield mark
    for pid in processes_with(mark):  # nothing must outlive the test
        os.kill(pid, signal.SIGKILL)


def make_app(tmp_path: Path, marker: str) -> LoopdeckApp:
    servers = {
        "time": {"command": str(TIME), "tools": ["*"], "env": {"MARK": marker}},
        # server-everything lists more tools than the allow-list offers.
        "everything": {"command": str(EVERYTHING), "tools": ["echo", "get-sum"]},
    }
    config = load_config({}, additional=[json.dumps({"mcpServers": servers})])
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def opener() -> Session:
        session = await Session.create(model=scripted([]), cwd=workspace, store=None)
        session.start_mcp(config)
        return session

    return LoopdeckApp(opener)


def status_of(app: LoopdeckApp, name: str) -> str | None:
    server = app.timeline.transcript.mcp.servers.get(name)
    return server.status if server else None


async def both_connected(pilot: Pilot[int], app: LoopdeckApp) -> None:
    await wait_for(
        pilot,
        lambda: (
            status_of(app, "time") == "connected" and status_of(app, "everything") == "connected"
        ),
        "both servers to connect",
        timeout=60,
    )


def said(app: LoopdeckApp) -> str:
    return str(list(app.query(".command-output").results(Static))[-1].render())


async def command(pilot: Pilot[int], app: LoopdeckApp, text: str) -> None:
    app.prompt.text = text
    await pilot.press("enter")


async def test_a_killed_server_shows_in_the_status_bar_and_r_restarts_it_from_the_screen(
    tmp_path: Path, marker: str
) -> None:
    app = make_app(tmp_path, marker)
    async with app.run_test(size=SIZE) as pilot:
        await both_connected(pilot, app)
        await pilot.pause()
        assert "mcp" not in text_of(app.status)  # all fine: nothing extra

        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
        await wait_for(pilot, lambda: "mcp 1/2" in text_of(app.status), "the bar's mcp 1/2")
        assert status_of(app, "time") == "failed"

        await command(pilot, app, "/mcp")
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen), "the /mcp screen")
        screen = app.screen
        assert isinstance(screen, McpScreen)
        await pilot.pause()
        shown = text_of(screen)
        assert "MCP servers · 1 failed, 1 connected" in shown
        assert "time" in shown and "everything" in shown and "2 of " in shown
        assert screen.selected == "time"  # local servers in order: time first
        assert "last error: the server exited" in shown
        assert "not running: r restarts it" in shown

        await pilot.press("down")
        await pilot.pause()
        shown = text_of(screen)
        assert screen.selected == "everything"
        assert "tools (2): echo, get-sum" in shown
        assert "left out by its tools list" in shown

        await pilot.press("up", "r")
        await wait_for(
            pilot, lambda: status_of(app, "time") == "connected", "time again", timeout=60
        )
        await wait_for(pilot, lambda: "connected" in text_of(screen.query_one("#mcp-note")), "note")
        assert "MCP server time connected: 2 tools." in text_of(screen)
        await wait_for(pilot, lambda: "mcp" not in text_of(app.status), "the bar clear again")
        assert processes_with(marker), "a new time server runs"

        await pilot.press("d")
        await wait_for(pilot, lambda: status_of(app, "time") == "disabled", "time disabled")
        await wait_for(pilot, lambda: "○ disabled" in text_of(screen), "the screen redrawn")
        assert not processes_with(marker)
        assert "mcp" not in text_of(app.status)  # disabled is a choice, not a server down
        await pilot.press("e")
        await wait_for(
            pilot, lambda: status_of(app, "time") == "connected", "time enabled", timeout=60
        )

        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, McpScreen), "the screen closed")


async def test_the_typed_commands_list_restart_disable_enable_and_name_mistakes(
    tmp_path: Path, marker: str
) -> None:
    app = make_app(tmp_path, marker)
    async with app.run_test(size=SIZE) as pilot:
        await both_connected(pilot, app)

        await command(pilot, app, "/mcp list")
        await wait_for(pilot, lambda: "MCP servers" in said(app), "the listing")
        listing = said(app)
        assert "2 servers: 2 connected" in listing
        assert "● connected  time" in listing and "2 tools" in listing
        assert "everything" in listing and "stdio" in listing and "2 of " in listing

        await command(pilot, app, "/mcp disable time")
        await wait_for(pilot, lambda: "disabled for this session" in said(app), "disabled")
        assert status_of(app, "time") == "disabled" and not processes_with(marker)
        await command(pilot, app, "/mcp enable time")
        await wait_for(
            pilot, lambda: "MCP server time connected" in said(app), "enabled", timeout=60
        )
        await command(pilot, app, "/mcp restart everything")
        await wait_for(
            pilot, lambda: "everything connected: 2 of" in said(app), "restarted", timeout=60
        )

        await command(pilot, app, "/mcp restart nosuch")
        await wait_for(pilot, lambda: "nosuch" in said(app), "the mistake named")
        assert "no MCP server named 'nosuch' (configured: time, everything)" in said(app)
        await command(pilot, app, "/mcp frobnicate")
        await wait_for(pilot, lambda: "No /mcp frobnicate" in said(app), "usage")
        await command(pilot, app, "/mcp show everything")
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen), "the screen")
        assert app.screen.selected == "everything"  # type: ignore[attr-defined]
        await pilot.press("escape")
