"""Tool calls and what they ask of the user: execution, permissions, questions (forms
and the ask_user tool), the todo list's signal, tools an SDK client defines.
"""

from __future__ import annotations

from typing import Any, Literal

from agent.events.base import EventData

# A line of a ``!command``'s result that the sandbox wrote for the user (what it
# refused, what would allow it): shown whole, apart from the output's preview.
SANDBOX_NOTE_PREFIX = "sandbox: "

class ToolExecutionStartData(EventData):
    TYPE = "tool.execution_start"
    tool_call_id: str
    tool_name: str
    arguments: Any = None
    turn_id: str | None = None
    # An MCP server's tool: the server's name and the tool's own name on it.
    mcp_server_name: str | None = None
    mcp_tool_name: str | None = None


class ToolUserRequestedData(EventData):
    """A tool the user ran themselves (Copilot's ``!command`` is ``local_shell``); its
    ``tool.execution_complete`` carries ``isUserRequested`` and the output."""

    TYPE = "tool.user_requested"
    tool_call_id: str
    tool_name: str
    arguments: Any = None


class ToolExecutionPartialResultData(EventData):
    TYPE = "tool.execution_partial_result"
    EPHEMERAL = True
    tool_call_id: str
    partial_output: str


class ToolResultPayload(EventData):
    content: str
    detailed_content: str | None = None


class ToolErrorPayload(EventData):
    message: str
    code: str | None = None


class ToolExecutionCompleteData(EventData):
    TYPE = "tool.execution_complete"
    tool_call_id: str
    success: bool
    result: ToolResultPayload | None = None
    error: ToolErrorPayload | None = None
    turn_id: str | None = None
    model: str | None = None
    is_user_requested: bool | None = None


# --- permissions -------------------------------------------------------------


class PermissionRequestedData(EventData):
    TYPE = "permission.requested"
    request_id: str
    permission_request: dict[str, Any]


class PermissionCompletedData(EventData):
    TYPE = "permission.completed"
    request_id: str
    result: dict[str, Any]
    tool_call_id: str | None = None


# --- questions put to the user --------------------------------------------------


class ElicitationRequestedData(EventData):
    """A question with fixed answers (a JSON-Schema form), asked of the user."""

    TYPE = "elicitation.requested"
    request_id: str
    message: str
    mode: Literal["form", "url"] | None = "form"
    elicitation_source: str | None = None
    requested_schema: dict[str, Any] | None = None


class ElicitationCompletedData(EventData):
    """The user's answer: ``accept`` with ``content``, or ``cancel`` (dismissed)."""

    TYPE = "elicitation.completed"
    request_id: str
    action: Literal["accept", "decline", "cancel"] | None = None
    content: dict[str, Any] | None = None


# --- the model asks the user; the model's checklist ------------------------------


class UserInputRequestedData(EventData):
    """The model asks the user a question (the ask_user tool), maybe with choices."""

    TYPE = "user_input.requested"
    request_id: str
    question: str
    choices: list[str] | None = None
    allow_freeform: bool | None = None
    tool_call_id: str | None = None


class UserInputCompletedData(EventData):
    """The answer; without one, the question went unanswered (aborted while asked)."""

    TYPE = "user_input.completed"
    request_id: str
    answer: str | None = None
    was_freeform: bool | None = None


class SessionTodosChangedData(EventData):
    """Signal only, as in the SDK: the todo list changed. The list itself is in the
    arguments of the update_todos call that changed it (see agent.events.todos)."""

    TYPE = "session.todos_changed"


# --- tools defined by an SDK client --------------------------------------------


class ExternalToolRequestedData(EventData):
    """A tool the connected app defined was called; the app runs it and answers."""

    TYPE = "external_tool.requested"
    request_id: str
    session_id: str
    tool_call_id: str
    tool_name: str
    arguments: Any = None
    working_directory: str | None = None


class ExternalToolCompletedData(EventData):
    """The request is settled (answered, or abandoned by an abort)."""

    TYPE = "external_tool.completed"
    request_id: str
