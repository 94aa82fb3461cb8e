"""The session's questions to the user in the transcript: the model's (``ask_user``)
and the one that picks autopilot's permission level (an elicitation).

While a question waits, the app asks it in a dialog (the asking tool call's card
says so); once answered it gets one line in the timeline, with its answer.
Elicitations from other sources are kept raw.

Pure Python: no UI imports.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from agent.events import permission_level
from agent.events.schema import (
    ElicitationCompletedData,
    ElicitationRequestedData,
    Event,
    UserInputCompletedData,
    UserInputRequestedData,
)
from agent.transcript.blocks import Change, NoticeBlock

if TYPE_CHECKING:
    from agent.transcript.state import TranscriptState


def elicitation_requested(
    t: TranscriptState, event: Event, d: ElicitationRequestedData, ts: datetime | None
) -> list[Change]:
    if d.elicitation_source != permission_level.SOURCE:
        return [t._raw(event.type, d, ts)]
    t._level_questions.add(d.request_id)
    return []  # the app asks in a dialog; the answer gets the timeline line


def elicitation_completed(
    t: TranscriptState, event: Event, d: ElicitationCompletedData, ts: datetime | None
) -> list[Change]:
    if d.request_id not in t._level_questions:
        return [t._raw(event.type, d, ts)]
    t._level_questions.discard(d.request_id)
    level = permission_level.level_of(d)
    if level is not None:
        t.permission_level = level
    message = permission_level.notice(level)
    notice = NoticeBlock(t._new_id(), "permission", message, subtype="level", timestamp=ts)
    return [t._add(notice)]


def question(t: TranscriptState, d: UserInputRequestedData, ts: datetime | None) -> list[Change]:
    # While it waits, the asking tool call's card says so (and the app asks below
    # it); the question gets its line in the timeline with its answer.
    t._questions[d.request_id] = d
    return []


def answer(
    t: TranscriptState, event: Event, d: UserInputCompletedData, ts: datetime | None
) -> list[Change]:
    asked = t._questions.pop(d.request_id, None)
    if asked is None:
        return [t._raw(event.type, d, ts)]
    subtype = "answered" if d.answer is not None else "unanswered"
    text = question_text(asked, d)
    return [t._add(NoticeBlock(t._new_id(), "question", text, subtype, timestamp=ts))]


def question_text(asked: UserInputRequestedData, answer: UserInputCompletedData) -> str:
    """``? Which database? → PostgreSQL``."""
    text = f"? {asked.question}"
    if answer.answer is None:
        return text + " — not answered"
    if answer.was_freeform:
        return text + f" → “{answer.answer}” (typed)"
    return text + f" → {answer.answer}"
