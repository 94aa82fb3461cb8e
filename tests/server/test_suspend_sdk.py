"""``session.suspend`` and ``session.shutdown`` through the unmodified Copilot SDK:
the work in flight stops (a permission the app holds, an app tool still running),
the turn ends, and the session can be resumed where it stopped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

copilot = pytest.importorskip("copilot")

from copilot.generated.rpc import (  # noqa: E402
    PermissionDecisionUserNotAvailable,
    ShutdownRequest,
)
from copilot.generated.session_events import ShutdownType  # noqa: E402
from copilot.tools import Tool, ToolInvocation, ToolResult  # noqa: E402

from tests.support.sdk_runtime import Recorder, Runtime, new_session, shared, within  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["shared"]  # the module's runtime, started once

CALL = {"text": "", "tool_calls": [{"name": "hold", "arguments": {"value": "x"}}]}


def _tool(handler: Any) -> Tool:
    async def run(invocation: ToolInvocation) -> ToolResult:
        return ToolResult(text_result_for_llm=str(await handler(invocation.arguments)))

    return Tool(
        name="hold",
        description="Holds",
        parameters={"type": "object", "properties": {"value": {"type": "string"}}},
        handler=run,
    )


async def test_suspend_stops_a_permission_the_app_holds(shared: Runtime) -> None:
    asked = asyncio.get_running_loop().create_future()
    release = asyncio.get_running_loop().create_future()
    ran = False

    async def hold_permission(request: Any, _invocation: Any) -> Any:
        if not asked.done():
            asked.set_result(request)
        return await release

    async def tool(_args: Any) -> str:
        nonlocal ran
        ran = True
        return "ran"

    session = await new_session(
        shared, [CALL, {"text": "done"}], on_permission_request=hold_permission, tools=[_tool(tool)]
    )
    rec = Recorder()
    session.on(rec)
    await within(session.send("go"))
    await within(asked)
    await within(session.rpc.suspend())
    assert not ran
    assert await within(session.rpc.metadata.is_processing()) is not None
    assert (await within(session.rpc.metadata.is_processing())).processing is False
    release.set_result(PermissionDecisionUserNotAvailable())
    await within(session.disconnect())


async def test_suspend_stops_an_app_tool_still_running(shared: Runtime) -> None:
    started = asyncio.get_running_loop().create_future()
    release = asyncio.get_running_loop().create_future()

    async def tool(args: Any) -> str:
        started.set_result(args)
        return str(await release)

    session = await new_session(shared, [CALL, {"text": "done"}], tools=[_tool(tool)])
    await within(session.send("go"))
    await within(started)
    await within(session.rpc.suspend())
    assert (await within(session.rpc.metadata.is_processing())).processing is False
    if not release.done():
        release.set_result("late")
    await within(session.disconnect())


async def test_shutdown_records_why_and_ends_the_session(shared: Runtime) -> None:
    session = await new_session(shared, [{"text": "hello"}])
    rec = Recorder()
    session.on(rec)
    await within(session.send_and_wait("hi", timeout=30))
    await within(session.rpc.shutdown(ShutdownRequest(type=ShutdownType.ROUTINE, reason="done")))
    event = await rec.wait_for("session.shutdown")
    assert event.data.shutdown_type == ShutdownType.ROUTINE
    with pytest.raises(Exception, match="not found"):
        await within(session.rpc.metadata.is_processing())
