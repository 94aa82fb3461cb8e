"""Controlling a session's MCP servers while it runs (McpServers' control API): list,
tools, stop, start (with another configuration), restart, disable, enable, reload.
Against mcp-server-time (a real server) and FakeMcpServer; every change of status is
a ``session.mcp_server_status_changed``."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent.extensions.mcp.config import McpConfig, load_config, parse_server
from agent.extensions.mcp.servers import McpControlError, McpServers
from agent.session.session import Session
from tests.support.mcp_harness import TIME, fake_server, needs_time, processes_with
from tests.support.scripting import FakeRecorder, new_session, scripted


def config_of(servers: dict[str, Any], disabled: tuple[str, ...] = ()) -> McpConfig:
    return load_config({}, additional=[json.dumps({"mcpServers": servers})], disabled=disabled)


async def started(tmp_path: Path, config: McpConfig) -> tuple[Session, McpServers, FakeRecorder]:
    session, recorder = await new_session(scripted([{"text": "ok"}]), tmp_path)
    session.start_mcp(config)
    assert session.mcp is not None
    await session.mcp.settled()
    return session, session.mcp, recorder


def statuses(recorder: FakeRecorder, name: str) -> list[str]:
    return [
        e.data.status  # type: ignore[attr-defined]
        for e in recorder.of("session.mcp_server_status_changed")
        if e.data.server_name == name  # type: ignore[attr-defined]
    ]


def offered(servers: McpServers) -> list[str]:
    return sorted(t.name for t in servers.tools())


@needs_time
async def test_list_shows_status_transport_source_tools_and_the_disabled(tmp_path: Path) -> None:
    config = config_of(
        {
            "time": {"command": str(TIME), "tools": ["get_current_time"]},
            "off": fake_server(),
            "broken": fake_server("--exit-at-start"),
        },
        disabled=("off",),
    )
    session, servers, _ = await started(tmp_path, config)
    by_name = {s.name: s for s in servers.list_servers()}
    time = by_name["time"]
    assert (time.status, time.transport, time.source, time.enabled) == (
        "connected",
        "stdio",
        "user",
        True,
    )
    assert time.enabled_tools == ("get_current_time",)
    assert time.disabled_tools == ("convert_time",)  # listed, left out by "tools"
    assert time.tool_count == 1 and time.error is None
    off = by_name["off"]
    assert (off.status, off.enabled, off.tool_count) == ("disabled", False, 0)
    broken = by_name["broken"]
    assert broken.status == "failed" and broken.error is not None
    assert "refusing to start" in broken.error  # its stderr explains it
    tools = servers.list_tools("time")
    assert [(t.name, t.enabled, t.offered_as) for t in tools] == [
        ("get_current_time", True, "time-get_current_time"),
        ("convert_time", False, None),
    ]
    with pytest.raises(McpControlError, match="broken is failed, not connected"):
        servers.list_tools("broken")
    with pytest.raises(McpControlError, match="no MCP server named 'nope'"):
        servers.list_tools("nope")
    await session.close()


async def test_stop_restart_disable_enable_change_status_tools_and_process(
    tmp_path: Path,
) -> None:
    marker = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    config = config_of({"fake": fake_server(env={marker: "1"})})
    session, servers, recorder = await started(tmp_path, config)
    assert "fake-ok" in offered(servers) and servers.is_running("fake")
    assert len(processes_with(marker)) == 1

    await servers.stop("fake")
    assert servers.info("fake").status == "stopped" and not servers.is_running("fake")
    assert offered(servers) == [] and processes_with(marker) == []

    await servers.restart("fake")
    assert (await servers.ready("fake")).status == "connected"
    assert "fake-ok" in offered(servers) and len(processes_with(marker)) == 1

    await servers.disable("fake")
    info = servers.info("fake")
    assert (info.status, info.enabled) == ("disabled", False)
    assert offered(servers) == [] and processes_with(marker) == []
    with pytest.raises(McpControlError, match="disabled, not connected"):
        servers.list_tools("fake")

    await servers.enable("fake")
    assert (await servers.ready("fake")).status == "connected"
    assert servers.info("fake").enabled and "fake-ok" in offered(servers)
    assert statuses(recorder, "fake") == [
        "pending",
        "connected",
        "stopped",
        "pending",
        "connected",
        "disabled",
        "pending",
        "connected",
    ]
    await session.close()
    assert processes_with(marker) == []


async def test_a_restarted_server_answers_the_model_again(tmp_path: Path) -> None:
    model = scripted(
        [
            {"tool_calls": [{"name": "fake-ok", "arguments": {"word": "before"}}]},
            {"text": "one"},
            {"tool_calls": [{"name": "fake-ok", "arguments": {"word": "after"}}]},
            {"text": "two"},
        ]
    )
    session, recorder = await new_session(model, tmp_path, mode="autopilot")
    session.permissions.policy.allow_all = True
    session.start_mcp(config_of({"fake": fake_server()}))
    assert session.mcp is not None
    await session.mcp.settled()
    await session.send_and_wait("first")
    await session.mcp.restart("fake")
    await session.mcp.ready("fake")
    await session.send_and_wait("second")
    results = [e.data.result.content for e in recorder.of("tool.execution_complete")]  # type: ignore[attr-defined]
    assert results == ["ok: before", "ok: after"]
    await session.close()


@needs_time
async def test_start_with_a_config_adds_a_server_or_restarts_a_changed_one(
    tmp_path: Path,
) -> None:
    session, servers, recorder = await started(tmp_path, config_of({"fake": fake_server()}))
    await servers.start_server(
        "time", parse_server("time", {"command": str(TIME), "tools": ["*"]}, {})
    )
    assert (await servers.ready("time")).status == "connected"
    assert "time-get_current_time" in offered(servers)
    assert [s.name for s in servers.list_servers()] == ["fake", "time"]

    await servers.start_server("fake")  # already running, same config: nothing happens
    assert statuses(recorder, "fake") == ["pending", "connected"]
    narrower = parse_server("fake", {**fake_server(), "tools": ["ok"]}, {})
    await servers.start_server("fake", narrower)
    assert (await servers.ready("fake")).status == "connected"
    assert statuses(recorder, "fake") == ["pending", "connected", "stopped", "pending", "connected"]
    assert servers.info("fake").enabled_tools == ("ok",)
    with pytest.raises(McpControlError, match="for 'fake', not 'other'"):
        await servers.start_server("other", narrower)
    await session.close()


async def test_reload_stops_the_removed_starts_the_new_and_leaves_the_unchanged(
    tmp_path: Path,
) -> None:
    first = config_of({"keep": fake_server(), "drop": fake_server(), "change": fake_server()})
    session, servers, recorder = await started(tmp_path, first)
    await servers.disable("keep")  # disabled for the session: stays so after the reload
    loaded_before = len(recorder.of("session.mcp_servers_loaded"))
    second = config_of(
        {
            "keep": fake_server(),
            "change": {**fake_server(), "tools": ["ok"]},
            "new": fake_server(),
        }
    )
    await servers.reload(second)
    await servers.settled()
    assert [s.name for s in servers.list_servers()] == ["keep", "change", "new"]
    assert servers.info("keep").status == "disabled"
    assert servers.info("change").enabled_tools == ("ok",)
    assert servers.info("new").status == "connected"
    assert statuses(recorder, "drop") == ["pending", "connected", "not_configured"]
    assert statuses(recorder, "keep") == ["pending", "connected", "disabled"]
    assert statuses(recorder, "change")[-3:] == ["stopped", "pending", "connected"]
    loaded = recorder.of("session.mcp_servers_loaded")
    assert len(loaded) == loaded_before + 1
    assert {s.name for s in loaded[-1].data.servers} == {"change", "new"}  # type: ignore[attr-defined]
    await session.close()


async def test_a_server_started_later_has_its_secrets_masked(tmp_path: Path) -> None:
    session, servers, recorder = await started(tmp_path, McpConfig())
    token = "ghp_" + uuid.uuid4().hex
    entry = {**fake_server(), "args": [token], "env": {"API_TOKEN": token}}
    await servers.start_server("leaky", parse_server("leaky", entry, None))
    await servers.ready("leaky")
    text = json.dumps([e.data.model_dump() for e in recorder.events])
    assert "leaky" in text and token not in text
    await session.close()


async def test_two_restarts_at_once_leave_one_process(tmp_path: Path) -> None:
    marker = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    session, servers, _ = await started(
        tmp_path, config_of({"fake": fake_server(env={marker: "1"})})
    )
    await asyncio.gather(servers.restart("fake"), servers.restart("fake"))
    assert (await servers.ready("fake")).status == "connected"
    assert len(processes_with(marker)) == 1
    await session.close()
    assert processes_with(marker) == []


async def test_waiting_for_a_starting_server_ends_when_the_session_closes(
    tmp_path: Path,
) -> None:
    # A server that never answers its handshake: ready() and settled() would wait for
    # its (long) budget, and past the session's close nothing reports any more.
    config = config_of({"slow": fake_server("--hang-at-start", timeout_ms=600_000)})
    session, _ = await new_session(scripted([{"text": "ok"}]), tmp_path)
    session.start_mcp(config)
    servers = session.mcp
    assert servers is not None
    ready = asyncio.ensure_future(servers.ready("slow"))
    settled = asyncio.ensure_future(servers.settled())
    await asyncio.sleep(0)  # both are waiting: the server is pending
    assert not ready.done() and not settled.done()
    await session.close()
    # Bounded only so that a regression fails instead of hanging the suite.
    await asyncio.wait_for(asyncio.gather(ready, settled), timeout=60)
