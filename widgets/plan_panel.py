"""The plan panel: the session's current plan, opened over the app (Ctrl+G, ``/plan``).

``PlanPanel(text, path)`` shows ``text`` as Markdown (or says there is no plan yet and
how one is made); Esc or q closes it.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from widgets.lazy_rich import rich_markdown

NO_PLAN = (
    "No plan yet. Switch to plan mode (Shift+Tab) and ask for one: the agent "
    "investigates, then proposes its plan for your approval."
)


class PlanPanel(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, text: str | None, path: Path | None = None) -> None:
        super().__init__(id="plan-panel")
        self.text = text
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-panel-dialog"):
            yield Static(Text("☰ Plan", style="bold"), classes="title")
            with VerticalScroll(id="plan-panel-body"):
                if self.text:
                    yield Static(rich_markdown(self.text))
                else:
                    yield Static(NO_PLAN, classes="dim")
            where = f" · {self.path}" if self.path is not None and self.text else ""
            yield Static(Text(f"Esc close{where}", style="dim"), classes="dim")

    def on_mount(self) -> None:
        self.query_one("#plan-panel-body").focus()

    def action_close(self) -> None:
        self.dismiss(None)
