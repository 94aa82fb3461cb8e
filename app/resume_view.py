"""A resumed session in the app's timeline: only the tail of its log is given to it.

:meth:`agent.session.Session.resume` parses the last turns of a long log (see
agent.tail_resume); the transcript that draws them is seeded with what came before
(turn and tool-call counts, usage, the todo list) so numbers stay true to the whole
session. Older turns are read from the log's index when the user asks for them
("load earlier"), a window at a time.
"""

from __future__ import annotations

from agent import tail_resume
from agent.blocks import Block
from agent.replay import EventIndex
from agent.session import Session
from agent.tail_resume import Counts
from agent.transcript import Transcript
from widgets.timeline import Timeline

# Blocks folded from an older window get ids far below the live transcript's (which
# count up from 1), so that no two blocks in the timeline share one.
_ID_SPAN = 10_000_000


def counts_before(index: EventIndex, position: int) -> Counts:
    counts = Counts()
    for etype in index.types[:position]:
        counts.add(etype)
    return counts


def seed_timeline(timeline: Timeline, session: Session) -> None:
    """Before ``timeline.load(session.backlog)``: a transcript that starts mid-log."""
    plan = session.resumed_from
    if plan is None or plan.tail_start == 0:
        return
    before = counts_before(plan.index, plan.tail_start)
    transcript = Transcript()
    transcript.turns = before.turns
    transcript.tool_calls = before.tool_calls
    checkpoint = plan.index.last_before("session.usage_checkpoint", plan.tail_start)
    if checkpoint is not None:
        transcript.apply(checkpoint)
    transcript.todos.items = session.todos.items or None
    timeline.reset(transcript)
    timeline.earlier = EarlierTurns(plan.index, plan.tail_start)


class EarlierTurns:
    """The turns before ``start`` in a log's index, folded a window at a time."""

    def __init__(self, index: EventIndex, start: int, turns: int | None = None) -> None:
        self.index = index
        self.start = start  # the first event already folded
        self.turns = tail_resume.TAIL_TURNS if turns is None else turns
        self._windows = 0

    def remaining(self) -> int:
        return self.index.turn_of(self.start)

    def take(self) -> list[Block]:
        if self.start == 0:
            return []
        index = self.index
        first_turn = max(0, index.turn_of(self.start) - self.turns)
        begin = index.turn_starts[first_turn] if first_turn > 0 else 0
        before = counts_before(index, begin)
        transcript = Transcript()
        self._windows += 1
        transcript._next_block_id = -_ID_SPAN * self._windows
        transcript.turns = before.turns
        transcript.tool_calls = before.tool_calls
        for event in index.read_rows(begin, self.start):
            transcript.apply(event)
        transcript.finish_replay()
        self.start = begin
        return transcript.items
