"""SVG snapshots of ``/mcp`` with one server down, and the status bar's ``mcp 1/2``.

Real servers (mcp-server-time, server-everything; skipped when not installed): both
connect, the time server's process is killed, the bar says ``mcp 1/2`` and ``/mcp``
opens on the failed server with its last error. A third server, disabled by
``--disable-mcp-server``, is listed but not counted. Clock and ids pinned.

Update with ``pytest tests/widgets/test_snapshots_mcp.py --snapshot-update``.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.extensions.mcp.config import load_config
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.mcp_harness import EVERYTHING, TIME, needs_everything, needs_time, processes_with
from tests.support.scripting import scripted
from tests.support.snapshot_support import close_session_on_exit, wait_for
from tests.support.snapshot_support import pinned as pinned  # the fixture
from tests.support.snapshot_support import workspace as workspace  # the fixture
from widgets.mcp_screen import McpScreen

SnapCompare = Callable[..., bool]
WIDE = (120, 40)
NARROW = (80, 24)
pytestmark = [needs_time, needs_everything]


@pytest.fixture
def marker() -> Iterator[str]:
    mark = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    yield mark
    for pid in processes_with(mark):
        os.kill(pid, signal.SIGKILL)


def _app(workspace: Path, marker: str) -> LoopdeckApp:
    servers = {
        "time": {"command": str(TIME), "tools": ["*"], "env": {"MARK": marker}},
        "everything": {"command": str(EVERYTHING), "tools": ["echo", "get-sum"]},
        "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp", "tools": ["*"]},
    }
    config = load_config({}, additional=[json.dumps({"mcpServers": servers})], disabled=["docs"])

    async def opener() -> Session:
        session = await Session.create(model=scripted([]), cwd=workspace)
        session.start_mcp(config)
        return session

    app = LoopdeckApp(opener)
    close_session_on_exit(app)
    return app


def _status(app: LoopdeckApp, name: str) -> str | None:
    server = app.timeline.transcript.mcp.servers.get(name)
    return server.status if server else None


def one_server_down(marker: str) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, LoopdeckApp)
        app.prompt.cursor_blink = False
        await wait_for(
            pilot,
            lambda: (
                _status(app, "time") == "connected" and _status(app, "everything") == "connected"
            ),
            timeout=60,
        )
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
        await wait_for(pilot, lambda: _status(app, "time") == "failed", timeout=30)
        app.prompt.text = "/mcp"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen))
        await app.workers.wait_for_complete()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["120x40", "80x24"])
def test_mcp_screen_with_a_server_down(
    snap_compare: SnapCompare, workspace: Path, marker: str, size: tuple[int, int]
) -> None:
    app = _app(workspace, marker)
    assert snap_compare(app, terminal_size=size, run_before=one_server_down(marker))
