"""A write tool for durability tests: its side effect happens without yielding."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import ClassVar

from pydantic import Field

from agent.events.schema import Mode
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolKind, ToolResult
from agent.tools.registry import ToolRegistry, default_tools


class FakeEffectArgs(ToolArgs):
    path: str = Field(description="file to write")
    text: str = Field(description="what to write")


class FakeEffectTool(Tool):
    """Writes a file at once (no await before the effect), as a fast tool would.

    ``after`` runs right after the effect: a check, or a SIGKILL of this process.
    """

    name = "fake_effect"
    description = "Write text to a file."
    kind: ClassVar[ToolKind] = "write"
    Args = FakeEffectArgs

    def __init__(self, after: Callable[[ToolContext, str], None] | None = None) -> None:
        self.after = after

    async def run(self, args: FakeEffectArgs, ctx: ToolContext) -> ToolResult:
        (ctx.cwd / args.path).write_text(args.text, encoding="utf-8")
        if self.after is not None:
            self.after(ctx, args.path)
        return ToolResult(content="written")


def kill_self(_ctx: ToolContext, _path: str) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def with_effect_tool(tool: FakeEffectTool) -> Callable[[Mode], ToolRegistry]:
    def factory(mode: Mode) -> ToolRegistry:
        registry = default_tools(autopilot=mode == "autopilot")
        registry.register(tool)
        return registry

    return factory


def main(argv: list[str]) -> None:
    """``python -m tests.support.fake_effect_tool HOME WORKSPACE``: one autopilot turn whose
    fake_effect call writes ``effect.txt`` and SIGKILLs this process right after."""
    import asyncio
    from pathlib import Path

    from agent.log.store import SessionStore
    from agent.permissions.rules import PermissionPolicy
    from agent.session.session import Session
    from tests.support.scripting import scripted

    home, workspace = Path(argv[0]), Path(argv[1])
    call = {"name": "fake_effect", "arguments": {"path": "effect.txt", "text": "done"}}
    model = scripted([{"text": "Writing it now.", "tool_calls": [call]}, {"text": "ok"}])

    async def run() -> None:
        session = await Session.create(
            model=model,
            cwd=workspace,
            mode="autopilot",
            store=SessionStore(home),
            registry_factory=with_effect_tool(FakeEffectTool(after=kill_self)),
            policy=PermissionPolicy(allow_all=True),
        )
        print(session.id, flush=True)
        await session.send_and_wait("write the file")

    asyncio.run(run())


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
