"""An SDK app's ``create_session(mcp_servers=…)`` through the unmodified
``github-copilot-sdk``, with loopdeck as its runtime: the server starts, its status
reaches the app, a call returns the literal value the app set in ``env``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("copilot")

from copilot import PermissionHandler

from tests.support.paths import ROOT
from tests.support.sdk_runtime import (
    Recorder,
    new_client,
    script,
    within,
)

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def test_create_session_with_mcp_servers_calls_the_server(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = new_client(tmp_path / "home", workspace)
    await within(client.start())
    try:
        turns: list[dict[str, Any]] = [
            {"tool_calls": [{"name": "env-echo-getenv", "arguments": {"name": "PLAIN_VALUE"}}]},
            {"text": "done"},
        ]
        recorder = Recorder()
        session = await within(
            client.create_session(
                model=script(tmp_path, turns),
                on_permission_request=PermissionHandler.approve_all,
                on_event=recorder,
                mcp_servers={
                    "env-echo": {
                        "command": sys.executable,
                        "args": ["-m", "tests.support.fake_mcp_server"],
                        "working_directory": str(ROOT),
                        "env": {"PLAIN_VALUE": "$literal ${as-sent}"},
                        "tools": ["*"],
                    },
                    "off": {"command": "/nonexistent", "tools": ["*"]},
                },
                disabled_mcp_servers=["off"],
            )
        )
        # The first prompt does not wait for the server: the app waits for its status.
        await recorder.wait_for("session.mcp_servers_loaded")
        statuses = [
            (e.data.server_name, e.data.status.value)
            for e in recorder.of("session.mcp_server_status_changed")
        ]
        assert statuses == [("env-echo", "pending"), ("env-echo", "connected")]
        await within(session.send_and_wait("what is PLAIN_VALUE?"))
        start = recorder.of("tool.execution_start")[0].data
        assert (start.mcp_server_name, start.mcp_tool_name) == ("env-echo", "getenv")
        done = recorder.of("tool.execution_complete")[0].data
        assert done.success is True
        assert done.result.content == "$literal ${as-sent}"  # direct: nothing expanded
        loaded = recorder.of("session.mcp_servers_loaded")[0].data
        assert [(s.name, s.status.value) for s in loaded.servers] == [("env-echo", "connected")]
    finally:
        await within(client.stop())
