"""Tokens and cost in the transcript: each turn's usage and the session's totals.

A turn's usage comes from the richest source seen: a usage checkpoint (persisted,
cumulative) over ``assistant.usage`` (live, per call) over the output count an
``assistant.message`` carries. The session totals move by each change to a turn's.

Pure Python: no UI imports.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from agent.events.schema import AssistantUsageData, SessionShutdownData, SessionUsageCheckpointData
from agent.events.usage_ledger import UsageTotals, totals_of
from agent.transcript.blocks import Change, InfoRowBlock, TurnBlock
from agent.transcript.info_rows import usage_body, usage_summary

if TYPE_CHECKING:
    from agent.transcript.state import TranscriptState


def set_turn_usage(
    t: TranscriptState,
    turn: TurnBlock,
    input_tokens: int | None,
    output_tokens: int | None,
    cost: float | None,
) -> None:
    """Set a turn's usage and move the session totals by the difference."""
    t.input_tokens += (input_tokens or 0) - (turn.input_tokens or 0)
    t.output_tokens += (output_tokens or 0) - (turn.output_tokens or 0)
    t.cost += (cost or 0.0) - (turn.cost or 0.0)
    turn.input_tokens, turn.output_tokens, turn.cost = input_tokens, output_tokens, cost


def usage(t: TranscriptState, d: AssistantUsageData) -> list[Change]:
    turn = t._open_turn or t._last_turn
    if turn is None:
        t.input_tokens += d.input_tokens or 0
        t.output_tokens += d.output_tokens or 0
        t.cost += d.cost or 0.0
        return []
    if turn._usage_from == "checkpoint":
        return []  # the persisted record already set this turn's usage
    if turn._usage_from == "message":
        # Usage supersedes the output count the assistant.message carried.
        turn._usage_from = "usage"
        set_turn_usage(t, turn, None, None, None)

    def plus(a: int | None, b: int | None) -> int | None:
        return a if b is None else (a or 0) + b

    cost = turn.cost if d.cost is None else (turn.cost or 0.0) + d.cost
    set_turn_usage(
        t,
        turn,
        plus(turn.input_tokens, d.input_tokens),
        plus(turn.output_tokens, d.output_tokens),
        cost,
    )
    if d.model:
        t._answered_by(turn, d.model)
    return [Change("updated", turn)]


def usage_checkpoint(t: TranscriptState, d: SessionUsageCheckpointData) -> list[Change]:
    """The session's cumulative usage: what grew since the last checkpoint is the
    turn's that made the call (superseding assistant.usage, which replay lacks);
    before any turn (a replay window's seed) it only sets the session's totals."""
    if "provider_model_metrics" not in d.model_fields_set:
        return []  # Copilot's -p runs write none: such a checkpoint counts nothing
    now = totals_of(d)
    # Totals only grow; a smaller one starts a new series (e.g. another writer).
    base = t._checkpointed if now.covers(t._checkpointed) else UsageTotals()
    grown = now.minus(base)
    t._checkpointed = now
    turn = t._open_turn or t._last_turn
    if turn is None:
        t.input_tokens += grown.input_tokens
        t.output_tokens += grown.output_tokens
        t.cost += grown.cost
        return []
    if turn._usage_from != "checkpoint":
        turn._usage_from = "checkpoint"
        set_turn_usage(t, turn, None, None, None)
    set_turn_usage(
        t,
        turn,
        (turn.input_tokens or 0) + grown.input_tokens,
        (turn.output_tokens or 0) + grown.output_tokens,
        (turn.cost or 0.0) + grown.cost,
    )
    return [Change("updated", turn)]


def usage_summary_row(
    t: TranscriptState, d: SessionShutdownData, ts: datetime | None
) -> list[Change]:
    """The usage a shutdown reports per model, as a row after its notice."""
    wire = d.wire()
    title = usage_summary(wire)
    if title is None:
        return []
    row = InfoRowBlock(t._new_id(), "usage", title, usage_body(wire), timestamp=ts)
    return [t._add(row)]
