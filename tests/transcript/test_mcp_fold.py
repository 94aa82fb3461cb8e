"""The MCP servers folded from their events (agent/transcript/mcp.py): each one's
status, source, transport and last error; the status bar's ``mcp 3/4``; and an MCP
tool call knowing its server."""

from __future__ import annotations

from typing import Any

from agent.events.mcp import (
    McpServerSummary,
    SessionMcpServersLoadedData,
    SessionMcpServerStatusChangedData,
)
from agent.events.schema import ToolExecutionStartData
from agent.transcript.blocks import ToolCallBlock
from agent.transcript.fold import Transcript
from tests.support.streams import Stream


def status(stream: Stream, name: str, state: Any, error: str | None = None) -> None:
    stream.emit(
        SessionMcpServerStatusChangedData(
            server_name=name, status=state, error=error, config_source="user"
        )
    )


def folded(stream: Stream) -> Transcript:
    transcript = Transcript()
    for event in stream.events:
        transcript.apply(event)
    return transcript


def test_statuses_the_loaded_list_and_the_down_summary() -> None:
    stream = Stream()
    stream.start()
    for name in ("time", "everything", "fetch", "memory"):
        status(stream, name, "pending")
    assert folded(stream).mcp.down_summary() is None  # starting is not down
    status(stream, "time", "connected")
    status(stream, "everything", "connected")
    status(stream, "fetch", "failed", "cannot start 'uvx': command not found")
    status(stream, "memory", "connected")
    stream.emit(
        SessionMcpServersLoadedData(
            servers=[
                McpServerSummary(name="time", status="connected", source="user", transport="stdio"),
                McpServerSummary(name="fetch", status="failed", transport="http", error="gone"),
            ]
        )
    )
    fold = folded(stream).mcp
    assert [s.name for s in fold.servers.values()] == ["time", "everything", "fetch", "memory"]
    assert (fold.servers["time"].transport, fold.servers["time"].source) == ("stdio", "user")
    assert fold.servers["fetch"].error == "gone"
    assert fold.down_summary() == "mcp 3/4"


def test_the_last_error_stays_through_a_restart_until_it_connects() -> None:
    stream = Stream()
    stream.start()
    status(stream, "time", "connected")
    status(stream, "time", "failed", "the server exited")
    status(stream, "time", "pending")  # restarted
    fold = folded(stream).mcp
    assert fold.servers["time"].error == "the server exited"
    assert fold.down_summary() is None
    status(stream, "time", "connected")
    fold = folded(stream).mcp
    assert fold.servers["time"].error is None
    assert fold.down_summary() is None


def test_stopped_is_down_disabled_is_not_counted_and_not_configured_leaves() -> None:
    stream = Stream()
    stream.start()
    status(stream, "a", "connected")
    status(stream, "b", "connected")
    status(stream, "c", "disabled")
    assert folded(stream).mcp.down_summary() is None
    status(stream, "b", "stopped")
    assert folded(stream).mcp.down_summary() == "mcp 1/2"  # c was the user's choice
    status(stream, "b", "not_configured")
    fold = folded(stream).mcp
    assert "b" not in fold.servers
    assert fold.down_summary() is None


def test_no_servers_no_summary() -> None:
    stream = Stream()
    stream.start()
    assert folded(stream).mcp.down_summary() is None


def test_an_mcp_tool_call_knows_its_server_and_the_tool_s_own_name() -> None:
    stream = Stream()
    stream.start()
    stream.emit(
        ToolExecutionStartData(
            tool_call_id="c1",
            tool_name="time-get_current_time",
            arguments={"timezone": "UTC"},
            mcp_server_name="time",
            mcp_tool_name="get_current_time",
        )
    )
    stream.emit(ToolExecutionStartData(tool_call_id="c2", tool_name="view", arguments={}))
    cards = [b for b in folded(stream).items if isinstance(b, ToolCallBlock)]
    assert [(c.mcp_server, c.mcp_tool) for c in cards] == [
        ("time", "get_current_time"),
        (None, None),
    ]
