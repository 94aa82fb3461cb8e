"""The model's question to the user, inline like a permission request.

Choices are picked with their number (or Up/Down and Enter); any other key starts a
typed answer (when the question allows one), sent with Enter; a paste starts one too,
and keeps all its text. Like the permission prompt it takes only keys that arrived
after it was painted (widgets.arming), so keystrokes meant for the prompt (typed just
before it appeared) never answer it, and none typed once it shows is lost.
"""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Input, Static

from agent.session.user_input import UserAnswer, UserQuestion
from widgets.arming import Arming


class AskUserPromptView(Vertical, can_focus=True):
    def __init__(self, question: UserQuestion) -> None:
        super().__init__(classes="ask-user-prompt")
        self.question = question
        self.answer: asyncio.Future[UserAnswer] = asyncio.get_running_loop().create_future()
        self.arming = Arming()
        self._highlight = 0
        self._choices = Static(self._choice_lines(), classes="choices")
        self._typed: AnswerInput | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("? Question  ", "bold"), (self.question.question, "bold")))
        if self.question.choices:
            yield self._choices
        yield Static(self._keys(), classes="keys")

    def _keys(self) -> Text:
        choices = self.question.choices
        parts: list[str | tuple[str, str]] = []
        if choices:
            last = len(choices)
            parts += [(f"1–{last}" if last > 1 else "1", "bold"), " or "]
            parts += [("↑↓ Enter", "bold"), " choose   "]
        if self.question.allow_freeform:
            parts += ["or " if choices else "", ("type", "bold"), " an answer, Enter sends"]
        return Text.assemble(*parts)

    def _choice_lines(self) -> Text:
        text = Text()
        for index, choice in enumerate(self.question.choices):
            marked = index == self._highlight
            if index:
                text.append("\n")
            text.append("▸ " if marked else "  ", style="bold")
            text.append(f"{index + 1} ", style="bold")
            text.append(choice, style="reverse" if marked else "")
        return text

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.arming.painted()  # once rendered: a slow first draw does not use up the delay
        return lines

    def on_mount(self) -> None:
        self.focus()
        self.scroll_visible()

    def on_key(self, event: events.Key) -> None:
        if self._typed is not None:
            # Keys that reach the question before the focus has moved to the answer (a
            # fast burst, a paste typed key by key) belong to the answer, in order.
            self._type_into_answer(event)
            return
        key, char = event.key, event.character
        choices = self.question.choices
        picks = key.isdigit() and 1 <= int(key) <= len(choices)
        moves = key in ("up", "down") and bool(choices)
        types = self.question.allow_freeform and char is not None and char.isprintable()
        if not (picks or moves or types or key == "enter"):
            return  # Esc and Ctrl+C still stop the turn
        event.stop()
        event.prevent_default()
        if not self.arming.counts(event):
            return  # typed before the question appeared: not an answer
        if picks:
            self._resolve(UserAnswer(choices[int(key) - 1], was_freeform=False))
        elif moves:
            step = 1 if key == "down" else -1
            self._highlight = (self._highlight + step) % len(choices)
            self._choices.update(self._choice_lines())
        elif key == "enter":
            if choices:
                self._resolve(UserAnswer(choices[self._highlight], was_freeform=False))
        elif char is not None:
            self._start_typing(char)

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        if self._typed is not None:
            self._typed.insert_text_at_cursor(one_line(event.text))
        elif self.question.allow_freeform and event.text and self.arming.counts(event):
            self._start_typing(one_line(event.text))

    def _type_into_answer(self, event: events.Key) -> None:
        typed = self._typed
        assert typed is not None
        if event.key == "enter":
            event.stop()
            self._send_typed(typed.value)
        elif event.key == "backspace":
            event.stop()
            typed.action_delete_left()
        elif event.character is not None and event.character.isprintable():
            event.stop()
            typed.insert_text_at_cursor(event.character)

    def _start_typing(self, first: str) -> None:
        self._typed = AnswerInput(
            value=first, placeholder="Your answer — Enter to send", select_on_focus=False
        )
        self.mount(self._typed)
        self._typed.focus()
        self._typed.cursor_position = len(first)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self._send_typed(message.value)

    def _send_typed(self, value: str) -> None:
        text = value.strip()
        if text:
            self._resolve(UserAnswer(text, was_freeform=True))

    def _resolve(self, answer: UserAnswer) -> None:
        if not self.answer.done():
            self.answer.set_result(answer)


class AnswerInput(Input):
    """The typed answer: a paste keeps every line (Input keeps only the first)."""

    def _on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()  # Input's own handler would insert the first line again
        if event.text:
            self.insert_text_at_cursor(one_line(event.text))


def one_line(text: str) -> str:
    """Pasted text for a one-line answer: every line kept, joined by spaces."""
    return " ".join(line for line in text.splitlines() if line.strip())
