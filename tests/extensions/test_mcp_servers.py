"""MCP servers nobody here wrote, installed from PyPI and npm by
tests/support/mcp_servers.sh, driven through ``loopdeck -p`` and the session; and
FakeMcpServer (tests/support/fake_mcp_server.py) for crashes and hangs.

Tests that need an installed server skip, saying how to install it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.extensions.mcp.config import McpConfig, load_config
from agent.log.store import SessionStore
from agent.session.session import Session
from app.cli import main
from tests.support.mcp_harness import (
    EVERYTHING,
    FAKE,
    INSTALL,
    TIME,
    fake_server,
    free_port,
    needs_everything,
    needs_time,
    processes_with,
    serving,
)
from tests.support.scripting import FakeRecorder, new_session, scripted


async def with_servers(
    model: Any, tmp_path: Path, config: McpConfig, store: SessionStore | None = None
) -> tuple[Session, FakeRecorder]:
    """An autopilot session allowed every tool, its servers started and settled."""
    session, recorder = await new_session(model, tmp_path, mode="autopilot", store=store)
    session.permissions.policy.allow_all = True
    session.start_mcp(config)
    assert session.mcp is not None
    await session.mcp.settled()
    return session, recorder


def run_p(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, turns: list[dict[str, Any]], *flags: str
) -> tuple[int, list[dict[str, Any]], str]:
    """``loopdeck -p`` with a scripted model; (exit code, the JSON stream, stderr)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}), "utf-8")
    capsys.readouterr()
    code = main(["-p", "go", "--model", f"scripted:{script}", "--output-format", "json", *flags])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


def log_lines(home: Path) -> list[dict[str, Any]]:
    (folder,) = [p for p in (home / "session-state").iterdir() if p.is_dir()]
    text = (folder / "events.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))  # no user servers
    return ws


@needs_time
@needs_everything
def test_p_calls_real_servers_tools_and_a_deny_rule_holds(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    config = {
        "mcpServers": {
            "time": {"command": str(TIME), "tools": ["*"], "env": {marker: "1"}},
            "everything": {
                "type": "stdio",
                "command": str(EVERYTHING),
                "tools": ["*"],
                "env": {marker: "1"},
            },
        }
    }
    turns = [
        {
            "text": "asking the servers",
            "tool_calls": [
                {"name": "time-get_current_time", "arguments": {"timezone": "Etc/UTC"}},
                {"name": "everything-echo", "arguments": {"message": "hello mcp"}},
                {"name": "everything-get-sum", "arguments": {"a": 2, "b": 40}},
                {"name": "everything-get-tiny-image"},
            ],
        },
        {"text": "done"},
    ]
    code, stream, err = run_p(
        capsys,
        tmp_path,
        turns,
        "--additional-mcp-config",
        json.dumps(config),
        "--allow-tool",
        "time",
        "--allow-tool",
        "everything",
        "--deny-tool",
        "everything(get-sum)",
    )
    assert code == 0, err
    assert stream[-1]["type"] == "session.idle"
    assert [e["type"] for e in stream].count("session.idle") == 1
    statuses = [
        (e["data"]["serverName"], e["data"]["status"])
        for e in stream
        if e["type"] == "session.mcp_server_status_changed"
    ]
    # As in Copilot's stream: each server pending, then connected; then the summary.
    assert statuses[:2] == [("time", "pending"), ("everything", "pending")]
    assert sorted(statuses[2:]) == [("everything", "connected"), ("time", "connected")]
    types = [e["type"] for e in stream]
    loaded = stream[types.index("session.mcp_servers_loaded")]["data"]["servers"]
    assert {(s["name"], s["status"]) for s in loaded} == {
        ("time", "connected"),
        ("everything", "connected"),
    }
    assert types.index("session.mcp_servers_loaded") < types.index("user.message")  # -p waited

    log = log_lines(loopdeck_home)
    starts = {
        e["data"]["toolCallId"]: e["data"] for e in log if e["type"] == "tool.execution_start"
    }
    results = {
        e["data"]["toolCallId"]: e["data"] for e in log if e["type"] == "tool.execution_complete"
    }
    by_name = {d["toolName"]: (d, results[call]) for call, d in starts.items()}
    start, done = by_name["time-get_current_time"]
    assert (start["mcpServerName"], start["mcpToolName"]) == ("time", "get_current_time")
    assert done["success"] is True
    assert json.loads(done["result"]["content"])["timezone"] == "Etc/UTC"
    start, done = by_name["everything-echo"]
    assert (start["mcpServerName"], start["mcpToolName"]) == ("everything", "echo")
    assert done["result"]["content"] == "Echo: hello mcp"
    _, done = by_name["everything-get-sum"]
    assert done["success"] is False
    assert "denied by the rule everything(get-sum)" in done["error"]["message"]
    _, done = by_name["everything-get-tiny-image"]
    assert "[image: image/png" in done["result"]["content"]
    # Copilot's status events are stream-only, as in Copilot's own logs.
    assert not any(e["type"].startswith("session.mcp") for e in log)
    assert processes_with(marker) == []  # both servers stopped with the session


def test_official_parser_reads_the_mcp_tool_events(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session_events = pytest.importorskip("copilot.generated.session_events")
    config = {"mcpServers": {"fake": fake_server()}}
    turns = [{"tool_calls": [{"name": "fake-ok", "arguments": {"word": "hi"}}]}, {"text": "ok"}]
    code, stream, err = run_p(
        capsys,
        tmp_path,
        turns,
        "--additional-mcp-config",
        json.dumps(config),
        "--allow-tool",
        "fake",
    )
    assert code == 0, err
    for wire in [*stream, *log_lines(loopdeck_home)]:
        parsed = session_events.session_event_from_dict(wire)
        assert parsed.type.value == wire["type"]
    start = next(e for e in stream if e["type"] == "tool.execution_start")
    parsed = session_events.session_event_from_dict(start)
    assert (parsed.data.mcp_server_name, parsed.data.mcp_tool_name) == ("fake", "ok")
    loaded = next(e for e in stream if e["type"] == "session.mcp_servers_loaded")
    parsed = session_events.session_event_from_dict(loaded)
    assert parsed.data.servers[0].name == "fake"
    done = next(e for e in stream if e["type"] == "tool.execution_complete")
    assert done["data"]["result"]["content"] == "ok: hi"
    # The export reads the log like any other session's: the MCP call is a tool call.
    (folder,) = [p for p in (loopdeck_home / "session-state").iterdir() if p.is_dir()]
    capsys.readouterr()
    assert main(["export", folder.name]) == 0
    exported = capsys.readouterr().out
    assert "✓ **fake-ok** `word=hi`" in exported and "ok: hi" in exported


def test_a_server_that_fails_to_start_is_a_notice_and_the_run_ends_idle(
    workspace: Path, tmp_path: Path, loopdeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "mcpServers": {
            "dead": fake_server("--exit-at-start"),
            "missing": {"command": str(tmp_path / "no-such-server")},
        }
    }
    turns = [{"tool_calls": [{"name": "dead-ok"}]}, {"text": "carried on"}]
    code, stream, err = run_p(
        capsys, tmp_path, turns, "--additional-mcp-config", json.dumps(config)
    )
    assert code == 0, err
    assert stream[-1]["type"] == "session.idle"
    failed = {
        e["data"]["serverName"]: e["data"]["error"]
        for e in stream
        if e["type"] == "session.mcp_server_status_changed" and e["data"]["status"] == "failed"
    }
    assert "FakeMcpServer: refusing to start" in failed["dead"]  # its stderr says why
    assert "command not found" in failed["missing"]
    warnings = [
        e["data"]["message"] for e in log_lines(loopdeck_home) if e["type"] == "session.warning"
    ]
    assert any(w.startswith("MCP server dead failed") for w in warnings)
    assert any(w.startswith("MCP server missing failed") for w in warnings)
    result = next(e for e in stream if e["type"] == "tool.execution_complete")
    assert result["data"]["success"] is False  # the model reads that the tool is not there


async def test_a_crash_and_a_hang_are_failed_results_and_nothing_is_left_running(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pids"
    marker = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    servers = {
        "slow": fake_server(timeout_ms=1000, env={"FAKE_MCP_PIDFILE": str(pidfile), marker: "1"}),
        "brittle": fake_server(env={"FAKE_MCP_PIDFILE": str(pidfile), marker: "1"}),
    }
    config = load_config({}, additional=[json.dumps({"mcpServers": servers})])
    model = scripted(
        [
            {"tool_calls": [{"name": "slow-hang"}, {"name": "slow-ok"}]},
            {"tool_calls": [{"name": "brittle-crash"}]},
            {"tool_calls": [{"name": "brittle-ok"}]},
            {"text": "done"},
        ]
    )
    store = SessionStore(tmp_path / "home")
    session, recorder = await with_servers(model, tmp_path, config, store=store)
    assert len(processes_with(marker)) == 2  # both servers run (the check below can fail)
    assert model.seen_tools == []
    await session.send_and_wait("go")
    results = [e.data for e in recorder.of("tool.execution_complete")]
    messages = [r.error.message if r.error else r.result.content for r in results]  # type: ignore[attr-defined]
    assert "MCP server slow did not answer within 1s" in messages[0]
    assert messages[1] == "ok: fine"  # a hung call does not take the server down
    assert "MCP server brittle stopped" in messages[2]
    # Its tools left with it; a call to one says the server is down.
    assert messages[3].startswith("MCP server brittle is down (failed: connection lost")
    assert "brittle-ok" not in model.seen_tools[-1] and "slow-ok" in model.seen_tools[-1]
    assert recorder.types()[-1] == "session.idle"
    status = [
        (e.data.server_name, e.data.status)  # type: ignore[attr-defined]
        for e in recorder.of("session.mcp_server_status_changed")
    ]
    assert ("brittle", "failed") in status
    await session.close()
    assert processes_with(marker) == []
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
        )


async def test_the_first_prompt_does_not_wait_for_a_server_and_its_tools_join_later(
    tmp_path: Path,
) -> None:
    config = load_config({}, additional=[json.dumps({"mcpServers": {"fake": fake_server()}})])
    model = scripted([{"text": "first"}, {"text": "second"}])
    session, _ = await new_session(model, tmp_path)
    session.start_mcp(config)
    await session.send_and_wait("one")  # sent at once: the server is still starting
    assert "fake-ok" not in model.seen_tools[0]
    assert session.mcp is not None
    await session.mcp.settled()
    await session.send_and_wait("two")
    assert "fake-ok" in model.seen_tools[1]
    schema = next(t for t in session.tools().schemas() if t["function"]["name"] == "fake-ok")[
        "function"
    ]
    assert schema["parameters"]["properties"]["word"]["type"] == "string"
    assert "$schema" not in schema["parameters"]
    await session.close()


# --- streamable HTTP -------------------------------------------------------------------


@pytest.fixture
def http_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A server over streamable HTTP on 127.0.0.1; its URL."""
    port = free_port()
    which = request.param
    if which == "everything":
        if not EVERYTHING.exists():
            pytest.skip(f"no server-everything (needs node): {INSTALL}")
        argv = [str(EVERYTHING), "streamableHttp"]
        env = {"PORT": str(port)}
    else:
        argv = [*FAKE, "--http", str(port)]
        env = {}
    with serving(argv, port, env):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize(
    ("http_server", "call", "expected"),
    [
        ("fake", {"name": "web-ok", "arguments": {"word": "http"}}, "ok: http"),
        (
            "everything",
            {"name": "web-echo", "arguments": {"message": "over http"}},
            "Echo: over http",
        ),
    ],
    indirect=["http_server"],
)
def test_p_calls_a_server_over_streamable_http(
    http_server: str,
    call: dict[str, Any],
    expected: str,
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = {"mcpServers": {"web": {"type": "http", "url": http_server, "tools": ["*"]}}}
    turns = [{"tool_calls": [call]}, {"text": "done"}]
    code, stream, err = run_p(
        capsys,
        tmp_path,
        turns,
        "--additional-mcp-config",
        json.dumps(config),
        "--allow-tool",
        "web",
    )
    assert code == 0, err
    loaded = next(e for e in stream if e["type"] == "session.mcp_servers_loaded")
    assert loaded["data"]["servers"][0]["transport"] == "http"
    done = next(e for e in stream if e["type"] == "tool.execution_complete")
    assert done["data"]["success"] is True, done
    assert done["data"]["result"]["content"] == expected
    assert stream[-1]["type"] == "session.idle"


async def test_tokens_in_a_server_s_env_and_headers_never_reach_an_event(tmp_path: Path) -> None:
    token = "sekrit-token-4242"
    servers = {
        "fake": {**fake_server(), "env": {"API_TOKEN": token}},
        # A failure whose message would quote the token (its command names it).
        "broken": {"command": f"/nonexistent/{token}"},
        "web": {
            "type": "http",
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer other-secret-99"},
        },
    }
    config = load_config({}, additional=[json.dumps({"mcpServers": servers})])
    model = scripted(
        [
            {"tool_calls": [{"name": "fake-getenv", "arguments": {"name": "API_TOKEN"}}]},
            {"text": "done"},
        ]
    )
    store = SessionStore(tmp_path / "home")
    session, recorder = await with_servers(model, tmp_path, config, store=store)
    await session.send_and_wait("go")
    await session.close()
    done = recorder.of("tool.execution_complete")[0].data
    assert done.result.content == "***"  # type: ignore[attr-defined]  # the server had it
    failed = [e for e in recorder.events if e.type == "session.mcp_server_status_changed"]
    assert any(e.data.server_name == "broken" for e in failed)  # type: ignore[attr-defined]
    everything = "\n".join(json.dumps(e.wire()) for e in recorder.events)
    assert token not in everything and "other-secret-99" not in everything
    on_disk = store.events_path(session.id).read_text("utf-8")
    assert token not in on_disk and "***" in on_disk


async def test_a_server_s_changed_tool_list_is_offered_from_the_next_call(tmp_path: Path) -> None:
    config = load_config({}, additional=[json.dumps({"mcpServers": {"fake": fake_server()}})])
    model = scripted(
        [
            {"tool_calls": [{"name": "fake-grow"}]},
            {"tool_calls": [{"name": "fake-sprout"}]},
            {"text": "done"},
        ]
    )
    session, recorder = await with_servers(model, tmp_path, config)
    await session.send_and_wait("grow")
    await session.close()
    assert "fake-sprout" not in model.seen_tools[0]
    assert "fake-sprout" in model.seen_tools[1]  # the call right after the change
    results = [e.data for e in recorder.of("tool.execution_complete")]
    assert [r.result.content for r in results] == ["grown", "sprouted"]  # type: ignore[attr-defined]


async def test_an_abort_during_a_hung_call_ends_the_turn_and_the_server_lives_on(
    tmp_path: Path,
) -> None:
    config = load_config(
        {}, additional=[json.dumps({"mcpServers": {"fake": fake_server(timeout_ms=600_000)}})]
    )
    model = scripted(
        [
            {"tool_calls": [{"name": "fake-hang"}]},
            {"tool_calls": [{"name": "fake-ok"}]},
            {"text": "ok"},
        ]
    )
    session, recorder = await with_servers(model, tmp_path, config)
    started = asyncio.Event()
    session.subscribe(lambda e: started.set() if e.type == "tool.execution_start" else None)
    outcome = session.send("hang")
    await started.wait()
    session.abort()
    await asyncio.wait_for(outcome, 30)  # bounded: a hung server never holds the turn
    assert recorder.types()[-1] == "session.idle"
    hung = recorder.of("tool.execution_complete")[0].data
    assert hung.success is False  # type: ignore[attr-defined]
    await session.send_and_wait("again")  # the server still answers
    assert recorder.of("tool.execution_complete")[-1].data.result.content == "ok: fine"  # type: ignore[attr-defined]
    await session.close()


@needs_everything
async def test_progress_notifications_stream_as_partial_results(tmp_path: Path) -> None:
    servers = {"everything": {"command": str(EVERYTHING), "tools": ["*"]}}
    config = load_config({}, additional=[json.dumps({"mcpServers": servers})])
    call = {
        "name": "everything-trigger-long-running-operation",
        "arguments": {"duration": 1, "steps": 3},
    }
    model = scripted([{"tool_calls": [call]}, {"text": "done"}])
    session, recorder = await with_servers(model, tmp_path, config)
    await session.send_and_wait("go")
    await session.close()
    partial = [e.data.partial_output for e in recorder.of("tool.execution_partial_result")]  # type: ignore[attr-defined]
    assert partial[:3] == ["1/3", "2/3", "3/3"], partial
    done = recorder.of("tool.execution_complete")[0].data
    assert done.success is True  # type: ignore[attr-defined]


def test_ctrl_c_while_p_waits_for_a_server_that_never_starts(
    workspace: Path, tmp_path: Path, loopdeck_home: Path
) -> None:
    marker = f"LOOPDECK_TEST_{uuid.uuid4().hex}"
    config = {"mcpServers": {"stuck": fake_server("--hang-at-start", env={marker: "1"})}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "never asked"}]}), "utf-8")
    argv = [sys.executable, "-m", "app.cli", "-p", "go", "--model", f"scripted:{script}"]
    argv += ["--output-format", "json", "--additional-mcp-config", json.dumps(config)]
    process = subprocess.Popen(
        argv, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:  # the run is waiting for its server
            if json.loads(line)["type"] == "session.mcp_server_status_changed":
                break
        deadline = time.monotonic() + 30
        while not processes_with(marker):  # ... which has started
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.05)
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        rest, err = process.communicate(timeout=30)
        leftovers = processes_with(marker)
    finally:
        process.kill()
        for pid in processes_with(marker):  # a failed run's server is not left behind
            os.kill(pid, signal.SIGKILL)
    # Well inside the server's 60 s start budget: Ctrl+C does not wait it out.
    assert time.monotonic() - started < 20
    assert process.returncode == 130, err
    assert json.loads(rest.splitlines()[-1])["type"] == "session.idle"
    assert leftovers == []
