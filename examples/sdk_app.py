"""An app written with GitHub's Copilot SDK, running on loopdeck instead of Copilot CLI.

    python examples/sdk_app.py "survey this project"          # offline: scripted demo model
    LOOPDECK_MODEL=anthropic/claude-sonnet-4-5 python examples/sdk_app.py "..."

The SDK (``pip install github-copilot-sdk``) starts ``loopdeck --headless --stdio``
and drives it over JSON-RPC. The session is logged like any other loopdeck session:
watch it live with ``loopdeck watch <id>`` or resume it with ``loopdeck --resume <id>``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

from copilot import CopilotClient, PermissionHandler, RuntimeConnection, define_tool
from copilot.session_events import SessionEvent, SessionTaskCompleteData, ToolExecutionStartData
from pydantic import BaseModel


class City(BaseModel):
    city: str


@define_tool(description="Today's weather in a city")
def weather(params: City, invocation: object) -> str:
    return f"It is sunny in {params.city}."  # a tool the app runs itself


summary: list[str] = []


def show(event: SessionEvent) -> None:
    if isinstance(event.data, ToolExecutionStartData):
        print(f"  tool: {event.data.tool_name} {event.data.arguments}", file=sys.stderr)
    if isinstance(event.data, SessionTaskCompleteData) and event.data.summary:
        summary.append(event.data.summary)


def find_loopdeck() -> str:
    """The command installed next to this interpreter (works without activating the
    venv: ``.venv/bin/python examples/sdk_app.py``), else the one on PATH."""
    beside = Path(sys.executable).parent / ("loopdeck.exe" if os.name == "nt" else "loopdeck")
    if beside.is_file():
        return str(beside)
    return shutil.which("loopdeck") or "loopdeck"


async def main(prompt: str) -> None:
    loopdeck = find_loopdeck()
    model = os.environ.get("LOOPDECK_MODEL", "scripted:demo")
    async with CopilotClient(connection=RuntimeConnection.for_stdio(path=loopdeck)) as client:
        session = await client.create_session(
            model=model, tools=[weather], on_permission_request=PermissionHandler.approve_all
        )
        session.on(show)
        # autopilot: work until the model calls task_complete (nudged if it stops early)
        reply = await session.send_and_wait(prompt, agent_mode="autopilot", timeout=600)
        print(summary[-1] if summary else reply.data.content if reply else "(no reply)")
        print(f"session {session.session_id}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "survey this project"))
