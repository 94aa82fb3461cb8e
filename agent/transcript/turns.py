"""The model's turns in the transcript: opened and closed, their text and reasoning
(streamed, then final), retried model calls and cut attempts, loopdeck's notes, and
the warnings that say a call was retried or its output cut at the limit.

Assistant output outside a turn opens an implied one. A retried call keeps what the
failed attempt streamed apart, marked cut.

The state lives on the :class:`~agent.transcript.fold.TranscriptState` (its turns by turn id,
message id and reasoning id); these functions fold the events into it.

Pure Python: no UI imports.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from agent.events.schema import (
    WARNING_OUTPUT_TRUNCATED,
    AssistantMessageData,
    AssistantMessageDeltaData,
    AssistantMessageStartData,
    AssistantReasoningData,
    AssistantReasoningDeltaData,
    AssistantTurnEndData,
    AssistantTurnRetryData,
    AssistantTurnStartData,
    Event,
    SessionCustomNotificationData,
    SessionWarningData,
)
from agent.events.turn_notes import CutAttempt, TurnStats, cap_cut, read_note, turn_of
from agent.transcript.blocks import Change, NoticeBlock, TurnBlock, parse_timestamp
from agent.transcript.tools import tool_for
from agent.transcript.usage import set_turn_usage

if TYPE_CHECKING:
    from agent.transcript.state import TranscriptState


def new_turn(
    t: TranscriptState, turn_id: str | None, model: str | None, ts: datetime | None
) -> TurnBlock:
    t.turns += 1
    if model:
        t.model = model
    turn = TurnBlock(
        t._new_id(),
        t.turns,
        turn_id or None,
        model=model or t.model,
        requested_model=model or t.selected_model,
        started_at=ts,
    )
    t.items.append(turn)
    t._open_turn = t._last_turn = t._recent_turn = turn
    if turn_id:
        t._turns_by_id[turn_id] = turn
    t.busy = True
    return turn


def turn_for(
    t: TranscriptState,
    turn_id: str | None,
    ts: datetime | None,
    by_stream: dict[str, TurnBlock] | None = None,
    stream_id: str | None = None,
) -> tuple[TurnBlock, list[Change]]:
    """The turn an assistant event belongs to; opens an implied one if none."""
    turn: TurnBlock | None = None
    if turn_id:
        turn = t._turns_by_id.get(turn_id)
    if turn is None and by_stream is not None and stream_id is not None:
        turn = by_stream.get(stream_id)
    if turn is None:
        turn = t._open_turn
    if turn is not None:
        return turn, []
    turn = new_turn(t, turn_id, None, ts)
    return turn, [Change("added", turn)]


def retry(turn: TurnBlock, reason: str | None) -> list[Change]:
    """A model call of ``turn`` is retried: what the failed attempt streamed is
    kept apart, marked cut (loopdeck's attempt_cut note has usually done so)."""
    if turn._text.live:
        cut(turn, turn.retries + 1, cap_cut(turn._text.live))
    turn.retries += 1
    turn.retry_reason = reason
    turn.speed.attempt(None)
    turn._text.discard_live()
    turn._reasoning.discard_live()
    return [Change("updated", turn)]


def cut(turn: TurnBlock, attempt: int, text: str) -> None:
    turn.cut_text, turn.cut_attempt = text, attempt
    turn.speed.attempt(None)  # a speed is shown for a reply that arrived, not a cut one
    turn._text.discard_live()


def turn_retry(t: TranscriptState, d: AssistantTurnRetryData, ts: datetime | None) -> list[Change]:
    turn = t._turns_by_id.get(d.turn_id) or t._open_turn
    if turn is None:
        msg = d.reason or "model call retried"
        notice = NoticeBlock(t._new_id(), "warning", msg, subtype="model_retry", timestamp=ts)
        return [t._add(notice)]
    return retry(turn, d.reason)


def turn_start(t: TranscriptState, d: AssistantTurnStartData, ts: datetime | None) -> list[Change]:
    changes: list[Change] = []
    previous = t._open_turn
    if previous is not None:
        # A turn that never ended: the new one supersedes it.
        previous.status = "done"
        if previous.ended_at is None:
            previous.ended_at = ts
        changes.append(Change("updated", previous))
    turn = new_turn(t, d.turn_id, d.model, ts)
    changes.append(Change("added", turn))
    return changes


def turn_end(t: TranscriptState, d: AssistantTurnEndData, ts: datetime | None) -> list[Change]:
    turn = t._turns_by_id.get(d.turn_id) or t._open_turn
    if turn is None:
        return []
    if turn.status == "running":
        turn.status = "aborted" if turn._interrupted else "done"
        turn.ended_at = ts
    elif turn.ended_at is None:
        turn.ended_at = ts
    if d.model and not turn.model:
        turn.model = d.model
    if turn is t._open_turn:
        t._open_turn = None
    if turn.status == "done" and not turn.tools:
        t._answer_turn = turn
    return [Change("updated", turn)]


def message_start(
    t: TranscriptState, d: AssistantMessageStartData, ts: datetime | None
) -> list[Change]:
    turn, changes = turn_for(t, None, ts, t._turns_by_message, d.message_id)
    t._turns_by_message[d.message_id] = turn
    if not t.stream.timed(turn):  # else the model call started the clock already
        turn.speed.attempt(ts)
    return changes


def message_delta(
    t: TranscriptState, d: AssistantMessageDeltaData, ts: datetime | None
) -> list[Change]:
    turn, changes = turn_for(t, None, ts, t._turns_by_message, d.message_id)
    t._turns_by_message[d.message_id] = turn
    if turn._text.delta(d.message_id, d.delta_content):
        turn.cut_text = ""  # the next attempt's reply takes the cut one's place
        turn.speed.token(ts, turn.started_at)
        changes.append(Change("updated", turn))
    return changes


def message(t: TranscriptState, d: AssistantMessageData, ts: datetime | None) -> list[Change]:
    turn, changes = turn_for(t, d.turn_id, ts, t._turns_by_message, d.message_id)
    t._turns_by_message[d.message_id] = turn
    if turn._text.final(d.message_id, d.content):
        turn.cut_text = ""
    # Reasoning may come with the message rather than as its own event.
    reasoning = d.reasoning_text if not turn._reasoning.finals else None
    if reasoning:
        turn._reasoning.final(f"{d.message_id}/reasoning", reasoning)
    if d.model:
        t._answered_by(turn, d.model)
    if d.output_tokens is not None and turn._usage_from == "message":
        set_turn_usage(t, turn, turn.input_tokens, d.output_tokens, turn.cost)
    changes.append(Change("updated", turn))
    for request in d.tool_requests or []:
        tool, _parent, added = tool_for(t, request.tool_call_id, turn, request.name)
        if request.name:
            tool.name = request.name
        if request.arguments is not None:
            tool.arguments = request.arguments
        changes.extend(added or [t._tool_change(tool)])
    if not d.tool_requests and not turn.tools:
        t._answer_turn = turn
    return changes


def reasoning_delta(
    t: TranscriptState, d: AssistantReasoningDeltaData, ts: datetime | None
) -> list[Change]:
    turn, changes = turn_for(t, None, ts, t._turns_by_reasoning, d.reasoning_id)
    t._turns_by_reasoning[d.reasoning_id] = turn
    if turn._reasoning.delta(d.reasoning_id, d.delta_content):
        turn.speed.token(ts, turn.started_at)
        changes.append(Change("updated", turn))
    return changes


def reasoning(t: TranscriptState, d: AssistantReasoningData, ts: datetime | None) -> list[Change]:
    turn, changes = turn_for(t, None, ts, t._turns_by_reasoning, d.reasoning_id)
    t._turns_by_reasoning[d.reasoning_id] = turn
    stream = turn._reasoning
    if d.content and not stream.live and stream.committed.endswith(d.content):
        # Copilot writes the reasoning on the message first (reasoningText), then
        # as its own event: shown once.
        stream.finals.add(d.reasoning_id)
        return changes
    if stream.final(d.reasoning_id, d.content):
        changes.append(Change("updated", turn))
    return changes


def note(t: TranscriptState, event: Event, d: SessionCustomNotificationData) -> list[Change]:
    """loopdeck's notes about a turn (agent/events/turn_notes.py); others are shown raw."""
    note = read_note(d)
    if note is None:
        return [t._raw(event.type, d, parse_timestamp(event.timestamp))]
    turn_id = turn_of(d)
    turn = (t._turns_by_id.get(turn_id) if turn_id else None) or t._open_turn
    if turn is None:
        return []
    match note:
        case TurnStats():
            turn.speed.settle(note)
        case CutAttempt():
            cut(turn, note.attempt, note.content)
    return [Change("updated", turn)]


def warning(t: TranscriptState, d: SessionWarningData, ts: datetime | None) -> list[Change]:
    notice = NoticeBlock(t._new_id(), "warning", d.message, subtype=d.warning_type, timestamp=ts)
    changes = [t._add(notice)]
    if d.warning_type == "model_retry" and t._open_turn is not None:
        changes.extend(retry(t._open_turn, d.message))
    turn = t._open_turn or t._last_turn
    if d.warning_type == WARNING_OUTPUT_TRUNCATED and turn is not None:
        turn.cut_at_limit = True
        changes.append(Change("updated", turn))
    return changes
