"""Events -> the model's conversation. One fold, used live and on resume.

The session applies every event it emits (or reads back) to :class:`History`, so
the messages a resumed session sends are exactly those the live one would have.
"""

from __future__ import annotations

import json
from typing import Any

from agent.events.schema import (
    SKILL_MESSAGE_PREFIX,
    AssistantMessageData,
    Event,
    SessionCompactionCompleteData,
    SessionContextClearedData,
    SessionTruncationData,
    ToolExecutionCompleteData,
    ToolUserRequestedData,
    UserMessageData,
)

# Opens the history when its oldest turns were dropped without a summary.
DROPPED_NOTE = (
    "[The start of this conversation was dropped to fit the model's context window; "
    "continue the work from what follows.]"
)

# Opens the message that stands in for compacted history (see agent/loop/compaction.py).
SUMMARY_PREFIX = (
    "<checkpoint_summary>The conversation so far was compacted. This summary replaces "
    "it; continue the work from here.</checkpoint_summary>\n\n"
)


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


def _over(content: str, cap: int) -> bool:
    """True if ``content`` takes more than ``cap`` bytes of UTF-8."""
    if len(content) > cap:
        return True
    return not content.isascii() and len(content.encode("utf-8", "surrogatepass")) > cap


def shell_context(arguments: Any, done: ToolExecutionCompleteData) -> str:
    """What the model reads of a command the user ran: it was the user's, not its own."""
    command = arguments.get("command", "") if isinstance(arguments, dict) else str(arguments)
    if done.success and done.result is not None:
        output = done.result.content
    elif done.error is not None:
        output = f"Error: {done.error.message}"
    else:
        output = done.result.content if done.result is not None else "(no output)"
    return f"The user ran a shell command themselves:\n$ {command}\n{output}"


def adds_message(event: Event) -> bool:
    """Whether :meth:`History.apply` adds a message for ``event`` (a tool result
    assumed answering an open call): what resume counts back over."""
    if event.agent_id is not None:
        return False
    match event.data:
        case UserMessageData(content=content, attachments=attached, transformed_content=text):
            return bool(text if attached and text else content)
        case AssistantMessageData(content=content, tool_requests=requests):
            return bool(requests or content)
        case ToolExecutionCompleteData():
            return True
        case _:
            return False


class History:
    """The model's messages, folded from events.

    A successful ``session.compaction_complete`` swaps the messages it covers for
    its summary; a ``session.truncation`` by loopdeck drops the oldest messages after
    the summary. Both are replayed the same way on resume.
    """

    DROP_OLDEST = "loopdeck:drop_oldest"  # session.truncation's performedBy, folded here

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        # Tool calls requested but not yet answered, in request order.
        self.open_calls: dict[str, str] = {}
        self.checkpoints = 0  # compactions applied
        # A tool result longer than this, in UTF-8 bytes, is cut for the model (None:
        # never), so one huge output cannot fill the window; set from the model's
        # window. Bytes, not characters: a CJK character costs a token or more.
        self.max_tool_bytes: int | None = None
        self._cuts: dict[int, tuple[dict[str, Any], dict[str, Any], int]] = {}
        # for_model's answer, kept and extended as messages are appended: read before
        # every call (twice), it would otherwise cost a pass over the whole history.
        self._view: list[dict[str, Any]] = []
        self._view_of: tuple[list[dict[str, Any]] | None, int | None, int] = (None, None, 0)
        self._edits = 0  # changes other than appending (a compaction, a truncation)
        self.newly_cut: list[tuple[int, int]] = []  # (length, cap) of results cut since read
        # Commands the user ran with ``!``, waiting for their output.
        self.user_commands: dict[str, Any] = {}
        # User messages that came while a reply's tool calls were open (a skill's text).
        self._after_results: list[dict[str, Any]] = []

    def apply(self, event: Event) -> None:
        if event.agent_id is not None:
            return  # a sub-agent's own conversation: the main one sees only its result
        match event.data:
            case UserMessageData(
                content=content,
                attachments=attached,
                transformed_content=transformed,
                source=source,
            ):
                # With attachments the model was sent their text too (transformedContent).
                text = transformed if attached and transformed else content
                if not text:
                    return  # Copilot writes its autopilot nudges empty: nothing to send
                if self.open_calls and (source or "").startswith(SKILL_MESSAGE_PREFIX):
                    # A skill's instructions follow its call, maybe before the reply's
                    # other results: providers want every result right after the call.
                    self._after_results.append({"role": "user", "content": text})
                    return
                self.messages.append({"role": "user", "content": text})
            case SessionContextClearedData():
                self._edits += 1
                self.messages = []
                self.open_calls = {}
                self._after_results = []
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
                if not self.open_calls and self._after_results:
                    self.messages += self._after_results
                    self._after_results = []
            case SessionCompactionCompleteData(success=True, summary_content=str(summary)):
                removed = min(event.data.messages_removed or 0, len(self.messages))
                removed = self.clean_cut(0, removed)
                self.messages[:removed] = [{"role": "user", "content": SUMMARY_PREFIX + summary}]
                self._edits += 1
                self.checkpoints += 1
                self._prune_cuts()
            case SessionTruncationData(performed_by=self.DROP_OLDEST) as d:
                start = self.summary_count()
                count = self.clean_cut(start, d.messages_removed_during_truncation)
                del self.messages[start : start + count]
                if start == 0 and self.messages and self.messages[0].get("role") != "user":
                    # Providers want the user to speak first; the task went with the
                    # dropped turns, so say so rather than open with the model.
                    self.messages.insert(0, {"role": "user", "content": DROPPED_NOTE})
                self._edits += 1
                self._prune_cuts()
            case _:
                pass

    def restore_summary(self, event: Event) -> None:
        """Resume from a checkpoint: its summary opens the history (the events from
        its ``session.compaction_start`` on are folded after it; see
        agent.session.tail_resume), and what it replaced is never read."""
        data = event.data
        assert isinstance(data, SessionCompactionCompleteData)
        summary = data.summary_content or ""
        self.messages = [{"role": "user", "content": SUMMARY_PREFIX + summary}]
        self._edits += 1
        self.checkpoints = data.checkpoint_number or self.checkpoints + 1
        self._prune_cuts()

    def for_model(self) -> list[dict[str, Any]]:
        """The messages as sent: tool results over :attr:`max_tool_bytes` cut, with a
        note (the log keeps them whole). Unchanged messages are the same objects, so
        per-message token counts stay cached. Read-only: the list is kept, and only
        messages appended since the last call are looked at."""
        cap = self.max_tool_bytes
        if cap is None:
            return self.messages
        messages, view = self.messages, self._view
        of, view_cap, edits = self._view_of
        done = len(view)
        if (
            of is not messages
            or view_cap != cap
            or edits != self._edits
            or done > len(messages)
            or (done and not _same_source(view[done - 1], messages[done - 1]))
        ):
            view, done = [], 0  # changed other than by appending: look at all of it
        for message in messages[done:]:
            content = message.get("content")
            if message.get("role") == "tool" and isinstance(content, str) and _over(content, cap):
                message = self._cut_copy(message, content, cap)
            view.append(message)
        self._view, self._view_of = view, (messages, cap, self._edits)
        return view

    def _prune_cuts(self) -> None:
        self._view_of = (None, None, 0)
        alive = {id(m) for m in self.messages}
        self._cuts = {k: v for k, v in self._cuts.items() if k in alive}

    def _cut_copy(self, message: dict[str, Any], content: str, cap: int) -> dict[str, Any]:
        cached = self._cuts.get(id(message))
        if cached is not None and cached[0] is message and cached[2] == cap:
            return cached[1]
        cut = dict(message)
        encoded = content.encode("utf-8", "surrogatepass")
        kept = encoded[:cap].decode("utf-8", "ignore")  # never half a character
        cut["content"] = (
            kept + f"\n[output cut: {len(content) - len(kept):,} more characters left out to fit "
            "the context window; narrow the command, or read a part of the file]"
        )
        self._cuts[id(message)] = (message, cut, cap)
        self.newly_cut.append((len(encoded), cap))
        return cut

    def summary_count(self) -> int:
        """1 when the history opens with a compaction summary, else 0."""
        first = self.messages[0] if self.messages else None
        content = first.get("content") if first else None
        return int(isinstance(content, str) and content.startswith(SUMMARY_PREFIX))

    def compactable_prefix(self) -> int:
        """How many leading messages a summary may replace now: all of them, up to
        the assistant message whose tool calls are still open (their results must
        keep following it)."""
        if not self.open_calls:
            return len(self.messages)
        for i, message in enumerate(self.messages):
            calls = message.get("tool_calls") or []
            if any(call.get("id") in self.open_calls for call in calls):
                return i
        return len(self.messages)

    def clean_cut(self, start: int, count: int) -> int:
        """``count`` widened so that what is left after ``start`` does not open with
        tool results whose call was removed."""
        count = max(0, min(count, len(self.messages) - start))
        while (
            start + count < len(self.messages)
            and self.messages[start + count].get("role") == "tool"
        ):
            count += 1
        return count

    def with_system(self, system_prompt: str) -> list[dict[str, Any]]:
        return [{"role": "system", "content": system_prompt}, *self.for_model()]


def _same_source(shown: dict[str, Any], message: dict[str, Any]) -> bool:
    """``shown`` (in for_model's list) stands for ``message``: it is the message, or
    the cut copy of it (same tool call)."""
    return shown is message or (
        shown.get("role") == "tool" and shown.get("tool_call_id") == message.get("tool_call_id")
    )
