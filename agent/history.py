"""Events -> the model's conversation. One fold, used live and on resume.

The session applies every event it emits (or reads back) to :class:`History`, so
the messages a resumed session sends are exactly those the live one would have.
"""

from __future__ import annotations

import json
from typing import Any

from agent.events import (
    AssistantMessageData,
    Event,
    SessionContextClearedData,
    ToolExecutionCompleteData,
    ToolUserRequestedData,
    UserMessageData,
)
from agent.shell_escape import shell_context


def arguments_json(arguments: Any) -> str:
    """Arguments as JSON text for the provider.

    Malformed arguments (kept verbatim in the log) are sent back as ``{}``: some
    providers reject a conversation that replays invalid JSON, and the tool result
    already tells the model what was wrong.
    """
    if isinstance(arguments, str):
        try:
            json.loads(arguments)
        except ValueError:
            return "{}"
        return arguments
    return json.dumps(arguments if arguments is not None else {})


class History:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        # Tool calls requested but not yet answered, in request order.
        self.open_calls: dict[str, str] = {}
        # Commands the user ran with ``!``, waiting for their output.
        self.user_commands: dict[str, Any] = {}

    def apply(self, event: Event) -> None:
        match event.data:
            case UserMessageData(
                content=content, attachments=attached, transformed_content=transformed
            ):
                # With attachments the model was sent their text too (transformedContent).
                text = transformed if attached and transformed else content
                self.messages.append({"role": "user", "content": text})
            case SessionContextClearedData():
                self.messages = []
                self.open_calls = {}
            case ToolUserRequestedData(tool_call_id=call_id, arguments=arguments):
                self.user_commands[call_id] = arguments
            case ToolExecutionCompleteData(tool_call_id=call_id, is_user_requested=True) as done:
                if call_id in self.user_commands:
                    arguments = self.user_commands.pop(call_id)
                    self.messages.append(
                        {"role": "user", "content": shell_context(arguments, done)}
                    )
            case AssistantMessageData(content=content, tool_requests=requests):
                message: dict[str, Any] = {"role": "assistant", "content": content or None}
                if requests:
                    message["tool_calls"] = [
                        {
                            "id": r.tool_call_id,
                            "type": "function",
                            "function": {"name": r.name, "arguments": arguments_json(r.arguments)},
                        }
                        for r in requests
                    ]
                    for r in requests:
                        self.open_calls[r.tool_call_id] = r.name
                elif not content:
                    return  # an empty final message adds nothing the model needs
                self.messages.append(message)
            case ToolExecutionCompleteData(tool_call_id=call_id, success=ok, result=res, error=err):
                if self.open_calls.pop(call_id, None) is None:
                    return
                if ok and res is not None:
                    text = res.content
                elif err is not None:
                    text = f"Error: {err.message}"
                else:
                    text = res.content if res is not None else "Error: the tool failed."
                self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
            case _:
                pass

    def with_system(self, system_prompt: str) -> list[dict[str, Any]]:
        return [{"role": "system", "content": system_prompt}, *self.messages]
