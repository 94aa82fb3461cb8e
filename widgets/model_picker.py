"""``/model``'s picker: known models to choose from, or any name typed in.

Typing goes to the filter at once: the list keeps the models whose name holds what is
typed, and ends with the typed name itself (any LiteLLM name works). Up/Down move in
the list, Enter takes the highlighted entry.
"""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option


class ModelPicker(ModalScreen[str | None]):
    """Dismisses with the chosen model name, or None (Esc)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    ModelPicker { align: center middle; }
    ModelPicker > Vertical {
        width: 70; height: auto; max-height: 80%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    ModelPicker OptionList { height: auto; max-height: 12; }
    """

    def __init__(self, current: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.current = current
        self.choices = choices  # (model, why it is offered)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Model — now {self.current}")
            yield Input(placeholder="type to filter, or any LiteLLM model name", id="model-free")
            yield OptionList(*self._options(""), id="model-choices")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        self.query_one(OptionList).highlighted = 0 if self.choices else None

    def _options(self, typed: str) -> list[Option]:
        wanted = typed.strip()
        shown = [
            Option(Text.assemble(name, "  ", (why, "dim")), id=name)
            for name, why in self.choices
            if wanted.lower() in name.lower()
        ]
        if wanted and all(wanted != name for name, _ in self.choices):
            shown.append(Option(Text.assemble(wanted, "  ", ("as typed", "dim")), id=wanted))
        return shown

    @on(Input.Changed)
    def filter(self, event: Input.Changed) -> None:
        listed = self.query_one(OptionList)
        listed.clear_options()
        listed.add_options(self._options(event.value))
        listed.highlighted = 0 if listed.option_count else None

    def on_key(self, event: events.Key) -> None:
        # The filter keeps the focus: Up/Down move in the list all the same.
        if event.key in ("up", "down") and self.query_one(Input).has_focus:
            event.stop()
            listed = self.query_one(OptionList)
            if event.key == "up":
                listed.action_cursor_up()
            else:
                listed.action_cursor_down()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    @on(Input.Submitted)
    def typed(self, event: Input.Submitted) -> None:
        listed = self.query_one(OptionList)
        if listed.highlighted is not None:
            self.dismiss(listed.get_option_at_index(listed.highlighted).id)
        elif event.value.strip():
            self.dismiss(event.value.strip())
