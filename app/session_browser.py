"""The session browser: this workspace's sessions first, then all; search, resume,
replay, delete."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Input, Label, Static

from agent.log.lock import SessionInUse, delete_session
from agent.log.session_row import SessionSummary
from agent.log.store import ForeignSession, SessionStore
from app.sessions_table import (
    MODEL_WIDTH,
    model_label,
    origin_prefix,
    outcome_cell,
    sessions_for,
    usage_cells,
)
from widgets.format import duration, one_line

# The first prompt's column: as wide as the screen allows once id, started and the
# model (with the cells' padding) are drawn, within these bounds. From 120 columns the
# outcome is on screen too; the other columns scroll to the right.
PROMPT_MIN, PROMPT_MAX = 20, 60
_LEFT_OF_THE_PROMPT = 8 + 11 + MODEL_WIDTH + 2 * 4 + 2  # … + a scrollbar

# Opens the session by its id; returns why it could not (the browser then stays open).
Resume = Callable[[str], Awaitable[str | None]]


class ConfirmDelete(ModalScreen[bool]):
    BINDINGS = [Binding("escape,n", "dismiss(False)", "Cancel"), Binding("y", "dismiss(True)")]

    def __init__(self, summary: SessionSummary) -> None:
        super().__init__()
        self.summary = summary

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label(f"Delete session {self.summary.id[:8]}?")
            yield Static(one_line(self.summary.first_prompt or "(no prompt)", 60), classes="dim")
            yield Static("Its events.jsonl is removed for good.", classes="dim")
            with Horizontal():
                yield Button("Delete (y)", variant="error", id="yes")
                yield Button("Keep (n)", id="no")

    @on(Button.Pressed)
    def answer(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class SessionBrowser(Screen[None]):
    BINDINGS = [
        Binding("enter", "resume", "Resume"),
        Binding("r", "replay", "Replay"),
        Binding("d", "delete", "Delete"),
        Binding("slash", "search", "Search"),
        Binding("escape", "leave", "Back"),
    ]

    def __init__(
        self,
        store: SessionStore,
        cwd: Path,
        on_resume: Resume | None = None,
        current: str | None = None,  # the id of the session open in the app
    ) -> None:
        super().__init__()
        self.current = current
        self.store = store
        self.cwd = cwd
        self.on_resume = on_resume
        self.rows: list[SessionSummary] = []
        self._shown_width = 0  # the first prompt's column, as last drawn

    def compose(self) -> ComposeResult:
        yield Static(f"Sessions — {self.cwd} first, then all", id="browser-title")
        yield Input(placeholder="Search first prompts… (/)", id="browser-search")
        yield DataTable(id="browser-table", cursor_type="row", zebra_stripes=True)
        yield Static("enter resume · r replay · d delete · / search · esc back", id="browser-keys")

    def on_mount(self) -> None:
        self.reload()
        self.query_one(DataTable).focus()

    def on_resize(self) -> None:
        if self.is_mounted and self._prompt_width() != self._shown_width:
            self.reload(self.query_one(Input).value)

    def _prompt_width(self) -> int:
        """What is left of the screen for the first prompt once the columns that say
        which session it is are drawn; the rest scroll to the right."""
        width = self.size.width or self.app.size.width
        return max(PROMPT_MIN, min(PROMPT_MAX, width - _LEFT_OF_THE_PROMPT))

    def reload(self, search: str = "") -> None:
        self.rows, _ = sessions_for(self.store, self.cwd, show_all=True, search=search)
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear(columns=True)
        self._shown_width = prompt = self._prompt_width()
        table.add_column("id")
        table.add_column("started")
        table.add_column("first prompt", width=prompt)
        table.add_column("model", width=MODEL_WIDTH)
        for label in ("outcome", "where", "mode", "turns", "tools", "took", "tokens", "cost"):
            table.add_column(label)
        here = str(self.cwd)
        for s in self.rows:
            table.add_row(
                s.id[:8],
                _short_time(s.started),
                one_line(origin_prefix(s) + (s.title or s.first_prompt), prompt),
                model_label(s.model),
                outcome_cell(s),
                "here" if s.cwd == here else Path(s.cwd).name or s.cwd,
                s.mode,
                str(s.turns),
                str(s.tool_calls),
                duration(s.duration),
                "{}/{}".format(*usage_cells(s)[:2]),  # in/out: the table is narrow
                usage_cells(s)[2],
                key=s.id,
            )
        if self.rows and cursor > 0:
            table.move_cursor(row=min(cursor, len(self.rows) - 1))

    @on(Input.Changed, "#browser-search")
    def search(self, event: Input.Changed) -> None:
        self.reload(event.value)

    @on(Input.Submitted, "#browser-search")
    def search_done(self) -> None:
        self.query_one(DataTable).focus()

    @on(DataTable.RowSelected)
    def selected(self) -> None:
        self.action_resume()

    def _current(self) -> SessionSummary | None:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def action_search(self) -> None:
        self.query_one(Input).focus()

    def action_resume(self) -> None:
        summary = self._current()
        if summary is None:
            return
        if self.on_resume is None:
            self.notify("Resume from the terminal: loopdeck --resume " + summary.id[:8])
            return
        self.run_worker(self._resume(summary.id), name="resume", exclusive=True)

    async def _resume(self, session_id: str) -> None:
        assert self.on_resume is not None
        problem = await self.on_resume(session_id)
        if problem is not None:
            self.notify(problem, title="Not resumed", severity="error", timeout=10, markup=False)
            return
        if self.app.screen is self:
            self.app.pop_screen()

    def action_replay(self) -> None:
        from app.viewer import ReplayScreen

        summary = self._current()
        if summary is not None:
            self.app.push_screen(ReplayScreen(summary.path, speed=4.0))

    def action_delete(self) -> None:
        summary = self._current()
        if summary is None:
            return

        if summary.id == self.current:
            self.notify(
                f"Session {summary.id[:8]} is open here: switch to another one first.",
                title="Not deleted",
                severity="error",
            )
            return

        def done(confirmed: bool | None) -> None:
            if not confirmed:
                return
            try:
                delete_session(self.store, summary.id)
            except (SessionInUse, ForeignSession) as exc:
                self.notify(str(exc), title="Not deleted", severity="error", markup=False)
                return
            self.notify(f"Deleted session {summary.id[:8]}.")
            self.reload(self.query_one(Input).value)

        self.app.push_screen(ConfirmDelete(summary), done)

    def action_leave(self) -> None:
        self.app.pop_screen()


def _short_time(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%m-%d %H:%M")
    except (ValueError, OverflowError):  # not a date, or one the local zone cannot hold
        return stamp[:16]
