"""Rich styles that make Rich-drawn Markdown look like Textual's Markdown widget.

History turns, the frozen head of a long reply and the task summary are drawn with
Rich's Markdown; the live reply is drawn by Textual's. Without this, inline code
would turn from Textual's amber to Rich's bold cyan as a turn becomes history.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.theme import Theme
from textual.app import App
from textual.color import Color


def markdown_theme(app: App[Any]) -> Theme:
    """Rich's Markdown styles in the app's current Textual theme (dark or light)."""
    variables = app.get_css_variables()
    background = Color.parse(variables.get("background", "#000000"))
    if app.current_theme.dark:
        tint, ink = variables.get("warning", "#ffa62b"), variables.get("text-warning", "")
        amount = 0.10
    else:
        tint, ink = variables.get("error", "#ba3c5b"), variables.get("text-error", "")
        amount = 0.05
    code_fg = Color.parse(ink).blend(background, 0.05) if ink else Color.parse(tint)
    if app.current_theme.ansi:
        # Like Textual's Markdown in an ANSI theme: the terminal's own background.
        code = Style(color=Color.parse(tint).rich_color)
    else:
        code_bg = background.blend(Color.parse(tint), amount)
        code = Style(color=code_fg.rich_color, bgcolor=code_bg.rich_color)
    return Theme({"markdown.code": code}, inherit=True)


def apply_markdown_theme(app: App[Any]) -> None:
    """Install the styles now and again whenever the user switches themes."""

    def reinstall(*_: object) -> None:
        app.console.pop_theme()  # the one pushed for the previous theme
        app.console.push_theme(markdown_theme(app))
        app.refresh(layout=True)

    app.console.push_theme(markdown_theme(app))
    app.theme_changed_signal.subscribe(app, reinstall)
