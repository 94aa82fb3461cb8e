"""The MCP servers the tests talk to: where tests/support/mcp_servers.sh installed the
real ones (and the marks that skip a test without them), FakeMcpServer's config entry,
and the processes a test's servers left behind."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_listening(port: int, process: subprocess.Popen[bytes], deadline: float = 60.0) -> None:
    """Until the server accepts connections (it is up), or it has exited."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@contextlib.contextmanager
def serving(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[None]:
    """A server process listening on 127.0.0.1:``port`` for the block's length."""
    process = subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)
