"""A local server whose process dies while idle is noticed at once (not at the next
call): its status becomes ``failed`` with "the server exited", a warning is logged,
its tools leave the offer. Against mcp-server-time, killed with SIGKILL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from pathlib import Path

from agent.extensions.mcp.config import load_config
from tests.support.mcp_harness import TIME, needs_time, processes_with
from tests.support.scripting import new_session, scripted


@needs_time
async def test_a_server_killed_while_idle_is_failed_at_once(tmp_path: Path) -> None:
    marker = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    servers = {"time": {"command": str(TIME), "tools": ["*"], "env": {"MARK": marker}}}
    config = load_config({}, additional=[json.dumps({"mcpServers": servers})])
    session, recorder = await new_session(scripted([]), tmp_path)
    failed = asyncio.Event()
    session.subscribe(
        lambda e: failed.set() if getattr(e.data, "status", None) == "failed" else None
    )
    session.start_mcp(config)
    assert session.mcp is not None
    try:
        await session.mcp.settled()
        assert [t.name for t in session.mcp.tools()] == [
            "time-get_current_time",
            "time-convert_time",
        ]
        (pid,) = processes_with(marker)
        os.kill(pid, signal.SIGKILL)
        async with asyncio.timeout(30):  # only fails the test: the event is what is awaited
            await failed.wait()
        (change,) = [
            e.data
            for e in recorder.of("session.mcp_server_status_changed")
            if e.data.status == "failed"  # type: ignore[attr-defined]
        ]
        assert change.error == "the server exited"  # type: ignore[attr-defined]
        warnings = [e.data.message for e in recorder.of("session.warning")]  # type: ignore[attr-defined]
        assert "MCP server time failed: the server exited" in warnings
        assert session.mcp.tools() == []
        assert session.mcp.info("time").error == "the server exited"
    finally:
        await session.close()
    assert not processes_with(marker)
