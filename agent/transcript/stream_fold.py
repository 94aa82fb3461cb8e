"""Copilot CLI's streaming events, folded into the turn and the tool call they belong to.

``copilot -p … --output-format json`` prints every event as it happens, the ones a
session-state file never holds included: tool calls whose arguments stream in
(``assistant.tool_call_delta``), model calls (``model.call_*``), reply progress
(``assistant.streaming_delta``), the loop going idle (``assistant.idle``), and, last,
a ``result`` line that is not a session event at all (no ``data``, no ``id``) with
the run's exit code and usage. None of these is a row of its own:

* a tool call's arguments fill its card (pending) as they stream;
* a model call times its turn (the request going out is when the first-token
  clock starts) and sets the model that answered; a second call in one turn is a
  retry, with the reason the failed call gave;
* ``assistant.idle`` ends the loop like ``session.idle``;
* ``result`` closes whatever is still open (the process is gone), keeps the run's
  figures in :attr:`StreamState.result` and ends the timeline with one row.

:class:`agent.transcript.fold.TranscriptState` hands these events to :func:`fold`; the state
they need lives in its ``stream`` (:class:`StreamState`).

Pure Python: no UI imports.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from agent.events.run_result import RESULT_TYPE, RunResult, RunUsage, run_result_of
from agent.events.schema import (
    AssistantIdleData,
    AssistantStreamingDeltaData,
    AssistantToolCallDeltaData,
    Event,
    ModelCallFailureData,
    ModelCallFinalResultData,
    ModelCallFinishedData,
    ModelCallStartData,
    SessionIdleData,
    UnknownData,
)
from agent.transcript.blocks import UNKNOWN_TOOL, Change, NoticeBlock
from agent.transcript.partial_json import JsonPrefix
from agent.transcript.session import idle, interrupt
from agent.transcript.tools import tool_for
from agent.transcript.turns import retry, turn_for

if TYPE_CHECKING:
    from agent.transcript.state import TranscriptState

# Arguments are re-read while they stream only up to this many characters: the
# card shows their start, and the finished call brings them whole. It bounds the
# work (and memory) a long argument (a file's content) costs.
PARSE_LIMIT = 4096
# ...and once per this many new characters (or a quote: a key or value is complete),
# not per piece: a piece is a few characters, and a card need not redraw for each.
PARSE_EVERY = 32

STREAM_DATA = (
    AssistantToolCallDeltaData,
    AssistantStreamingDeltaData,
    AssistantIdleData,
    ModelCallStartData,
    ModelCallFinishedData,
    ModelCallFailureData,
    ModelCallFinalResultData,
)


def handles(event: Event) -> bool:
    """Whether :func:`fold` is the one to fold ``event``."""
    return isinstance(event.data, STREAM_DATA) or (
        event.type == RESULT_TYPE and isinstance(event.data, UnknownData)
    )


def fold(t: TranscriptState, event: Event, ts: datetime | None) -> list[Change]:
    """Fold one event :func:`handles` into ``t``; return the blocks it changed."""
    match event.data:
        case AssistantToolCallDeltaData() as d:
            return _tool_call_delta(t, d, ts)
        case ModelCallStartData() as d:
            return _call_start(t, d, ts)
        case ModelCallFailureData() as d:
            if d.parent_tool_call_id is None and d.source in (None, "top_level"):
                turn = t._open_turn
                if turn is not None:
                    t.stream.failure[turn.block_id] = _failure_reason(d)
            return []
        case ModelCallFinishedData() as d:
            turn = t.get_turn(d.turn_id)
            if turn is not None and d.outcome not in (None, "success"):
                t.stream.failure.setdefault(turn.block_id, f"model call {d.outcome}")
            return []
        case ModelCallFinalResultData() | AssistantStreamingDeltaData():
            # Telemetry of the call the turn already shows: the reply's own events
            # (text, usage, errors) say what it tells.
            return []
        case AssistantIdleData() as d:
            return idle(t, SessionIdleData(aborted=d.aborted), ts)
        case UnknownData() as d:
            return _result(t, event, d, ts)
    return []


def _tool_call_delta(
    t: TranscriptState, d: AssistantToolCallDeltaData, ts: datetime | None
) -> list[Change]:
    tool, parent, changes = tool_for(t, d.tool_call_id, None, d.tool_name)
    if d.tool_name and tool.name == UNKNOWN_TOOL:
        tool.name = d.tool_name
    if parent is not None:
        parent.speed.token(ts, parent.started_at)  # the model writing the call is output too
    if tool.status != "pending":
        return changes  # the call already runs: its arguments came whole
    streamed = t.stream.arguments.setdefault(d.tool_call_id, JsonPrefix())
    if len(streamed.text) > PARSE_LIMIT:
        return changes
    streamed.feed(d.input_delta)
    if len(streamed.text) - streamed.read_at < PARSE_EVERY and '"' not in d.input_delta:
        return changes
    # A custom tool (apply_patch) takes free text, not JSON: it is shown as it comes.
    value = streamed.text if d.tool_type == "custom" else streamed.value()
    if value is not None and value != tool.arguments:
        tool.arguments = value
        return changes or [t._tool_change(tool)]
    return changes


def _call_start(t: TranscriptState, d: ModelCallStartData, ts: datetime | None) -> list[Change]:
    if d.parent_tool_call_id is not None:
        return []  # a sub-agent's call: not one of this turn's
    turn, changes = turn_for(t, d.turn_id, ts)
    calls = t.stream.calls.get(turn.block_id, 0) + 1
    t.stream.calls[turn.block_id] = calls
    if calls - 1 > turn.retries:
        reason = t.stream.failure.pop(turn.block_id, None) or "model call retried"
        changes += retry(turn, reason)
        changes += _drop_streamed_calls(t)
    # The arguments streamed by earlier calls have arrived whole by now.
    t.stream.arguments.clear()
    turn.speed.attempt(ts)
    if d.model:
        turn.model = d.model
    changes.append(Change("updated", turn))
    return changes


def _drop_streamed_calls(t: TranscriptState) -> list[Change]:
    """A retried call's tool calls that were still being written never happen:
    their cards end interrupted instead of waiting forever."""
    changes: list[Change] = []
    for call_id in t.stream.arguments:
        tool = t.get_tool(call_id)
        if tool is not None and tool.status == "pending":
            # Not the turn's fault: the retry's reply is its answer.
            tool.status = "interrupted"
            t._open_tools.pop(call_id, None)
            changes.append(t._tool_change(tool))
    return changes


def _failure_reason(d: ModelCallFailureData) -> str:
    status = f"HTTP {d.status_code}" if d.status_code else ""
    words = d.error_message or d.error_type or ""
    return ": ".join(p for p in (status, words) if p) or "model call failed"


def _result(t: TranscriptState, event: Event, d: UnknownData, ts: datetime | None) -> list[Change]:
    run = run_result_of(event)
    if run is None:
        return [t._raw(event.type, d, ts)]
    t.stream.result = run
    if run.session_id and not t.session_id:
        t.session_id = run.session_id
    # The run is over: a turn or a tool call still open will never finish.
    changes = interrupt(t, ts, "aborted", recent=False)
    t.busy = False
    notice = NoticeBlock(t._new_id(), "shutdown", run_summary(run), subtype="result", timestamp=ts)
    changes.append(t._add(notice))
    return changes


def run_summary(run: RunResult) -> str:
    """One line: how the run ended, how long it took, what it used and changed."""
    head = "run ended" if run.exit_code is None else f"run ended (exit {run.exit_code})"
    parts = [head]
    for name, value in run_facts(run)[1:]:
        if name == "Premium requests":
            value += " premium request" + ("" if value == "1" else "s")
        parts.append(value)
    return " · ".join(parts)


def run_facts(run: RunResult | None) -> list[tuple[str, str]]:
    """The run's figures as (name, value) pairs, its exit code first (for an
    export's header, and the row that ends the run)."""
    if run is None:
        return []
    facts = [("Exit code", "?" if run.exit_code is None else str(run.exit_code))]
    usage = run.usage or RunUsage()
    if usage.session_duration_ms is not None:
        took = _seconds(usage.session_duration_ms)
        if usage.total_api_duration_ms is not None:
            took += f" ({_seconds(usage.total_api_duration_ms)} in model calls)"
        facts.append(("Run time", took))
    if usage.premium_requests is not None:
        facts.append(("Premium requests", f"{usage.premium_requests:g}"))
    changed = usage.code_changes
    if changed is not None and changed.files_modified:
        count = len(changed.files_modified)
        facts.append(
            (
                "Code changes",
                f"{count} file(s) changed, +{changed.lines_added} -{changed.lines_removed}",
            )
        )
    return facts


def _seconds(ms: float) -> str:
    if not math.isfinite(ms):
        return "?"  # JSON read by Python may hold Infinity or NaN
    seconds = max(0.0, ms / 1000)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s"
