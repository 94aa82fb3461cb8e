"""Event streams built in the loop's order, for tests of whatever reads them (the
transcript fold, the timeline, the widgets): :class:`Stream` emits sessions, turns and
tool calls with a clock moving 1 s per event."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.events.schema import (
    AssistantMessageData,
    AssistantMessageDeltaData,
    AssistantTurnEndData,
    AssistantTurnStartData,
    AssistantUsageData,
    Event,
    EventData,
    Mode,
    SessionIdleData,
    SessionStartData,
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
    ToolRequest,
    ToolResultPayload,
    UserMessageData,
    WorkingDirectoryContext,
    event_from_json,
)

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
MODEL = "test-model"


@dataclass
class ToolSpec:
    """One tool call of a turn: its request, its streamed lines and its result."""

    call_id: str
    name: str
    arguments: Any
    success: bool = True
    output: str = "ok"
    lines: tuple[str, ...] = ()
    seconds: float = 2.0  # from execution_start to execution_complete


class Stream:
    """Emits events in the loop's order, with a clock moving 1 s per event."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.clock = T0
        self._parent: str | None = None

    def emit(self, data: EventData, *, after: float = 1.0) -> Event:
        self.clock += timedelta(seconds=after)
        stamp = self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        event = Event.new(data, self._parent).model_copy(update={"timestamp": stamp})
        if not event.ephemeral:
            self._parent = event.id
        self.events.append(event)
        return event

    def start(self) -> None:
        self.emit(
            SessionStartData(
                session_id="sess-1",
                copilot_version="0.1.0",
                start_time="2026-11-30T12:00:00.000Z",
                selected_model=MODEL,
                context=WorkingDirectoryContext(cwd="/repo", branch="main"),
            )
        )

    def user(self, content: str, mode: Mode = "interactive", *, nudge: bool = False) -> None:
        self.emit(
            UserMessageData(
                content=content, agent_mode=mode, is_autopilot_continuation=True if nudge else None
            )
        )

    def turn(
        self,
        turn_id: str,
        text: str,
        tools: tuple[ToolSpec, ...] = (),
        *,
        usage: tuple[int, int, float] = (100, 20, 0.01),
        end: bool = True,
    ) -> None:
        self.emit(AssistantTurnStartData(turn_id=turn_id, model=MODEL))
        message_id = f"msg-{turn_id}"
        half = len(text) // 2
        for chunk in (text[:half], text[half:]):
            if chunk:
                self.emit(AssistantMessageDeltaData(message_id=message_id, delta_content=chunk))
        requests = [
            ToolRequest(tool_call_id=t.call_id, name=t.name, arguments=t.arguments) for t in tools
        ]
        self.emit(
            AssistantMessageData(
                message_id=message_id,
                content=text,
                tool_requests=requests or None,
                turn_id=turn_id,
                model=MODEL,
                output_tokens=usage[1],
            )
        )
        self.emit(
            AssistantUsageData(
                model=MODEL, input_tokens=usage[0], output_tokens=usage[1], cost=usage[2]
            )
        )
        for spec in tools:
            self.tool(spec, turn_id)
        if end:
            self.emit(AssistantTurnEndData(turn_id=turn_id, model=MODEL))

    def tool(self, spec: ToolSpec, turn_id: str | None) -> None:
        self.emit(
            ToolExecutionStartData(
                tool_call_id=spec.call_id,
                tool_name=spec.name,
                arguments=spec.arguments,
                turn_id=turn_id,
            )
        )
        for line in spec.lines:
            self.emit(
                ToolExecutionPartialResultData(tool_call_id=spec.call_id, partial_output=line)
            )
        self.emit(
            ToolExecutionCompleteData(
                tool_call_id=spec.call_id,
                success=spec.success,
                result=ToolResultPayload(content=spec.output, detailed_content=f"[{spec.output}]"),
                error=None if spec.success else ToolErrorPayload(message=spec.output),
                turn_id=turn_id,
            ),
            after=spec.seconds,
        )

    def idle(self, *, aborted: bool = False, mode: Mode = "interactive") -> None:
        self.emit(SessionIdleData(aborted=True if aborted else None, mode=mode))

    def persisted(self) -> list[Event]:
        """What a session file holds: no ephemeral events, through JSON and back."""
        return [event_from_json(e.to_json()) for e in self.events if not e.ephemeral]
