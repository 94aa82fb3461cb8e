"""The prompt's completion dropdown: ``/`` commands and ``@`` files.

The menu never takes focus: the prompt keeps typing going and drives it (Up/Down
move, Tab/Enter accept, Esc closes). What it lists comes from sources the app
gives the prompt; the menu only draws candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

CHROME = 6  # columns the menu's margin, border and scrollbar take


@dataclass(frozen=True, slots=True)
class Candidate:
    """One entry: ``insert`` replaces the typed token; ``label``/``help`` are shown."""

    insert: str
    label: str
    help: str = ""
    # Enter sends the prompt right away (a command that takes no argument).
    submit: bool = False


# A source gets the token typed so far (with its trigger, e.g. "/he" or "@src/ma")
# and returns what matches, best first.
Source = Callable[[str], Sequence[Candidate]]


class CompletionMenu(OptionList):
    """The dropdown above the prompt; hidden while there is nothing to offer."""

    can_focus = False
    DEFAULT_CSS = """
    CompletionMenu {
        height: auto;
        max-height: 10;
        display: none;
        border: round $accent;
        padding: 0;
        margin: 0 1;
    }
    CompletionMenu.-open { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.candidates: list[Candidate] = []

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def offer(self, candidates: Sequence[Candidate]) -> None:
        """Show ``candidates`` (closes when there are none); the first is highlighted."""
        self.candidates = list(candidates)
        self.clear_options()
        if not self.candidates:
            self.close()
            return
        width = max(len(c.label) for c in self.candidates)
        # One line per entry: the help is cut to the room left (border, scrollbar).
        room = (self.size.width or self.app.size.width) - CHROME
        rows = [_row(c, width, room) for c in self.candidates]
        self.add_options([Option(row, id=str(i)) for i, row in enumerate(rows)])
        self.highlighted = 0
        self.add_class("-open")

    def close(self) -> None:
        self.remove_class("-open")

    def move(self, step: int) -> None:
        if not self.candidates:
            return
        current = self.highlighted if self.highlighted is not None else 0
        self.highlighted = (current + step) % len(self.candidates)

    @property
    def chosen(self) -> Candidate | None:
        index = self.highlighted
        if not self.is_open or index is None or not 0 <= index < len(self.candidates):
            return None
        return self.candidates[index]


def _row(candidate: Candidate, width: int, room: int) -> Text:
    row = Text(candidate.label.ljust(width), style="bold")
    if candidate.help:
        row.append("  ")
        row.append(candidate.help, style="dim")
    if room > 0 and row.cell_len > room:
        row.truncate(room - 1)
        row.append("…", style="dim")
    return row
