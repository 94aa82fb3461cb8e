"""Questions the model puts to the user (the ask_user tool), and their answers.

A question is asked only where somebody can answer: the app in interactive mode
(its asker), or an SDK app that registered ``on_user_input_request`` (in every mode:
the app decides). In autopilot, with ``-p``, or with nobody attached, nobody is
asked: the tool's result tells the model the user is not available and to decide.

An asked question is recorded as the SDK records it: ``user_input.requested``, made
durable before anyone is asked, then ``user_input.completed`` with the answer (or
without one, when the turn was aborted while it waited).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from agent.events.schema import (
    Event,
    EventData,
    Mode,
    UserInputCompletedData,
    UserInputRequestedData,
)
from agent.tools.base import ToolResult

NOT_AVAILABLE = (
    "The user is not available to answer questions now ({why}). Do not wait for an "
    "answer and do not ask again: decide yourself, choosing the most reasonable option, "
    "say which you chose and why, and go on with the task."
)


class NoOneToAsk(Exception):
    """Raised by an asker that found nobody to answer (an app gone away); the model is
    told the user is not available, with this reason."""


@dataclass(frozen=True, slots=True)
class UserQuestion:
    request_id: str
    question: str
    choices: tuple[str, ...] = ()
    allow_freeform: bool = True
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class UserAnswer:
    answer: str
    was_freeform: bool


UserInputAsker = Callable[[UserQuestion], Awaitable[UserAnswer]]


class QuestionHost(Protocol):
    @property
    def mode(self) -> Mode: ...

    def emit(self, data: EventData) -> Event: ...

    async def persist(self) -> None: ...


class UserQuestions:
    def __init__(self, host: QuestionHost) -> None:
        self.host = host
        # Set by an interactive UI or an SDK app; None means nobody can be asked.
        self.asker: UserInputAsker | None = None
        # By default the asker is a human, asked in interactive (and plan) mode only.
        self.ask_in_every_mode = False

    async def ask(
        self,
        question: str,
        choices: list[str],
        *,
        allow_freeform: bool = True,
        tool_call_id: str | None = None,
    ) -> ToolResult:
        """Ask and wait; the result is what the model reads."""
        mode = self.host.mode
        if self.asker is None or (mode == "autopilot" and not self.ask_in_every_mode):
            why = "autopilot runs without asking" if mode == "autopilot" else "no one is attached"
            return ToolResult(content=NOT_AVAILABLE.format(why=why))
        choices = [c for c in dict.fromkeys(c.strip() for c in choices) if c]
        # Without choices only a typed answer can be given, whatever was asked.
        allow_freeform = allow_freeform or not choices
        asked = UserQuestion(
            str(uuid.uuid4()), question, tuple(choices), allow_freeform, tool_call_id
        )
        self.host.emit(
            UserInputRequestedData(
                request_id=asked.request_id,
                question=question,
                choices=choices or None,
                allow_freeform=allow_freeform,
                tool_call_id=tool_call_id,
            )
        )
        answered: UserAnswer | None = None
        try:
            # On disk (and shown) before anyone waits on a human.
            await self.host.persist()
            answered = await self.asker(asked)
        except NoOneToAsk as exc:
            return ToolResult(content=NOT_AVAILABLE.format(why=str(exc)))
        finally:
            self.host.emit(
                UserInputCompletedData(
                    request_id=asked.request_id,
                    answer=answered.answer if answered else None,
                    was_freeform=answered.was_freeform if answered else None,
                )
            )
        return ToolResult(content=answer_text(answered))


def answer_text(answer: UserAnswer) -> str:
    if answer.was_freeform:
        return f"The user answered: {answer.answer}"
    return f"The user chose: {answer.answer}"
