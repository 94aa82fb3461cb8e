"""``/model``'s picker: known models to choose from, or any name typed in."""

from __future__ import annotations

from textual import on
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
            yield OptionList(
                *[Option(f"{name}  [dim]{why}[/]", id=name) for name, why in self.choices],
                id="model-choices",
            )
            yield Input(placeholder="or type any litellm model name, Enter", id="model-free")

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    @on(Input.Submitted)
    def typed(self, event: Input.Submitted) -> None:
        name = event.value.strip()
        if name:
            self.dismiss(name)
