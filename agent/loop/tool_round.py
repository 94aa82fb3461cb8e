"""The tool calls of one reply: each run through its hooks and the permission gate.

A reply's tool calls become :class:`~agent.events.schema.ToolRequest` s
(:func:`tool_request`) and run one after another (:func:`run_tool`): the
preToolUse hook, then the permission gate unless the hook decided, then the tool,
then the postToolUse hook, with a ``tool.execution_start``/``complete`` pair
around it all. Whatever a phase raises becomes the call's failed result: the run
goes on. Calls an abort cut short are closed as interrupted (:func:`close_pending`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agent.events.schema import (
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
    ToolRequest,
    ToolResultPayload,
)
from agent.loop.hooks import ToolAfterword, ToolDecision
from agent.loop.host import LoopHost
from agent.models.base import ToolCall
from agent.tools.base import ToolResult
from agent.tools.registry import execute

INTERRUPTED = "Interrupted: the user aborted this tool call before it finished."
STOPPED_UNRECORDED = "Stopped: the session log could not be written (see the storage error)."


async def run_tool(host: LoopHost, request: ToolRequest, turn_id: str) -> ToolResult:
    decision = await host.hooks.pre_tool_use(request)
    if decision is not None and decision.arguments is not None:
        request = request.model_copy(update={"arguments": decision.arguments})
    call_id = request.tool_call_id
    tool = host.tools().get(request.name)
    server, server_tool = (tool.mcp_origin() if tool else None) or (None, None)
    host.emit(
        ToolExecutionStartData(
            tool_call_id=call_id,
            tool_name=request.name,
            arguments=request.arguments,
            turn_id=turn_id,
            mcp_server_name=server,
            mcp_tool_name=server_tool,
        )
    )

    def progress(line: str) -> None:
        host.emit(ToolExecutionPartialResultData(tool_call_id=call_id, partial_output=line))

    try:
        result = await authorized_run(host, request, decision, progress)
    except Exception as exc:  # any phase's failure is this call's result; the run goes on
        result = ToolResult.failure(f"tool {request.name} failed: {type(exc).__name__}: {exc}")
    afterword = await host.hooks.post_tool_use(request, result)
    result = with_hook_context(result, decision, afterword)
    host.emit(
        ToolExecutionCompleteData(
            tool_call_id=call_id,
            success=result.success,
            result=ToolResultPayload(
                content=result.content, detailed_content=result.detailed_content
            ),
            error=None
            if result.success
            else ToolErrorPayload(message=result.error or result.content),
            turn_id=turn_id,
            model=host.model.name,
        )
    )
    return result


async def authorized_run(
    host: LoopHost, request: ToolRequest, decision: ToolDecision | None, progress: Any
) -> ToolResult:
    """A preToolUse hook may deny or allow outright; otherwise the permission gate."""
    verdict = decision.permission if decision is not None else None
    if decision is not None and verdict == "deny":
        reason = decision.reason or "no reason given"
        return ToolResult.failure(f"Denied by a preToolUse hook: {reason}")
    if verdict != "allow":
        denial = await host.authorize(request)
        if denial is not None:
            return denial
    await record_before_effect(host, request)
    ctx = host.tool_context(progress)
    ctx.tool_call_id = request.tool_call_id
    return await execute(host.tools(), request.name, request.arguments, ctx)


async def record_before_effect(host: LoopHost, request: ToolRequest) -> None:
    """Record before effect (persistence, DESIGN §4): a tool that can change the
    workspace — writes files, runs a command, or is an app's tool we cannot vouch
    for — starts only once the events that request it are durable: the
    ``assistant.message`` naming the call and its ``tool.execution_start`` are
    written and fsynced. A crash or kill at any moment then leaves no change
    without its request in the log, and resume closes the call as interrupted.

    This is the log's second fsync point, beside the turn end. Read-only tools
    skip it: they change nothing. Raises
    :class:`~agent.log.writer.LogWriteError` when the log cannot be written: the
    tool never runs.
    """
    tool = host.tools().get(request.name)
    if tool is None or tool.may_have_effects():
        await host.persist()


def close_pending(host: LoopHost, pending: list[ToolRequest], turn_id: str) -> None:
    """Close the calls an abort cut short, so each request has its result."""
    why = INTERRUPTED if host.halted is None else STOPPED_UNRECORDED
    for request in pending:
        host.emit(
            ToolExecutionCompleteData(
                tool_call_id=request.tool_call_id,
                success=False,
                error=ToolErrorPayload(message=why, code="interrupted"),
                turn_id=turn_id,
            )
        )


def tool_request(call: ToolCall) -> ToolRequest:
    arguments: Any = call.arguments
    try:
        parsed = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        arguments = parsed
    return ToolRequest(
        tool_call_id=call.id,
        name=call.name,
        arguments=arguments,
        recovered_from_text=True if call.from_text else None,
    )


def with_hook_context(
    result: ToolResult, before: ToolDecision | None, after: ToolAfterword | None
) -> ToolResult:
    """Apply what the tool hooks said to the result the model reads."""
    if after is not None and after.content is not None and result.success:
        result = dataclasses.replace(result, content=after.content)
    extra = "\n\n".join(
        c for c in (before.context if before else None, after.context if after else None) if c
    )
    if not extra:
        return result
    if result.success:
        return dataclasses.replace(result, content=f"{result.content}\n\n{extra}")
    error = result.error or result.content
    return dataclasses.replace(result, error=f"{error}\n\n{extra}")


def summary_of(arguments: Any) -> str | None:
    """The summary a task_complete call gave, if it gave one as text."""
    if isinstance(arguments, dict):
        summary = arguments.get("summary")
        return summary if isinstance(summary, str) else None
    return None
