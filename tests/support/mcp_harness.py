"""The MCP servers the tests talk to: where tests/support/mcp_servers.sh installed the
real ones (and the marks that skip a test without them), FakeMcpServer's config entry,
and the processes a test's servers left behind."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT

SERVERS = Path(os.environ.get("LOOPDECK_MCP_SERVERS", ROOT / ".cache" / "mcp-servers"))
TIME = SERVERS / "venv" / "bin" / "mcp-server-time"
EVERYTHING = SERVERS / "node" / "node_modules" / ".bin" / "mcp-server-everything"
FILESYSTEM = SERVERS / "node" / "node_modules" / ".bin" / "mcp-server-filesystem"
INSTALL = "install the MCP test servers with tests/support/mcp_servers.sh"
needs_time = pytest.mark.skipif(not TIME.exists(), reason=f"no mcp-server-time: {INSTALL}")
needs_everything = pytest.mark.skipif(
    not EVERYTHING.exists(), reason=f"no server-everything (needs node): {INSTALL}"
)
needs_filesystem = pytest.mark.skipif(
    not FILESYSTEM.exists(), reason=f"no server-filesystem (needs node): {INSTALL}"
)
FAKE = [sys.executable, "-m", "tests.support.fake_mcp_server"]


def fake_server(
    *extra: str, timeout_ms: int | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "command": FAKE[0],
        "args": [*FAKE[1:], *extra],
        "cwd": str(ROOT),
        "tools": ["*"],
        "env": env or {},
    }
    if timeout_ms is not None:
        entry["timeout"] = timeout_ms
    return entry


def processes_with(marker: str) -> list[int]:
    """The live processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours to read
    return found
