"""Local MCP servers run in the bash tool's OS sandbox (Landlock): the reference
server-filesystem, told it may write anywhere, still cannot write outside the
workspace; ``"sandbox": false`` (loopdeck's field) runs it unconfined."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.extensions.mcp.config import load_config
from agent.sandbox.policy import Sandbox, SandboxSettings, probe
from agent.session.session import Session
from tests.support.mcp_harness import FILESYSTEM, needs_filesystem
from tests.support.scripting import FakeRecorder, new_session, scripted

pytestmark = [
    needs_filesystem,
    pytest.mark.skipif(not probe().available, reason=f"no Landlock: {probe().reason}"),
]


def write(path: Path, text: str) -> dict[str, Any]:
    return {"name": "fs-write_file", "arguments": {"path": str(path), "content": text}}


async def run_writes(
    tmp_path: Path, entry: dict[str, Any], calls: list[dict[str, Any]]
) -> tuple[Session, FakeRecorder]:
    model = scripted([{"tool_calls": calls}, {"text": "done"}])
    workspace = tmp_path / "ws"
    sandbox = Sandbox(SandboxSettings(), cwd=workspace)
    session, recorder = await new_session(model, tmp_path, mode="autopilot", sandbox=sandbox)
    session.permissions.policy.allow_all = True
    session.start_mcp(load_config({}, additional=[json.dumps({"mcpServers": {"fs": entry}})]))
    assert session.mcp is not None
    await session.mcp.settled()
    assert session.mcp.info("fs").status == "connected", session.mcp.info("fs").error
    await session.send_and_wait("write")
    return session, recorder


def results(recorder: FakeRecorder) -> list[tuple[bool, str]]:
    """Each call's success, and all its event says (result or error)."""
    return [
        (e.data.success, json.dumps(e.data.model_dump(), ensure_ascii=False))  # type: ignore[attr-defined]
        for e in recorder.of("tool.execution_complete")
    ]


async def test_a_sandboxed_server_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # The server itself allows both folders: only the OS sandbox stops it.
    entry = {"command": str(FILESYSTEM), "args": [str(workspace), str(outside)], "tools": ["*"]}
    session, recorder = await run_writes(
        tmp_path,
        entry,
        [write(workspace / "in.txt", "inside"), write(outside / "out.txt", "outside")],
    )
    assert session.mcp is not None and session.mcp.info("fs").sandboxed
    await session.close()
    (inside, out) = results(recorder)
    assert inside[0] is True and (workspace / "in.txt").read_text() == "inside"
    assert out[0] is False
    assert "EACCES" in out[1] or "permission denied" in out[1].lower()
    assert not (outside / "out.txt").exists()


async def test_sandbox_false_runs_a_server_unconfined(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    entry = {
        "command": str(FILESYSTEM),
        "args": [str(outside)],
        "tools": ["*"],
        "sandbox": False,
    }
    session, recorder = await run_writes(tmp_path, entry, [write(outside / "out.txt", "free")])
    assert session.mcp is not None and not session.mcp.info("fs").sandboxed
    await session.close()
    assert results(recorder)[0][0] is True
    assert (outside / "out.txt").read_text() == "free"
