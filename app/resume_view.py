"""A resumed session in the app's timeline: only the tail of its log is given to it.

:meth:`agent.session.Session.resume` parses the last turns of a long log (see
agent.tail_resume); the transcript that draws them is seeded with what came before
(turn and tool-call counts, usage, the todo list) so numbers stay true to the whole
session, and a row says how much is not loaded.
"""

from __future__ import annotations

from agent.session import Session
from agent.tail_resume import Counts
from agent.transcript import Transcript
from widgets.timeline import Timeline


def seed_timeline(timeline: Timeline, session: Session) -> None:
    """Before ``timeline.load(session.backlog)``: a transcript that starts mid-log."""
    plan = session.resumed_from
    if plan is None or plan.tail_start == 0:
        return
    before = Counts()
    for etype in plan.index.types[: plan.tail_start]:
        before.add(etype)
    transcript = Transcript()
    transcript.turns = before.turns
    transcript.tool_calls = before.tool_calls
    checkpoint = plan.index.last_before("session.usage_checkpoint", plan.tail_start)
    if checkpoint is not None:
        transcript.apply(checkpoint)
    transcript.todos.items = session.todos.items or None
    timeline.reset(transcript)
    timeline.mark(f"… {before.turns} earlier turns of this session are not shown")
