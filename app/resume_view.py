"""A resumed session in the app's timeline: only the tail of its log is given to it.

:meth:`agent.session.session.Session.resume` parses the last turns of a long log (see
agent.session.tail_resume); the transcript that draws them is seeded with what came before
(turn and tool-call counts, usage, the todo list) so numbers stay true to the whole
session. Older turns are read from the log's index when the user asks for them
("load earlier"), a window at a time. While the session opens, the status line
shows the log's own id, model and turns (:func:`show_preview_status`).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from textual.widget import AwaitMount
from textual.widgets import Static

from agent.events.schema import Event
from agent.transcript.blocks import Block
from agent.transcript.fold import Transcript
from app.drawn import until_drawn
from widgets.status_bar import StatusBar
from widgets.timeline import Timeline
from widgets.welcome import WelcomeText

if TYPE_CHECKING:
    # The session (its loop, model and tools) loads after the first frame, and what
    # reads a log back only for a resume.
    from agent.log.replay import EventIndex
    from agent.session.session import Session
    from agent.session.tail_resume import Counts, TailPreview

# The drawn tail's blocks mounted for its first frame (more than a screen holds), then
# a few a frame: laying out and painting all of its turns at once held the event
# loop for ~50 ms.
FIRST_BLOCKS = 6
BLOCKS_A_FRAME = 4

# Blocks folded from an older window get ids far below the live transcript's (which
# count up from 1), so that no two blocks in the timeline share one.
_ID_SPAN = 10_000_000


def counts_before(index: EventIndex, position: int) -> Counts:
    from agent.session.tail_resume import Counts

    return Counts.of(index.types[:position])


def seed_timeline(timeline: Timeline, session: Session) -> None:
    """Before ``timeline.load(session.backlog)``: a transcript that starts mid-log."""
    plan = session.resumed_from
    if plan is None or plan.tail_start == 0:
        return
    before = plan.before_tail
    transcript = Transcript()
    transcript.turns = before.turns
    transcript.tool_calls = before.tool_calls
    checkpoint = plan.index.last_before("session.usage_checkpoint", plan.tail_start)
    if checkpoint is not None:
        transcript.apply(checkpoint)
    transcript.todos.items = session.todos.items or None
    timeline.reset(transcript)
    timeline.earlier = EarlierTurns(plan.index, plan.tail_start)


def draw_preview(timeline: Timeline, preview: TailPreview) -> AwaitMount | None:
    """The tail of a log, before its session is open: numbered as in the whole log."""
    transcript = Transcript()
    transcript.turns = preview.turns_before
    if preview.usage is not None:
        transcript.apply(preview.usage)
    timeline.reset(transcript)
    if preview.tail_start > 0 or preview.index.start > 0:
        keep_scrollbar_room(timeline)
    cap, timeline.max_mounted = timeline.max_mounted, FIRST_BLOCKS
    try:
        return timeline.load(preview.events)
    finally:
        timeline.max_mounted = cap


Drawn = tuple["TailPreview", AwaitMount | None]  # a tail drawn, and its blocks' mounting


def draw_tail_now(timeline: Timeline, tail: Future[TailPreview]) -> Drawn | None:
    """The tail, drawn at once if it has been read already (while the app loaded):
    then it is in the app's first frame. None: not read yet, or it could not be."""
    if not tail.done() or tail.cancelled() or tail.exception() is not None:
        return None
    preview = tail.result()
    return preview, draw_preview(timeline, preview)


async def draw_tail(
    timeline: Timeline, tail: Future[TailPreview], drawn: Drawn | None = None
) -> TailPreview | None:
    """Resume, tail first: the end of the log (read back from its end in a thread since
    launch) drawn before the session (its model, loop and tools) is open (``drawn``:
    already, by :func:`draw_tail_now`). Returns once its last blocks are on screen
    (None: it could not be read; the session reads the log again, and says what is
    wrong)."""
    if drawn is None:
        try:
            preview = await asyncio.wrap_future(tail)
        except Exception:
            return None
        mounted = draw_preview(timeline, preview)
    else:
        preview, mounted = drawn
    while mounted is not None:
        await mounted
        # The session opens once the tail is on screen, not taking turns with it.
        await until_drawn(timeline.screen, timeline.children[-1])
        # Short turns on a tall screen: more of them before the session opens, so the
        # screen is not left half empty until then.
        filled = timeline.virtual_size.height > timeline.size.height
        mounted = None if filled else timeline.load_earlier(BLOCKS_A_FRAME)
    return preview


async def mount_rest(timeline: Timeline) -> None:
    """The drawn tail's other blocks, a few a frame, above those on screen (the
    timeline is anchored to its end: what is seen does not move). Stops when the
    timeline is drawn again (another session, or the log changed)."""
    transcript = timeline.transcript
    while (
        timeline.transcript is transcript
        and timeline.hidden_blocks > 0
        and timeline.mounted_blocks < timeline.max_mounted
    ):
        mounted = timeline.load_earlier(BLOCKS_A_FRAME)
        if mounted is not None:
            await mounted
        await timeline.screen.wait_for_refresh()


def show_preview_status(status: StatusBar, transcript: Transcript, preview: TailPreview) -> None:
    """The log's own turns and id in the status line while its session opens."""
    status.transcript = transcript
    status.session_id = preview.index.path.parent.name
    status.model = transcript.selected_model or transcript.model or ""
    status.note = "resuming…"
    status.refresh()


def show_backlog(timeline: Timeline, session: Session, preview: TailPreview | None) -> None:
    """A session just opened, in the timeline: its log's tail (kept as drawn when the
    session read the same tail) and what opening it added; a banner when it has no
    prompt yet."""
    backlog = session.backlog
    rest = rest_after_preview(preview, session) if preview is not None else None
    if preview is not None and rest is None:
        timeline.reset()  # the log changed since its tail was drawn: again
    if not any(event.type == "user.message" for event in backlog):
        timeline.welcome(Static(_welcome(session), classes="welcome"))
    if rest is not None:
        finish_preview(timeline, session, rest)
    else:
        seed_timeline(timeline, session)  # a long log: only its tail is loaded
        timeline.load(backlog)


def keep_scrollbar_room(timeline: Timeline) -> None:
    """A long log's tail fills more than a screen: its scrollbar will show. Its room
    is kept from the start, so the turns are not laid out without it first and then
    all drawn again one column narrower."""
    timeline.styles.scrollbar_gutter = "stable"


def rest_after_preview(preview: TailPreview, session: Session) -> list[Event] | None:
    """The backlog events the drawn ``preview`` does not show yet (what resuming
    added: warnings, turns closed as interrupted, the resume itself), or None when the
    session read another tail (the log changed, or the preview counted differently):
    then the timeline is drawn again from the session."""
    plan = session.resumed_from
    if plan is None:
        return None
    index = plan.index
    offset = index.offsets[plan.tail_start] if plan.tail_start < len(index) else index.size
    usage_at = plan.usage_before_tail
    agrees = (
        index.path == preview.index.path
        and offset == preview.offset
        and session.restored == len(preview.events)
        and plan.before_tail.turns == preview.turns_before
        and (index.offsets[usage_at] if usage_at >= 0 else -1) == preview.usage_offset
    )
    return session.backlog[session.restored :] if agrees else None


def finish_preview(timeline: Timeline, session: Session, rest: list[Event]) -> None:
    """What only the whole log knows, added to a drawn preview: the counts before the
    tail, the todo list, the earlier turns; then what resuming added."""
    plan = session.resumed_from
    assert plan is not None
    transcript = timeline.transcript
    transcript.tool_calls += plan.before_tail.tool_calls
    if transcript.todos.items is None:
        transcript.todos.items = session.todos.items or None
    if plan.tail_start > 0:
        timeline.set_earlier(EarlierTurns(plan.index, plan.tail_start))
    for event in rest:
        timeline.apply(event)


class EarlierTurns:
    """The turns before ``start`` in a log's index, folded a window at a time."""

    def __init__(self, index: EventIndex, start: int, turns: int | None = None) -> None:
        self.index = index
        self.start = start  # the first event already folded
        from agent.session import tail_resume

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


def _welcome(session: Session) -> WelcomeText:
    home = str(Path.home())
    cwd = str(session.cwd)
    where = "~" + cwd[len(home) :] if cwd.startswith(home) else cwd
    return WelcomeText(
        f"loopdeck · {session.model.name} · {where}",
        [
            "Ask about this code, or give the agent a task. It reads, searches, edits and runs",
            "commands here, asking before it changes anything. Shift+Tab cycles plan mode and",
            "autopilot (it works until the task is done), Esc stops a turn, / lists commands.",
        ],
    )
