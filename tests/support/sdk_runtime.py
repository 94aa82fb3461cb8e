"""loopdeck as the runtime of the official Copilot SDK, for the server's tests: an SDK
client on ``loopdeck --headless``, a runtime shared by a module's tests, sessions over
scripted models, and a recorder of the events the SDK delivers. Every await has a
timeout: a protocol mismatch fails the test instead of hanging it.

Import it only after ``pytest.importorskip("copilot")``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
from copilot import CopilotClient, PermissionHandler, RuntimeConnection
from copilot.generated.session_events import AssistantMessageData, SessionEvent

T = 30.0  # seconds any single await may take
_BESIDE_PYTHON = Path(sys.executable).with_name("loopdeck")
LOOPDECK = (
    str(_BESIDE_PYTHON) if _BESIDE_PYTHON.exists() else shutil.which("loopdeck") or "loopdeck"
)
R = TypeVar("R")


async def within(awaitable: Awaitable[R], timeout: float = T) -> R:
    return await asyncio.wait_for(awaitable, timeout)


def runtime_env(home: Path) -> dict[str, str]:
    """The runtime's environment: its own LOOPDECK_HOME, no model from the caller's."""
    env = dict(os.environ)
    env["LOOPDECK_HOME"] = str(home)
    env.pop("LOOPDECK_MODEL", None)
    return env


def new_client(home: Path, cwd: Path) -> CopilotClient:
    """An SDK client that starts ``loopdeck`` over stdio (not started yet)."""
    return CopilotClient(
        connection=RuntimeConnection.for_stdio(path=LOOPDECK),
        env=runtime_env(home),
        working_directory=str(cwd),
    )


def script(folder: Path, turns: list[dict[str, Any]]) -> str:
    """A fresh script in ``folder``; returns the model name that follows it."""
    path = folder / f"script-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    return f"scripted:{path}"


class Recorder:
    """Collects a session's events as the SDK delivers them."""

    def __init__(self) -> None:
        self.events: list[SessionEvent] = []

    def __call__(self, event: SessionEvent) -> None:
        self.events.append(event)

    def types(self, *, deltas: bool = False) -> list[str]:
        return [e.type.value for e in self.events if deltas or not e.type.value.endswith("_delta")]

    def of(self, etype: str) -> list[SessionEvent]:
        return [e for e in self.events if e.type.value == etype]

    async def wait_for(self, etype: str, timeout: float = T) -> SessionEvent:
        async def poll() -> SessionEvent:
            while True:
                found = self.of(etype)
                if found:
                    return found[0]
                await asyncio.sleep(0.01)

        return await within(poll(), timeout)


@dataclass
class Runtime:
    client: CopilotClient
    home: Path
    workspace: Path
    scripts: Path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Runtime]:
    """One runtime for the module's tests (import it into the module that uses it)."""
    base = tmp_path_factory.mktemp("sdk")
    workspace = base / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Demo\n\nThe answer is 42.\n", encoding="utf-8")
    scripts = base / "scripts"
    scripts.mkdir()
    client = new_client(base / "home", workspace)
    await within(client.start())
    yield Runtime(client, base / "home", workspace, scripts)
    await within(client.stop())


async def new_session(rt: Runtime, turns: list[dict[str, Any]], **kwargs: Any) -> Any:
    """A session on the shared runtime following ``turns``; approves every permission
    unless ``on_permission_request`` says otherwise."""
    kwargs.setdefault("on_permission_request", PermissionHandler.approve_all)
    return await within(rt.client.create_session(model=script(rt.scripts, turns), **kwargs))


def final_text(event: SessionEvent | None) -> str:
    assert event is not None and isinstance(event.data, AssistantMessageData)
    return event.data.content
