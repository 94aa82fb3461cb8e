"""An SDK app's ``create_session(mcp_servers=…)`` through the unmodified
``github-copilot-sdk``, with loopdeck as its runtime: the server starts, its status
reaches the app, a call returns the literal value the app set in ``env``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("copilot")

from copilot import PermissionHandler
from copilot._jsonrpc import JsonRpcError
from copilot.generated.rpc import (
    MCPDisableRequest,
    MCPEnableRequest,
    MCPIsServerRunningRequest,
    MCPListToolsRequest,
    MCPOauthLoginRequest,
    MCPRestartServerRequest,
    MCPSerializableServerConfig,
    MCPSetEnvValueModeDetails,
    MCPSetEnvValueModeParams,
    MCPStartServerRequest,
    MCPStopServerRequest,
)

from tests.support.mcp_harness import TIME, needs_time
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


@needs_time
async def test_session_mcp_methods_list_stop_start_and_switch_servers(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = new_client(tmp_path / "home", workspace)
    await within(client.start())
    try:
        recorder = Recorder()
        session = await within(
            client.create_session(
                model=script(
                    tmp_path,
                    [
                        {"tool_calls": [{"name": "later-getenv", "arguments": {"name": "SEEN"}}]},
                        {"text": "done"},
                    ],
                ),
                on_permission_request=PermissionHandler.approve_all,
                on_event=recorder,
                mcp_servers={
                    "time": {"command": str(TIME), "tools": ["get_current_time"]},
                    "off": {**_fake(), "tools": ["*"]},
                },
                disabled_mcp_servers=["off"],
            )
        )
        await recorder.wait_for("session.mcp_servers_loaded")
        mcp = session.rpc.mcp
        listed = await within(mcp.list())
        assert [(s.name, s.status.value) for s in listed.servers] == [
            ("time", "connected"),
            ("off", "disabled"),
        ]
        configured = await within(mcp.list_configured())
        assert [(s.name, s.enabled, s.live.status.value) for s in configured.servers] == [
            ("time", True, "connected"),
            ("off", False, "disabled"),
        ]
        tools = await within(mcp.list_tools(MCPListToolsRequest(server_name="time")))
        assert {t.name for t in tools.tools} == {"get_current_time", "convert_time"}

        await within(mcp.stop_server(MCPStopServerRequest(server_name="time")))
        running = await within(mcp.is_server_running(MCPIsServerRunningRequest(server_name="time")))
        assert running.running is False
        with pytest.raises(JsonRpcError, match="time is stopped, not connected"):
            await within(mcp.list_tools(MCPListToolsRequest(server_name="time")))
        await within(mcp.restart_server(MCPRestartServerRequest(server_name="time")))
        running = await within(mcp.is_server_running(MCPIsServerRunningRequest(server_name="time")))
        assert running.running is True

        await within(mcp.enable(MCPEnableRequest(server_name="off")))
        await within(mcp.disable(MCPDisableRequest(server_name="time")))
        listed = await within(mcp.list())
        assert [(s.name, s.status.value) for s in listed.servers] == [
            ("time", "disabled"),
            ("off", "connected"),
        ]
        await within(mcp.reload())  # the disabled one stays so; the running one runs
        listed = await within(mcp.list())
        assert [s.status.value for s in listed.servers] == ["disabled", "connected"]

        # indirect: an env value names a variable of the runtime's own environment
        mode = await within(
            mcp.set_env_value_mode(
                MCPSetEnvValueModeParams(mode=MCPSetEnvValueModeDetails.INDIRECT)
            )
        )
        assert mode.mode == MCPSetEnvValueModeDetails.INDIRECT
        config = MCPSerializableServerConfig.from_dict({**_fake(), "env": {"SEEN": "HOME"}})
        await within(mcp.start_server(MCPStartServerRequest(server_name="later", config=config)))
        states = [
            (e.data.server_name, e.data.status.value)
            for e in recorder.of("session.mcp_server_status_changed")
        ]
        assert states[-2:] == [("later", "pending"), ("later", "connected")]
        tools = await within(mcp.list_tools(MCPListToolsRequest(server_name="later")))
        assert "getenv" in {t.name for t in tools.tools}
        await within(session.send_and_wait("what is SEEN?"))
        done = recorder.of("tool.execution_complete")[-1].data
        assert done.result.content == os.environ["HOME"]  # the name, resolved

        with pytest.raises(JsonRpcError, match="does not support MCP OAuth") as refused:
            await within(mcp.oauth.login(MCPOauthLoginRequest(server_name="time")))
        assert refused.value.code == -32601
        assert (await within(mcp.remove_git_hub())).removed is False
        with pytest.raises(JsonRpcError, match="no MCP server named 'nope'"):
            await within(mcp.stop_server(MCPStopServerRequest(server_name="nope")))
    finally:
        await within(client.stop())


def _fake() -> dict[str, Any]:
    """FakeMcpServer's entry on the wire (``cwd``, as MCPSerializableServerConfig has it)."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.support.fake_mcp_server"],
        "cwd": str(ROOT),
        "tools": ["*"],
    }
