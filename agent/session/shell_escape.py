"""``!command``: a shell command the user runs directly, without the model.

Recorded as Copilot CLI records it: ``tool.user_requested`` (tool ``local_shell``,
arguments ``{command, description}``) then ``tool.execution_complete`` with
``isUserRequested: true``. It runs at once, through the bash tool: the user typed it,
so the permission rules (written for the model's calls) are not asked and no
permission is requested, as in Copilot CLI; the sandbox still confines it, and a
mode without the shell (plan mode) still refuses it. Its output joins the model's
next turn (see :mod:`agent.loop.history`).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from agent.events.schema import (
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolRequest,
    ToolResultPayload,
    ToolUserRequestedData,
)
from agent.tools.base import ToolResult
from agent.tools.registry import execute

if TYPE_CHECKING:
    from agent.session.internals import SessionInternals

TOOL_NAME = "local_shell"  # Copilot's name for the user's own shell command
SHELL_TOOL = "bash"
INTERRUPTED = "Stopped by the user before it finished."


def parse(text: str) -> str | None:
    """The command of a ``!command`` prompt, or None when ``text`` is not one."""
    if not text.startswith("!"):
        return None
    return text[1:].strip()


async def run_user_command(session: SessionInternals, command: str) -> ToolResult:
    """Run ``command`` for the user and record it; returns the tool's result."""
    call_id = str(uuid.uuid4())
    session.emit(
        ToolUserRequestedData(
            tool_call_id=call_id,
            tool_name=TOOL_NAME,
            arguments={"command": command, "description": f"Execute shell command: {command}"},
        )
    )
    request = ToolRequest(tool_call_id=call_id, name=SHELL_TOOL, arguments={"command": command})
    try:
        result = await _run(session, request)
    except asyncio.CancelledError:
        # Stopped by the user (Esc): the record is closed as the loop closes its calls.
        _complete(session, call_id, ToolResult.failure(INTERRUPTED), code="interrupted")
        raise
    except Exception as exc:  # recorded as the command's failure; the session goes on
        result = ToolResult.failure(f"{type(exc).__name__}: {exc}")
    _complete(session, call_id, result)
    return result


def _complete(
    session: SessionInternals, call_id: str, result: ToolResult, code: str | None = None
) -> None:
    session.emit(
        ToolExecutionCompleteData(
            tool_call_id=call_id,
            success=result.success,
            is_user_requested=True,
            result=ToolResultPayload(
                content=result.content,
                # Copilot records the output once when there is nothing more to show.
                detailed_content=None
                if result.detailed_content == result.content
                else result.detailed_content,
            ),
            error=None
            if result.success
            else ToolErrorPayload(message=result.error or "", code=code),
        )
    )


async def _run(session: SessionInternals, request: ToolRequest) -> ToolResult:
    if session.tools().get(SHELL_TOOL) is None:
        # This mode has no shell (plan mode): its rules could not be applied.
        return ToolResult.failure(
            f"Shell commands cannot run in {session.mode} mode; switch mode (Shift+Tab) first."
        )
    # No permission gate: the rules say what the model may do, and this is the user's
    # own command. Like the model's bash calls, the request is durable before it runs.
    await session.persist()

    def progress(line: str) -> None:
        session.emit(
            ToolExecutionPartialResultData(tool_call_id=request.tool_call_id, partial_output=line)
        )

    ctx = session.tool_context(progress)
    ctx.tool_call_id = request.tool_call_id
    ctx.for_user = True  # a refusal is told to the user, in full, with what would allow it
    return await execute(session.tools(), SHELL_TOOL, request.arguments, ctx)
