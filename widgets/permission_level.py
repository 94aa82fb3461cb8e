"""The question asked once before autopilot: what may it do in this session?

A modal list of the levels (agent.permissions.level): 1 / 2 / 3 or the arrows and
Enter choose, Esc cancels the switch (its label says where that leaves you). It
dismisses with the level, or None. Asked on the way from plan mode, Shift+Tab goes on
past autopilot to interactive mode (:meth:`PermissionLevelScreen.action_skip`), so
the mode key alone leaves plan mode. Like the permission prompt it takes no choice
for a moment after it is drawn: an Enter meant for the prompt must not allow every
tool.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Region
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent.events.permission_level import OPTIONS, QUESTION, Level, LevelOption
from widgets.arming import Arming

_ANSWER_KEYS = {"enter", *(str(number) for number in range(1, len(OPTIONS) + 1))}
_KIND_WORDS = {"write": "file edits", "shell": "shell commands", "custom-tool": "app tools"}


class PermissionLevelScreen(ModalScreen[Level | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        *(
            Binding(str(number), f"choose({number - 1})", show=False)
            for number in range(1, len(OPTIONS) + 1)
        ),
    ]

    def __init__(
        self,
        denied: list[str],
        *,
        on_cancel: str = "stay interactive",
        skip_to: str | None = None,
    ) -> None:
        super().__init__(id="permission-level")
        self.denied = denied  # the kinds of call the rules would deny in autopilot
        self.arming = Arming()  # keys typed before it was painted choose nothing
        self.on_cancel = on_cancel  # where Esc leaves the user, as its label says
        # The mode Shift+Tab goes on to instead of autopilot (None: not offered).
        self.skip_to = skip_to
        self.skipped = False

    def compose(self) -> ComposeResult:
        what = " and ".join(_KIND_WORDS.get(kind, kind) for kind in self.denied)
        with Vertical(id="permission-level-dialog"):
            yield Static(Text(QUESTION, style="bold"), classes="title")
            yield Static(
                f"Your rules would deny {what or 'some calls'}: autopilot cannot stop to ask.",
                classes="dim",
            )
            yield OptionList(
                *(Option(_option(n, o), id=o.level) for n, o in enumerate(OPTIONS, start=1))
            )
            skip = f"Shift+Tab {self.skip_to} · " if self.skip_to else ""
            yield Static(
                f"1/2/3 or ↑↓ Enter choose · {skip}Esc cancel ({self.on_cancel})", classes="dim"
            )

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.arming.painted()  # once rendered: a slow first draw does not use up the delay
        return lines

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        message.stop()
        self.action_choose(message.option_index)

    def on_key(self, event: events.Key) -> None:
        # Runs as the key bubbles up from the list, before any binding: a choice typed
        # before the question could be seen stops here.
        if event.key in _ANSWER_KEYS and not self.arming.counts(event):
            event.stop()
            event.prevent_default()

    def action_choose(self, index: int) -> None:
        self.dismiss(OPTIONS[index].level)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_skip(self) -> None:
        """Shift+Tab (the app's mode key): no autopilot, on to :attr:`skip_to`. Not
        guarded by the arming: it grants nothing, and a quick double Shift+Tab means
        to pass autopilot by."""
        if self.skip_to is not None:
            self.skipped = True
            self.dismiss(None)


def _option(number: int, option: LevelOption) -> Table:
    # A grid, so that a wrapped detail line stays under its title.
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=2)
    grid.add_column(ratio=1)
    grid.add_row(Text(str(number), style="bold"), Text(option.title, style="bold"))
    grid.add_row("", Text(option.detail, style="dim"))
    return grid
