"""Another session in place of the app's current one: resumed by id or from the
session browser, or forked."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent.log.store import SessionStore

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen

    from agent.session.session import Session

Resumer = Callable[[str], Awaitable["Session"]]


class StartupError(Exception):
    """Raised by an opener when the session cannot start; shown in the app."""


class Host(Protocol):
    """What switching needs of the app."""

    session: Session | None

    def say(self, text: str) -> None: ...

    def adopt(self, session: Session) -> None: ...

    def notify(self, message: str, *, severity: SeverityLevel = ...) -> None: ...

    def push_screen(self, screen: Screen[Any]) -> object: ...


class SessionSwitch:
    """Resumes (``/resume``, the session browser) or forks (``/fork``) a session and
    hands it to the app; the current one is closed first, its lock let go."""

    def __init__(self, host: Host, store: SessionStore | None, resumer: Resumer | None) -> None:
        self.host = host
        self.store = store
        self.resumer = resumer

    def browse(self) -> None:
        """The session browser (Ctrl+O, /sessions): resume, replay or delete one."""
        from app.session_browser import SessionBrowser

        if self.store is None:
            self.host.notify("No session store in this run.", severity="warning")
            return
        session = self.host.session
        cwd = session.cwd if session is not None else Path.cwd()
        resume = self.switch if self.resumer is not None else None
        current = session.id if session is not None else None
        self.host.push_screen(SessionBrowser(self.store, cwd, resume, current))

    async def resume(self, id_or_prefix: str) -> None:
        if self.store is None or self.resumer is None:
            self.host.say("Sessions cannot be resumed in this run.")
            return
        from agent.log.store import SessionNotFound

        try:
            session_id = self.store.resolve(id_or_prefix)
        except (SessionNotFound, ValueError) as exc:
            self.host.say(str(exc))
            return
        problem = await self.switch(session_id)
        if problem:
            self.host.say(f"Not resumed: {problem}")

    async def fork(self) -> None:
        session = self.host.session
        if session is None or session.store is None or self.resumer is None:
            self.host.say("This session cannot be forked (it is not recorded).")
            return
        from agent.log.fork import fork_log

        await session.persist()
        original = session.id
        try:
            new_id = await asyncio.to_thread(
                fork_log, session.store, original, model=session.model.name, cwd=session.cwd
            )
        except (OSError, ValueError) as exc:
            self.host.say(f"Not forked: {exc}")
            return
        problem = await self.switch(new_id)
        if problem:
            self.host.say(f"Forked to {new_id[:8]} but could not open it: {problem}")
            return
        self.host.say(f"Forked: this is session {new_id[:8]}; {original[:8]} is left as it was.")

    async def switch(self, session_id: str) -> str | None:
        """Resume ``session_id`` in place of the current session. Returns why it could
        not be opened (another process writes it…); the current session then stays."""
        host = self.host
        if host.session is not None and host.session.id == session_id:
            return None
        assert self.resumer is not None
        try:
            session = await self.resumer(session_id)
        except StartupError as exc:
            return str(exc)
        try:
            old, host.session = host.session, None
            if old is not None:
                # Shielded: a switch cancelled now (Esc, another choice) still lets go.
                await asyncio.shield(old.close())
        except BaseException:
            await asyncio.shield(session.close())  # never shown: release its lock
            raise
        host.adopt(session)
        return None
