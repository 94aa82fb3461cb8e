"""The user's own shell commands (``!cmd``) folded into :class:`ShellBlock` rows.

Copilot records a ``!command`` as ``tool.user_requested`` (tool ``local_shell``, the
command in its arguments) and then a ``tool.execution_complete`` with
``isUserRequested`` that carries the output; a ``user.message`` with ``agentMode:
"shell"`` may announce it first. All three land on one block, so the same row
draws Copilot's commands and loopdeck's. The rest of the transcript never sees
these calls: they are not the model's tool calls and belong to no turn.

Pure Python: no UI imports.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

from agent.events.schema import (
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolUserRequestedData,
    UserMessageData,
)
from agent.transcript.blocks import ShellBlock, last_line


def command_of(tool_name: str, arguments: object) -> str:
    """The command line a user-requested call ran (its arguments' ``command``), else
    the tool and its arguments as they were recorded."""
    if isinstance(arguments, dict):
        command = arguments.get("command")
        if isinstance(command, str) and command.strip():
            return command
    if arguments is None:
        return tool_name
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{tool_name} {shown}"


class UserShell:
    """The shell blocks of one transcript, found by tool call id in O(1)."""

    def __init__(self, new_id: Callable[[], int]) -> None:
        self._new_id = new_id
        self._by_call: dict[str, ShellBlock] = {}
        self._open: list[ShellBlock] = []  # running, oldest first
        self._announced: ShellBlock | None = None  # from user.message, no call id yet

    def owns(self, tool_call_id: str) -> bool:
        return tool_call_id in self._by_call

    @property
    def running(self) -> bool:
        """Whether a command has not finished yet."""
        return bool(self._open)

    def message(self, d: UserMessageData, ts: datetime | None) -> ShellBlock:
        """A ``user.message`` in shell mode: the command, its output to come."""
        command = d.content.strip()
        command = command[1:].lstrip() if command.startswith("!") else command
        block = ShellBlock(self._new_id(), command, started_at=ts)
        self._open.append(block)
        self._announced = block
        return block

    def requested(self, d: ToolUserRequestedData, ts: datetime | None) -> tuple[ShellBlock, bool]:
        """The call that runs the command: the block the message announced, else a new
        one. Returns the block and whether it is new."""
        command = command_of(d.tool_name, d.arguments)
        block, self._announced = self._announced, None
        is_new = block is None
        if block is None:
            block = ShellBlock(self._new_id(), command, started_at=ts)
            self._open.append(block)
        elif not block.command:
            block.command = command
        block.tool_call_id = d.tool_call_id
        block.tool_name = d.tool_name
        self._by_call[d.tool_call_id] = block
        return block, is_new

    def partial(self, d: ToolExecutionPartialResultData) -> ShellBlock | None:
        block = self._by_call.get(d.tool_call_id)
        if block is None or block.finished:
            return None
        line = last_line(d.partial_output)
        if line is not None:
            block.last_line = line
        return block

    def complete(self, d: ToolExecutionCompleteData, ts: datetime | None) -> ShellBlock | None:
        block = self._by_call.get(d.tool_call_id)
        if block is None:
            return None
        if d.success:
            block.status = "success"
        elif d.error is not None and d.error.code == "interrupted":
            block.status = "interrupted"
        else:
            block.status = "failure"
        block.ended_at = ts
        block.last_line = None
        if d.result is not None:
            block.output = d.result.detailed_content or d.result.content
        if d.error is not None:
            block.error = d.error.message
        self._forget(block)
        return block

    def interrupt(self, ts: datetime | None) -> list[ShellBlock]:
        """Every command still running will never finish (the session ended)."""
        closed = [block for block in self._open if not block.finished]
        for block in closed:
            block.status = "interrupted"
            block.last_line = None
            if block.ended_at is None:
                block.ended_at = ts
        self._open.clear()
        self._announced = None
        return closed

    def _forget(self, block: ShellBlock) -> None:
        if block in self._open:
            self._open.remove(block)
        if self._announced is block:
            self._announced = None
