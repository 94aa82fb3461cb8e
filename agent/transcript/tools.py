"""The model's tool calls in the transcript: their cards, and the permission each asks.

A tool call's :class:`~agent.transcript.blocks.ToolCallBlock` hangs on the turn that announced
it; a call no assistant message announced gets one on the current turn (or a
detached one at the top level). A permission request marks the card of its call,
or becomes a notice of its own when it names no known call.

The state lives on the :class:`~agent.transcript.fold.TranscriptState` (its indexes by tool
call id and request id); these functions fold the events into it.

Pure Python: no UI imports.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from agent.events.schema import (
    PermissionCompletedData,
    PermissionRequestedData,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
)
from agent.transcript.blocks import (
    UNKNOWN_TOOL,
    Change,
    NoticeBlock,
    ToolCallBlock,
    TurnBlock,
    last_line,
)

if TYPE_CHECKING:
    from agent.transcript.state import TranscriptState


def tool_for(
    t: TranscriptState, tool_call_id: str, turn: TurnBlock | None, name: str | None
) -> tuple[ToolCallBlock, TurnBlock | None, list[Change]]:
    """The block of a tool call; created on ``turn`` (else the open turn, else
    detached at the top level) when no event announced it before."""
    tool = t._tools.get(tool_call_id)
    if tool is not None:
        return tool, t._tool_turn[tool_call_id], []
    parent = turn if turn is not None else t._open_turn
    tool = ToolCallBlock(
        t._new_id(),
        tool_call_id,
        name or UNKNOWN_TOOL,
        turn_number=parent.number if parent is not None else None,
    )
    t._tools[tool_call_id] = tool
    t._tool_turn[tool_call_id] = parent
    t._open_tools[tool_call_id] = tool
    t.tool_calls += 1
    if parent is not None:
        parent.tools.append(tool)
    else:
        t.items.append(tool)
    return tool, parent, [Change("added", tool, parent)]


def mark_interrupted(t: TranscriptState, tool: ToolCallBlock) -> None:
    tool.status = "interrupted"
    tool.last_line = None
    parent = t._tool_turn.get(tool.tool_call_id)
    if parent is not None:
        parent._interrupted = True


def tool_start(t: TranscriptState, d: ToolExecutionStartData, ts: datetime | None) -> list[Change]:
    turn = t._turns_by_id.get(d.turn_id) if d.turn_id else None
    tool, _parent, changes = tool_for(t, d.tool_call_id, turn, d.tool_name)
    t.todos.call_started(d.tool_name, d.arguments)
    if d.tool_name:
        tool.name = d.tool_name
    if d.arguments is not None:
        tool.arguments = d.arguments
    if d.mcp_server_name:
        tool.mcp_server, tool.mcp_tool = d.mcp_server_name, d.mcp_tool_name
    if tool.status == "pending":
        tool.status = "running"
    if tool.started_at is None:
        tool.started_at = ts
    return changes or [t._tool_change(tool)]


def tool_partial(t: TranscriptState, d: ToolExecutionPartialResultData) -> list[Change]:
    tool, _parent, changes = tool_for(t, d.tool_call_id, None, None)
    if tool.finished:
        return changes  # late output of a call already closed
    tool.status = "running"
    line = last_line(d.partial_output)
    if line is not None:
        tool.last_line = line
    return changes or [t._tool_change(tool)]


def tool_complete(
    t: TranscriptState, d: ToolExecutionCompleteData, ts: datetime | None
) -> list[Change]:
    turn = t._turns_by_id.get(d.turn_id) if d.turn_id else None
    tool, _parent, changes = tool_for(t, d.tool_call_id, turn, None)
    if d.success:
        tool.status = "success"
    elif d.error is not None and d.error.code == "interrupted":
        mark_interrupted(t, tool)
    elif tool.status != "interrupted":
        tool.status = "failure"
    tool.ended_at = ts
    tool.last_line = None
    if d.result is not None:
        tool.result = d.result.content
        tool.detailed_content = d.result.detailed_content
    if d.error is not None:
        tool.error = d.error.message
    t._open_tools.pop(d.tool_call_id, None)
    return changes or [t._tool_change(tool)]


def permission_requested(
    t: TranscriptState, d: PermissionRequestedData, ts: datetime | None
) -> list[Change]:
    call_id = d.permission_request.get("toolCallId")
    tool = t._tools.get(call_id) if isinstance(call_id, str) else None
    if tool is not None:
        tool.permission = "requested"
        t._permissions[d.request_id] = tool
        return [t._tool_change(tool)]
    kind = str(d.permission_request.get("kind") or "permission")
    notice = NoticeBlock(
        t._new_id(),
        "permission",
        f"{kind}: permission requested",
        subtype=kind,
        timestamp=ts,
    )
    t._permissions[d.request_id] = notice
    return [t._add(notice)]


def permission_completed(
    t: TranscriptState, d: PermissionCompletedData, ts: datetime | None
) -> list[Change]:
    outcome = str(d.result.get("kind") or "completed")
    target = t._permissions.pop(d.request_id, None)
    if target is None and d.tool_call_id:
        target = t._tools.get(d.tool_call_id)
    match target:
        case ToolCallBlock():
            target.permission = outcome
            return [t._tool_change(target)]
        case NoticeBlock():
            target.message = f"{target.subtype or 'permission'}: {outcome}"
            return [Change("updated", target)]
        case _:
            notice = NoticeBlock(t._new_id(), "permission", f"permission: {outcome}", timestamp=ts)
            return [t._add(notice)]
