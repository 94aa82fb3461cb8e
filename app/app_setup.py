"""What both apps (the session app and the replay viewer) do once they are mounted."""

from __future__ import annotations

from typing import Any

from textual.app import App

from app import textual_fixes
from app.gc_policy import tune_for_interactive
from app.rich_theme import apply_markdown_theme


def set_up(app: App[Any]) -> None:
    textual_fixes.install()
    tune_for_interactive()
    apply_markdown_theme(app)
