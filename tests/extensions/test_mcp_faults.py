"""Faults no well-behaved server shows: lines on stdout that are not JSON-RPC (dropped,
as Copilot drops them), a program that answers the handshake with text (a failed
status saying so), a call to a server that went down (it says the server is down);
and the SSE transport against server-everything."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from agent.extensions.mcp.config import McpConfig, load_config
from agent.session.session import Session
from tests.support.mcp_harness import (
    EVERYTHING,
    fake_server,
    free_port,
    needs_everything,
    processes_with,
    serving,
)
from tests.support.scripting import FakeRecorder, new_session, scripted


def config_of(servers: dict[str, object]) -> McpConfig:
    return load_config({}, additional=[json.dumps({"mcpServers": servers})])


async def started(
    tmp_path: Path, config: McpConfig, turns: list[dict[str, object]]
) -> tuple[Session, FakeRecorder]:
    session, recorder = await new_session(scripted(turns), tmp_path)
    session.permissions.policy.allow_all = True
    session.start_mcp(config)
    assert session.mcp is not None
    await session.mcp.settled()
    return session, recorder


def contents(recorder: FakeRecorder) -> list[str]:
    return [
        e.data.result.content  # type: ignore[attr-defined]
        for e in recorder.of("tool.execution_complete")
    ]


async def test_lines_that_are_not_json_rpc_are_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "noisy-babble"}]},
        {"tool_calls": [{"name": "noisy-ok", "arguments": {"word": "after"}}]},
        {"text": "done"},
    ]
    session, recorder = await started(tmp_path, config_of({"noisy": fake_server("--noisy")}), turns)
    assert session.mcp is not None
    assert session.mcp.info("noisy").status == "connected"  # the banner did not matter
    await session.send_and_wait("talk")
    assert contents(recorder) == ["said", "ok: after"]
    await session.close()
    assert "Failed to parse" not in capsys.readouterr().err  # the SDK's log kept quiet


async def test_a_garbage_handshake_is_a_failed_status_saying_why(tmp_path: Path) -> None:
    marker = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    config = config_of({"junk": fake_server("--garbage-handshake", env={marker: "1"})})
    session, recorder = await started(tmp_path, config, [{"text": "ok"}])
    assert session.mcp is not None
    info = session.mcp.info("junk")
    assert info.status == "failed"
    assert info.error is not None
    assert "not JSON-RPC on stdout" in info.error
    assert "Welcome to a program that is not an MCP server" in info.error
    assert "is it an MCP server speaking stdio?" in info.error
    warnings = [e.data.message for e in recorder.of("session.warning")]  # type: ignore[attr-defined]
    assert any("MCP server junk failed" in w for w in warnings)
    await session.send_and_wait("go on")  # the session goes on without it
    assert recorder.types()[-1] == "session.idle"
    await session.close()
    assert processes_with(marker) == []


async def test_a_call_to_a_server_that_went_down_says_so(tmp_path: Path) -> None:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "fake-crash"}]},
        {"tool_calls": [{"name": "fake-ok"}]},  # the model still has the old list
        {"text": "it is down"},
        {"tool_calls": [{"name": "fake-ok"}]},
        {"text": "stopped"},
    ]
    session, recorder = await started(tmp_path, config_of({"fake": fake_server()}), turns)
    assert session.mcp is not None
    await session.send_and_wait("crash it")
    crashed, after = recorder.of("tool.execution_complete")
    assert crashed.data.success is False  # type: ignore[attr-defined]
    message = after.data.result.content  # type: ignore[attr-defined]
    assert message.startswith("MCP server fake is down (failed: ")
    assert "unknown tool" not in message
    await session.mcp.restart("fake")
    await session.mcp.ready("fake")
    await session.mcp.stop("fake")
    await session.send_and_wait("again")
    last = recorder.of("tool.execution_complete")[-1].data.result.content  # type: ignore[attr-defined]
    assert last.startswith("MCP server fake is down (stopped)")
    await session.close()


@needs_everything
async def test_sse_transport_against_server_everything(tmp_path: Path) -> None:
    port = free_port()
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "old-echo", "arguments": {"message": "over sse"}}]},
        {"text": "done"},
    ]
    with serving([str(EVERYTHING), "sse"], port, {"PORT": str(port)}):
        url = f"http://127.0.0.1:{port}/sse"
        config = config_of({"old": {"type": "sse", "url": url, "tools": ["*"]}})
        session, recorder = await started(tmp_path, config, turns)
        assert session.mcp is not None
        info = session.mcp.info("old")
        assert (info.status, info.transport) == ("connected", "sse"), info.error
        await session.send_and_wait("echo")
        await session.close()
    assert contents(recorder) == ["Echo: over sse"]
