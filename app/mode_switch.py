"""How the app changes the session's mode: Shift+Tab, /mode, /plan, /autopilot, the
palette, and the plan's "approve in autopilot".

Every change goes through :meth:`ModeSwitch.set`. A plan waiting for its answer
holds the mode where it is; autopilot first asks for its permission level (a
:class:`~widgets.permission_level.PermissionLevelScreen`) when the session's rules
would deny its tools, and starts only once a level was chosen. The choice is
recorded by the session, so a replay shows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from agent.events.permission_level import Level
from agent.events.schema import Mode
from widgets.permission_level import PermissionLevelScreen

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget

    from agent.session.session import Session

# Shift+Tab: interactive → plan → autopilot → interactive (on autopilot's permission
# question from plan, Shift+Tab again goes on to interactive).
_FOLLOWING: dict[str, Mode] = {"interactive": "plan", "plan": "autopilot"}


class ModeHost(Protocol):
    """What switching modes needs of the app."""

    @property
    def session(self) -> Session | None: ...

    @property
    def prompt(self) -> Widget: ...

    def notify(self, message: str, *, timeout: float | None = ...) -> None: ...

    def push_screen(
        self, screen: Screen[Level | None], callback: Callable[[Level | None], None]
    ) -> object: ...

    @property
    def screen(self) -> Screen[object]: ...

    def refresh_status(self) -> None: ...


class ModeSwitch:
    def __init__(self, host: ModeHost) -> None:
        self.host = host

    def set(self, mode: Mode) -> None:
        """The one way modes change: autopilot first asks for its permission level
        when the rules would deny."""
        session = self.host.session
        if session is None or session.permission_level.pending is not None:
            return
        if session.plan.pending is not None:
            self.host.notify("The plan is waiting for your answer: 1, 2 or 3.", timeout=3)
            return
        if mode == "autopilot" and session.mode != "autopilot":
            here = session.mode
            self.before_autopilot(
                lambda go: self._set("autopilot") if go else None,
                on_cancel="stay in plan" if here == "plan" else "stay interactive",
                # From plan, Shift+Tab again goes on to interactive: the mode key alone
                # leaves plan mode, with no level to choose.
                skip_to="interactive" if here != "interactive" else None,
            )
        else:
            self._set(mode)

    def cycle(self) -> None:
        """Shift+Tab: interactive → plan → autopilot → interactive (Copilot CLI's cycle).
        On autopilot's permission question, it goes on past autopilot."""
        screen = self.host.screen
        if isinstance(screen, PermissionLevelScreen):
            screen.action_skip()
            return
        session = self.host.session
        if session is not None:
            self.set(_FOLLOWING.get(session.mode, "interactive"))

    def toggle_autopilot(self) -> None:
        """The palette's shortcut: interactive or plan ⇄ autopilot, skipping plan."""
        session = self.host.session
        if session is not None:
            self.set("interactive" if session.mode == "autopilot" else "autopilot")

    async def autopilot_allowed(self) -> bool:
        """Whether autopilot may start: asks for its permission level when needed."""
        allowed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def answered(go: bool) -> None:
            if not allowed.done():
                allowed.set_result(go)

        self.before_autopilot(answered, on_cancel="back to the plan")
        return await allowed

    def before_autopilot(
        self,
        then: Callable[[bool], None],
        *,
        on_cancel: str,
        skip_to: Mode | None = None,
    ) -> None:
        """Ask once for autopilot's permission level if the rules would deny; ``then``
        gets whether to go on (False: the user cancelled). ``on_cancel`` says where Esc
        leaves the user; ``skip_to``: the mode Shift+Tab goes on to instead."""
        session = self.host.session
        assert session is not None
        choice = session.permission_level
        denied = choice.denied()
        if not denied:
            then(True)
            return
        request = choice.ask()
        screen = PermissionLevelScreen(denied, on_cancel=on_cancel, skip_to=skip_to)

        def answered(level: Level | None) -> None:
            choice.answer(request, level)
            then(level is not None)
            if screen.skipped and skip_to is not None:
                self._set(skip_to)
            self.host.refresh_status()
            self.host.prompt.focus()

        self.host.push_screen(screen, answered)

    def _set(self, mode: Mode) -> None:
        session = self.host.session
        if session is not None:
            session.set_mode(mode)
            self.host.refresh_status()
