"""Plan mode in the timeline: the proposed plan, and the question that approves it.

:class:`PlanView` draws a :class:`~agent.transcript.blocks.PlanBlock` (live and in replay): the
summary, the plan as Markdown, and what the user decided. :class:`PlanApproval` is the
inline question under it while the user decides: 1 approve (interactive), 2 approve
(autopilot), 3 keep planning (with feedback for the model). Like the permission
prompt it ignores keys for a moment after it is drawn, so keys typed for the prompt
never answer it.
"""

from __future__ import annotations

import asyncio

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Input, Static

from agent.events.schema import PlanAction
from agent.transcript.blocks import PlanBlock
from agent.transcript.plan_review import outcome_text
from widgets.arming import Arming
from widgets.lazy_rich import rich_markdown


def plan_status(block: PlanBlock) -> Text:
    """The plan's one-line state: waiting, approved (and how), or sent back."""
    text = Text(outcome_text(block), style="bold")
    if block.feedback:
        text.append(f"  “{block.feedback}”", style="italic")
    return text


class PlanView(Static):
    def __init__(self, block: PlanBlock) -> None:
        super().__init__(classes="plan")
        self.block = block

    def render(self) -> RenderableType:
        block = self.block
        self.set_class(block.status == "pending", "-pending")
        title = Text.assemble(("☰ Plan", "bold"), ("  ", ""), (block.summary, "italic"))
        return Group(title, rich_markdown(block.plan), plan_status(block))


class PlanApproval(Vertical, can_focus=True):
    """The question: answers with (action, feedback); action None keeps planning."""

    def __init__(self) -> None:
        super().__init__(classes="plan-approval")
        self.answer: asyncio.Future[tuple[PlanAction | None, str | None]] = (
            asyncio.get_running_loop().create_future()
        )
        self.arming = Arming()
        self._feedback: Input | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Leave plan mode and implement this plan?", style="bold"))
        yield Static(
            Text.assemble(
                ("1", "bold"),
                " yes, in interactive mode   ",
                ("2", "bold"),
                " yes, in autopilot   ",
                ("3", "bold"),
                " no, keep planning (say what to change)",
            ),
            classes="keys",
        )

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.arming.painted()  # once rendered: a slow first draw does not use up the delay
        return lines

    def on_mount(self) -> None:
        self.focus()
        self.scroll_visible()

    def on_key(self, event: events.Key) -> None:
        if self._feedback is not None or event.key not in ("1", "2", "3"):
            return  # Esc and Ctrl+C still stop the turn
        event.stop()
        if not self.arming.counts(event):
            return  # typed before the question appeared: not an answer
        match event.key:
            case "1":
                self._resolve("interactive", None)
            case "2":
                self._resolve("autopilot", None)
            case _:
                self._feedback = Input(
                    placeholder="What should change? — Enter sends it to the model",
                    classes="feedback",
                )
                self.mount(self._feedback)
                self._feedback.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self._resolve(None, message.value.strip() or None)

    def _resolve(self, action: PlanAction | None, feedback: str | None) -> None:
        if not self.answer.done():
            self.answer.set_result((action, feedback))

    def ask_again(self) -> None:
        """The autopilot choice was cancelled: wait for another answer."""
        if self.answer.done():
            self.answer = asyncio.get_running_loop().create_future()
        self.focus()
