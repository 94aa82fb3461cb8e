"""What both apps (the session app and the replay viewer) do once they are mounted."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

from textual.app import App

from app import textual_fixes
from app.gc_policy import tune_for_interactive
from app.rich_theme import apply_markdown_theme


def set_up(app: App[Any]) -> None:
    textual_fixes.install()
    tune_for_interactive()
    apply_markdown_theme(app)


def exit_on_signals(app: App[Any]) -> None:
    """The terminal closing (SIGHUP) or a polite kill (SIGTERM) exits like Ctrl+Q, so the
    app unmounts and closes its session: the turn ends, the log is written, the lock is
    released. Left alone, either signal would end the process mid-turn."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGHUP, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, app.exit)
