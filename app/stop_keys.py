"""Esc and Ctrl+C in the app: stop what runs, else clear the prompt; a second Ctrl+C
quits (as Copilot CLI and Claude Code do).

What runs is the session's turn (its queued messages are sent next, and the abort
line says so) and a ``!command`` the user started.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.worker import Worker

    from agent.session.session import Session
    from widgets.prompt import PromptInput
    from widgets.timeline import Timeline

QUIT_WINDOW = 2.0  # seconds between two Ctrl+C presses that quit


class StopHost(Protocol):
    """What stopping and quitting need of the app."""

    @property
    def session(self) -> Session | None: ...

    @property
    def prompt(self) -> PromptInput: ...

    @property
    def timeline(self) -> Timeline: ...

    @property
    def shell_worker(self) -> Worker[Any] | None: ...

    def notify(self, message: str, *, timeout: float | None = ...) -> None: ...

    def action_quit(self) -> Awaitable[None]: ...


class StopKeys:
    def __init__(self, host: StopHost) -> None:
        self.host = host
        self._last_ctrl_c = 0.0

    def escape(self) -> None:
        """Esc: stop what runs; with nothing running, clear the prompt."""
        if not self.stop_running() and self.host.prompt.clear_draft():
            self.host.notify("Prompt cleared (Up brings it back).")

    async def ctrl_c(self) -> None:
        """Ctrl+C: the first stops what runs (or clears the prompt), the next quits."""
        now = time.monotonic()
        if now - self._last_ctrl_c < QUIT_WINDOW:
            await self.host.action_quit()
            return
        self._last_ctrl_c = now
        if self.stop_running():
            said = "Stopped."
        elif self.host.prompt.clear_draft():
            said = "Prompt cleared (Up brings it back)."
        else:
            said = ""
        self.host.notify(f"{said} Press Ctrl+C again to quit.".lstrip(), timeout=QUIT_WINDOW)

    def stop_running(self) -> bool:
        """Stop the running turn and a !command the user started; whether one ran."""
        stopped = False
        shell = self.host.shell_worker
        if shell is not None and shell.is_running:
            shell.cancel()
            stopped = True
        session = self.host.session
        if session is not None and session.busy:
            queued = session.queued
            # The runner goes on with what was queued: the abort line must say so.
            self.host.timeline.after_abort = (
                None
                if not queued
                else "Your queued message is sent next."
                if queued == 1
                else f"Your {queued} queued messages are sent next."
            )
            session.abort()
            stopped = True
        return stopped
