"""Reading a log back for resume, tail first: index it, parse only what is needed.

A long session's ``events.jsonl`` can hold tens of thousands of events and hundreds
of megabytes. Resume needs three things from it, none of which is the whole file:

- the model's history: from the last successful compaction on (its summary stands
  in for everything before), see :func:`plan_resume`;
- the session's state: counters (from the index's types alone), cumulative usage
  (the last ``session.usage_checkpoint``), the mode, the todo list, open
  questions: a few small events found by type;
- what the timeline draws: the last :data:`TAIL_TURNS` turns.

Everything here runs off the event loop (the session calls it in a thread).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.events.schema import (
    Event,
    EventParseError,
    SessionCompactionCompleteData,
    UserMessageData,
    event_from_json,
)
from agent.log.line_heads import (
    LINE_HEAD,
    RipgrepCount,
    count_before,
    last_before,
    start_count,
)
from agent.log.replay import EventIndex
from agent.loop.history import adds_message

TAIL_TURNS = 20  # turns the timeline is given on resume (a few screens); earlier ones on demand

# Types that add a message to the model's history (see agent.loop.history.History.apply).
_MESSAGE_TYPES = frozenset({"user.message", "assistant.message", "tool.execution_complete"})
# Rare, small events whose fold matters however old they are: questions left open,
# plan reviews, mode changes.
_STATE_TYPES = frozenset(
    {
        "session.mode_changed",
        "elicitation.requested",
        "elicitation.completed",
        "exit_plan_mode.requested",
        "exit_plan_mode.completed",
        "session.title_changed",
    }
)
_TODO_TOOL = b'"update_todos"'
_TODO_LOOKBACK = 200  # events searched back from a todos_changed for the call behind it


@dataclass(slots=True)
class Counts:
    """The session's counters over a range of the log, from the index's types."""

    turns: int = 0
    model_calls: int = 0
    tool_calls: int = 0

    @classmethod
    def of(cls, types: Sequence[str]) -> Counts:
        counted = Counter(types)  # counted in C: a log's index holds tens of thousands
        turns, tools = counted["assistant.turn_start"], counted["tool.execution_complete"]
        return cls(turns, turns + counted["assistant.turn_retry"], tools)

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.turns + other.turns,
            self.model_calls + other.model_calls,
            self.tool_calls + other.tool_calls,
        )


@dataclass(slots=True)
class ResumePlan:
    """What resume reads from a log, found through its index."""

    index: EventIndex
    fold_start: int  # events from here on are folded whole (history and state)
    summary: Event | None  # the compaction_complete the history starts from
    summary_at: int  # its position (-1: none); its own history replacement is skipped
    state: list[Event] = field(default_factory=list)  # before fold_start, state only
    counted: Counts = field(default_factory=Counts)  # counters before fold_start
    tail_start: int = 0  # first event the timeline is given
    events: list[Event | None] = field(default_factory=list)  # parsed from parse_start
    parse_start: int = 0  # min(fold_start, tail_start)
    first_prompt: str = ""
    before_tail: Counts = field(default_factory=Counts)  # counters before tail_start
    usage_before_tail: int = -1  # the last usage checkpoint before tail_start (-1: none)

    def slot(self, position: int) -> Event | None:
        return self.events[position - self.parse_start]

    @property
    def shown(self) -> list[Event | None]:
        """The timeline's part (None where a line is corrupt)."""
        return self.events[self.tail_start - self.parse_start :]


def unreadable_reason(index: EventIndex, position: int) -> str:
    """Why the line at ``position`` did not parse (as the whole-file reader says it)."""
    stop = index.offsets[position + 1] if position + 1 < len(index) else index.size
    with index.path.open("rb") as fh:
        fh.seek(index.offsets[position])
        raw = fh.read(stop - index.offsets[position])
    try:
        event_from_json(raw.decode("utf-8", "replace").strip())
    except (ValueError, EventParseError) as exc:
        return f"unreadable line: {exc}"
    return "unreadable line"


def last_checkpoint(index: EventIndex) -> tuple[int, Event | None]:
    """The last successful ``session.compaction_complete``: (position, event)."""
    for i in range(len(index) - 1, -1, -1):
        if index.types[i] != "session.compaction_complete":
            continue
        found = index.read_slots(i, i + 1)
        event = found[0] if found else None
        if event is not None and isinstance(event.data, SessionCompactionCompleteData):
            data = event.data
            if data.success and isinstance(data.summary_content, str):
                return i, event
    return -1, None


def _compaction_start(index: EventIndex, complete_at: int, attempt: str | None) -> int:
    """Where the compaction that completed at ``complete_at`` started: the messages
    added while it ran stay after its summary, so the fold starts there."""
    for i in range(complete_at - 1, -1, -1):
        etype = index.types[i]
        if etype == "session.compaction_complete":
            break  # an earlier attempt's: this one's start is not before it
        if etype == "session.compaction_start":
            if attempt is None:
                return i
            found = index.read_slots(i, i + 1)
            event = found[0] if found else None
            ident = getattr(event.data, "compaction_attempt_id", None) if event else None
            if ident in (None, attempt):
                return i
    return complete_at


def _kept_before(index: EventIndex, start: int, kept: int) -> int:
    """Back from ``start`` over the events that added the ``kept`` messages a
    compaction left in place (the newest exchange, or an assistant message whose
    tool calls were open). Only those that add a message count: an empty reply or
    a sub-agent's message adds none."""
    position = start
    while kept > 0 and position > 0:
        position -= 1
        if index.types[position] in _MESSAGE_TYPES:
            found = index.read_slots(position, position + 1)
            if found and found[0] is not None and adds_message(found[0]):
                kept -= 1
    return position


def plan_resume(path: Path, tail_turns: int | None = None) -> ResumePlan:
    """Index ``path`` and parse what resume needs (blocking: call it in a thread)."""
    tail_turns = TAIL_TURNS if tail_turns is None else tail_turns
    index = EventIndex.build(path)
    types = index.types
    summary_at, summary = last_checkpoint(index)
    fold_start = 0
    if summary is not None:
        assert isinstance(summary.data, SessionCompactionCompleteData)
        data = summary.data
        fold_start = _compaction_start(index, summary_at, data.compaction_attempt_id)
        # Messages the summary did not replace (open tool calls at its start): the fold
        # must begin early enough to see them again.
        if data.pre_compaction_messages_length is not None and data.messages_removed is not None:
            kept = data.pre_compaction_messages_length - data.messages_removed
            fold_start = _kept_before(index, fold_start, max(0, kept))
    turns = len(index.turn_starts)
    tail_start = index.turn_starts[turns - tail_turns] if turns > tail_turns else 0
    plan = ResumePlan(index, fold_start, summary, summary_at, tail_start=tail_start)
    # Counted here, in the thread, once: the app needs the counts before the tail too
    # (the whole log's numbering), and a loop over the whole index on the event loop
    # took 3-16 ms.
    first, last = sorted((fold_start, tail_start))
    nearer = Counts.of(types[:first])
    further = nearer + Counts.of(types[first:last])
    if fold_start <= tail_start:
        plan.counted, plan.before_tail = nearer, further
    else:
        plan.counted, plan.before_tail = further, nearer
    plan.usage_before_tail = next(
        (i for i in range(tail_start - 1, -1, -1) if types[i] == "session.usage_checkpoint"), -1
    )
    plan.state = _state_before(index, fold_start)
    plan.parse_start = min(fold_start, tail_start)
    plan.events = index.read_slots(plan.parse_start, len(index))
    plan.first_prompt = _first_prompt(index)
    return plan


def _state_before(index: EventIndex, stop: int) -> list[Event]:
    """The few events before ``stop`` whose fold still matters, in log order."""
    types = index.types
    wanted: set[int] = set()
    for etype in _STATE_TYPES:
        wanted.update(_positions(types, etype, stop))
    last: dict[str, int] = {}
    for i in range(stop - 1, -1, -1):
        etype = types[i]
        if etype in last:
            continue
        if etype in (
            "user.message",  # the mode a prompt was sent in
            "session.usage_checkpoint",  # cumulative usage
            "session.todos_changed",  # the todo list
            "assistant.turn_start",  # a turn still open when the fold starts
            "assistant.turn_end",
        ):
            last[etype] = i
        if len(last) == 5:
            break
    start = last.get("assistant.turn_start", -1)
    if start > last.get("assistant.turn_end", -1):
        wanted.add(start)
    for etype in ("user.message", "session.usage_checkpoint"):
        if etype in last:
            wanted.add(last[etype])
    checkpoint = last.get("session.usage_checkpoint", -1)
    # Usage a log recorded after its last checkpoint (Copilot's logs keep it).
    wanted.update(i for i in range(checkpoint + 1, stop) if types[i] == "assistant.usage")
    changed = last.get("session.todos_changed")
    if changed is not None:
        wanted.add(changed)
        call = _todo_call_before(index, changed)
        if call is not None:
            wanted.add(call)
    events: list[Event] = []
    for i in sorted(wanted):
        found = index.read_slots(i, i + 1)
        if found and found[0] is not None:
            events.append(found[0])
    return events


def _positions(types: list[str], etype: str, stop: int) -> Iterator[int]:
    """Where ``etype`` is in ``types[:stop]``: searched in C (``list.index``), as rare
    types are in a long log's index."""
    at = -1
    while True:
        try:
            at = types.index(etype, at + 1, stop)
        except ValueError:
            return
        yield at


def _todo_call_before(index: EventIndex, position: int) -> int | None:
    """The update_todos call whose arguments became the list at ``position``."""
    with index.path.open("rb") as fh:
        for i in range(position - 1, max(-1, position - 1 - _TODO_LOOKBACK), -1):
            if index.types[i] != "tool.execution_start":
                continue
            fh.seek(index.offsets[i])
            if _TODO_TOOL in fh.readline():
                return i
    return None


def _first_prompt(index: EventIndex, tries: int = 20) -> str:
    """The first prompt a person typed (not an autopilot nudge)."""
    for i, etype in enumerate(index.types):
        if etype != "user.message":
            continue
        tries -= 1
        if tries < 0:
            break
        found = index.read_slots(i, i + 1)
        event = found[0] if found else None
        if event is None or not isinstance(event.data, UserMessageData):
            continue
        if not event.data.is_autopilot_continuation:
            return event.data.content
    return ""


# --- the tail before the session opens ---------------------------------------------

_TAIL_WINDOW = 1 << 20  # bytes read back from the end at first; grown until the tail fits


@dataclass(slots=True)
class TailPreview:
    """The end of a log read before its session opens, so the timeline can draw it
    while the model, the loop and the rest of the log load. :func:`plan_resume` reads
    the same tail again for the session; the app keeps what it drew when they agree."""

    index: EventIndex  # the lines from ``index.start`` (a line start) to the end
    tail_start: int  # position in ``index`` of the first event drawn
    events: list[Event]  # the events drawn (corrupt lines left out, as resume does)
    turns_before: int  # ``Counts.turns`` of the log before ``tail_start``
    usage: Event | None  # the last usage checkpoint before ``tail_start``
    usage_offset: int  # its byte offset in the log (-1: none)

    @property
    def offset(self) -> int:
        """Byte offset of the first event drawn."""
        index = self.index
        return index.offsets[self.tail_start] if self.tail_start < len(index) else index.size


def read_tail(
    path: Path, tail_turns: int | None = None, turn_count: RipgrepCount | None = None
) -> TailPreview:
    """The last ``tail_turns`` turns of ``path``, read back from its end a window at a
    time (blocking: call it in a thread). Only the lines before the window are not
    indexed: the turns among them are counted by their line's head (every writer puts
    the type first; a log that does not is indexed whole instead). ``turn_count``:
    ripgrep already counting the log's turns (started before this was called, so it
    ran meanwhile); stopped when not needed."""
    tail_turns = TAIL_TURNS if tail_turns is None else tail_turns
    nbytes = _TAIL_WINDOW
    while True:
        index = EventIndex.build_tail(path, nbytes)
        # More turns than shown, or the whole log: then the tail starts where a
        # resume of the whole index would start it.
        if len(index.turn_starts) > tail_turns or index.start == 0:
            break
        nbytes *= 4
    starts = index.turn_starts
    tail_start = starts[-tail_turns] if len(starts) > tail_turns else 0
    events = index.read(tail_start, len(index))
    turns_before = Counts.of(index.types[:tail_start]).turns
    usage_at = next(
        (i for i in range(tail_start - 1, -1, -1) if index.types[i] == "session.usage_checkpoint"),
        -1,
    )
    usage_offset = index.offsets[usage_at] if usage_at >= 0 else -1
    if index.start > 0:
        head = _HeadCounter(index)
        turns_before += head.turns(turn_count)
        if usage_at < 0:
            usage_offset = head.last("session.usage_checkpoint")
    elif turn_count is not None:
        turn_count.cancel()
    usage = _event_at(index.path, usage_offset) if usage_offset >= 0 else None
    return TailPreview(index, tail_start, events, turns_before, usage, usage_offset)


class _HeadCounter:
    """Lines of a type before a tail index's window, found by the line's head."""

    def __init__(self, tail: EventIndex) -> None:
        self.tail = tail
        self._whole: EventIndex | None = None
        if not _uniform(tail):
            self._whole = tail.head()  # an unusual writer: index the head line by line

    def turns(self, counting: RipgrepCount | None) -> int:
        """The turns before the window: by ripgrep when it is there (the whole log's
        count less the window's), in this process otherwise."""
        etype = "assistant.turn_start"
        if self._whole is not None:
            if counting is not None:
                counting.cancel()
            return sum(1 for t in self._whole.types if t == etype)
        if counting is None:
            counting = start_count(self.tail.path, etype, self.tail.start)
        total = counting.total() if counting is not None else None
        if total is None:
            return count_before(self.tail.path, etype, self.tail.start)
        # The log may have grown since the window was read: then the count is off and
        # the session, which reads the log again, draws the timeline anew.
        return total - sum(1 for t in self.tail.types if t == etype)

    def last(self, etype: str) -> int:
        """The byte offset of the last line of ``etype`` before the window (-1: none)."""
        if self._whole is not None:
            whole = self._whole
            at = next((i for i in range(len(whole) - 1, -1, -1) if whole.types[i] == etype), -1)
            return whole.offsets[at] if at >= 0 else -1
        return last_before(self.tail.path, etype, self.tail.start)


def _uniform(index: EventIndex) -> bool:
    """Whether every line of the window starts with its type, as the head is assumed to
    (only each line's first bytes are read: a window of huge lines is not held)."""
    if not len(index):
        return False
    head = len(LINE_HEAD)
    with index.path.open("rb", buffering=0) as fh:
        fd = fh.fileno()
        return all(os.pread(fd, head, offset) == LINE_HEAD for offset in index.offsets)


def _event_at(path: Path, offset: int) -> Event | None:
    with path.open("rb") as fh:
        fh.seek(offset)
        raw = fh.readline()
    try:
        return event_from_json(raw.decode("utf-8", "replace").strip())
    except (ValueError, EventParseError):
        return None
