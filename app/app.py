"""The terminal app: wires a session to the timeline, the prompt and the status bar.

The app only connects things: events from the session go to the timeline and the
status bar; the prompt's messages go to the session. Widgets draw themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import Future
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from agent.events.attachments import from_mentions
from agent.events.schema import Event, Mode, SessionIdleData, SessionTodosChangedData
from agent.log.store import SessionStore
from agent.permissions.rules import PermissionAnswer, PermissionPrompt
from agent.transcript.plan_review import PlanDecision, PlanReview
from app import commands
from app.app_setup import exit_on_signals, set_up
from app.idle_upkeep import IdleUpkeep
from app.key_hint import KeyHint
from app.mode_switch import ModeSwitch
from app.resume_view import (
    Drawn,
    draw_tail,
    draw_tail_now,
    mount_rest,
    show_backlog,
    show_preview_status,
)
from app.session_switch import SessionSwitch, StartupError
from app.stop_keys import StopKeys
from app.workspace_files import WorkspaceFiles
from widgets.completion import CompletionMenu
from widgets.permission_prompt import PermissionPromptView
from widgets.plan_panel import PlanPanel
from widgets.plan_view import PlanApproval
from widgets.prompt import PromptInput
from widgets.status_bar import StatusBar
from widgets.timeline import Timeline
from widgets.todo_panel import TodoPanel

if TYPE_CHECKING:
    from textual.worker import Worker

    from agent.models.base import ModelClient

    # The session (and the loop and tools it brings) is imported by the opener, after
    # the first frame.
    from agent.session.session import Session
    from agent.session.tail_resume import TailPreview
    from agent.session.user_input import UserAnswer, UserQuestion
    from agent.tools.base import ToolResult

SessionOpener = Callable[[], Awaitable["Session"]]
STYLES = Path(__file__).resolve().parent.parent / "styles"
STATUS_EVENTS = frozenset(
    {
        "user.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.usage",
        "session.mode_changed",
        "session.model_change",
        "elicitation.completed",
        # The context's fill: after a compaction or /clear too, not only before a call.
        "session.usage_info",
        "session.compaction_complete",
        # An MCP server going down or coming back: the line's "mcp 3/4".
        "session.mcp_server_status_changed",
        "session.mcp_servers_loaded",
    }
)


class LoopdeckApp(App[int]):
    CSS_PATH = STYLES / "app.tcss"
    TITLE = "loopdeck"
    BINDINGS = [
        Binding("escape", "abort", "Abort turn"),
        Binding("shift+tab", "toggle_mode", "Cycle mode", priority=True),
        Binding("ctrl+g", "show_plan", "Plan"),
        Binding("ctrl+c", "quit_twice", "Quit", priority=True, show=False),
        Binding("ctrl+l", "load_earlier", "Load earlier", show=False),
        Binding("ctrl+o", "sessions", "Sessions"),
        Binding("ctrl+r", "runs", "Runs"),
    ]

    def __init__(
        self,
        opener: SessionOpener,
        *,
        initial_prompt: str | None = None,
        prefill: str | None = None,
        nudge_cap: int | None = None,
        resumer: Callable[[str], Awaitable[Session]] | None = None,
        store: SessionStore | None = None,
        model_factory: Callable[[str], ModelClient] | None = None,
        tail: Future[TailPreview] | None = None,
        model_opener: Callable[[str], Awaitable[Session]] | None = None,
    ) -> None:
        super().__init__()
        # How a session opens with a model chosen here (/model) when none could start.
        self._model_opener = model_opener
        # How /model builds a client for a name (the CLI's flags apply; see app/tui.py).
        self._model_factory = model_factory
        self._opener = opener
        # --resume: the end of the log, being read, drawn while the session opens.
        self._tail = tail
        self._preview: TailPreview | None = None
        self._switch = SessionSwitch(self, store, resumer)  # /resume, /fork, the browser
        self._initial_prompt = initial_prompt
        self._prefill = prefill
        self.session: Session | None = None
        self.timeline = Timeline(nudge_cap=nudge_cap, deferred=True, id="timeline")
        # Here focus moves between the timeline and the prompt: show where it is (a
        # replay's timeline always has it).
        self.timeline.add_class("-show-focus")
        self.todo_panel = TodoPanel(id="todos")  # the model's checklist, above the prompt
        self.prompt = PromptInput(id="prompt")
        self.menu = CompletionMenu(id="completion")
        self.prompt.menu = self.menu
        self.files = WorkspaceFiles()  # the workspace, for @ completion
        self.prompt.sources = {"/": commands.candidates, "@": self.files.candidates}
        self.shell_worker: Worker[ToolResult] | None = None  # a !command running
        self.hint = KeyHint(id="hint")
        self._status_due = False
        self.status = StatusBar(nudge_cap=nudge_cap, id="status")
        self._startup_error: str | None = None
        self._stop_watching: Callable[[], None] = lambda: None
        self._sent_before_open: list[str] = []  # typed while the session was opening
        self.mode_switch = ModeSwitch(self)  # Shift+Tab, /mode, the plan's "in autopilot"
        self.stop_keys = StopKeys(self)  # Esc and Ctrl+C
        self.upkeep = IdleUpkeep(  # the collector's long pauses, when nobody waits
            self, resting=lambda: self.session is not None and not self.session.busy
        )

    def compose(self) -> ComposeResult:
        yield self.timeline
        yield self.todo_panel
        yield self.menu
        yield self.prompt
        yield self.hint
        yield self.status

    def on_mount(self) -> None:
        set_up(self)
        if not self.is_headless:
            exit_on_signals(self)
        self.prompt.focus()
        if self._prefill:
            self.prompt.text = self._prefill
            self.prompt.move_cursor(self.prompt.document.end)
        self.status.note = "starting…"
        # A resumed log's tail read while the app loaded: drawn in the first frame.
        drawn = draw_tail_now(self.timeline, self._tail) if self._tail is not None else None
        if drawn is not None:
            show_preview_status(self.status, self.timeline.transcript, drawn[0])
        # Opening the session imports the model client, the loop and its tools: start
        # it once the first frame is on screen, so that frame does not wait for them.
        self.call_after_refresh(
            lambda: self.run_worker(self._start(drawn), name="open-session", exclusive=True)
        )

    async def on_unmount(self) -> None:
        # Every way out (an error in a widget, the terminal closing, App.exit) ends the
        # running turn and writes the log, as quitting does; closing twice is harmless.
        if self.session is not None:
            self._stop_watching()  # the widgets are gone: nothing left to draw on
            await self.session.close()

    async def _start(self, drawn: Drawn | None) -> None:
        tail = self._tail
        preview = await draw_tail(self.timeline, tail, drawn) if tail is not None else None
        self._preview = preview
        if preview is not None and drawn is None:
            show_preview_status(self.status, self.timeline.transcript, preview)
        try:
            session = await self._opener()
        except StartupError as exc:
            self._startup_error = str(exc)
            self.status.note = "no session"
            self.status.refresh()
            self.timeline.mount(Static(str(exc), classes="startup-error", markup=False))
            if self._sent_before_open and not self.prompt.text:
                # Nothing typed is lost: it goes back to the prompt.
                self.prompt.text = "\n\n".join(self._sent_before_open)
            self._sent_before_open.clear()
        else:
            self._show(session)
        if preview is not None:  # the drawn tail's other blocks, above the screen
            self.run_worker(mount_rest(self.timeline), name="tail-rest", group="tail-rest")

    def _show(self, session: Session) -> None:
        """Make ``session`` the app's: its log in the timeline, its events from now on."""
        self.session = session
        self._startup_error = None
        if self.status.nudge_cap is None:  # no cap given: the session's default
            self.status.nudge_cap = self.timeline.nudge_cap = session.max_autopilot_continues
        session.permissions.asker = self._ask_permission
        session.plan.reviewer = self._review_plan
        session.questions.asker = self._ask_user
        session.permission_level.enable()  # here somebody can choose it
        preview, self._preview = self._preview, None
        show_backlog(self.timeline, session, preview)
        self.todo_panel.show(self.timeline.transcript.todos.items)
        self._stop_watching = session.subscribe(self._on_event)
        self.run_worker(
            self.files.load(session.cwd, self._files_listed),
            name="file-index",
            group="file-index",
            exclusive=True,
        )
        self.status.note = ""
        self._refresh_status()
        if session.mode == "autopilot":  # the demo, --autopilot, a resumed autopilot session
            self.mode_switch.before_autopilot(self._send_opening, on_cancel="start interactive")
        else:
            self._send_opening(True)

    def _send_opening(self, send: bool) -> None:
        """Send the prompt given on the command line and what was typed while opening.

        Without ``send`` (autopilot was cancelled at the start) they wait in the prompt.
        """
        texts = [self._initial_prompt] if self._initial_prompt else []
        texts += self._sent_before_open
        self._sent_before_open = []
        if not send:
            assert self.session is not None
            self.session.set_mode("interactive")
            self._refresh_status()
            if texts and not self.prompt.text:
                self.prompt.text = "\n\n".join(texts)
            return
        for text in texts:
            self._send(text)

    # --- session -> widgets ------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        self.timeline.apply(event)
        if isinstance(event.data, SessionTodosChangedData):
            self.todo_panel.show(self.timeline.transcript.todos.items)
        elif isinstance(event.data, SessionIdleData):
            # The session rests: draw its last state now.
            self.timeline.show_pending()
            self._refresh_status()
            self.upkeep.on_rest()  # the collector's and allocator's work, put off till now
        elif event.type in STATUS_EVENTS and not self._status_due:
            # Like the timeline, the status line catches up once per burst of events.
            self._status_due = True
            self.call_next(self._refresh_status)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown | events.Paste):
            self.upkeep.on_input()
        await super().on_event(event)

    def _refresh_status(self) -> None:
        self._status_due = False
        session = self.session
        if session is None:
            return
        busy = session.busy and not self._idle_now()
        if not busy:
            self._measure_at_rest(session)
        if session.sandbox is not None:
            self.status.sandbox = session.sandbox.label(session.mode)
        self.status.show(
            self.timeline.transcript,
            model=session.model.name,
            mode=session.mode,
            session_id=session.id,
            busy=busy,
            queued=session.queued,
        )
        self._update_hint()

    def _measure_at_rest(self, session: Session) -> None:
        """At rest, ``ctx`` is what /context counts now (the last reply and results
        included, by the meter's latest scale), not the count sent before the last call:
        one number for both."""
        keeper = session.context
        if keeper.meter.ready:  # (the first count loads a tokenizer: never on this loop)
            usage = keeper.measure()
            transcript = self.timeline.transcript
            transcript.context_tokens, transcript.context_window = usage.total, usage.window

    def _update_hint(self) -> None:
        self.hint.show_for(in_timeline=self.timeline.walks(self.focused), busy=self.status.busy)

    def on_descendant_focus(self, _: events.DescendantFocus) -> None:
        self._update_hint()

    def on_descendant_blur(self, _: events.DescendantBlur) -> None:
        self._update_hint()

    def _idle_now(self) -> bool:
        # The idle event arrives just before the session's runner task ends.
        session = self.session
        return session is not None and not self.timeline.transcript.busy and session.queued == 0

    # --- user -> session -----------------------------------------------------------

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text
        if commands.parse(text) is not None:
            self.run_worker(commands.run(self, text), group="command")
        elif text.startswith("!"):
            self._run_shell(text[1:].strip())
        else:
            self._send(text)

    def _run_shell(self, command: str) -> None:
        session = self.session
        if session is None:
            self.say("No session is open yet.")
        elif not command:
            self.say("Type a command after the !, e.g. !ls")
        elif self.working:
            self.say("A !command runs when the agent is idle (Esc stops the turn).")
        else:
            self.shell_worker = self.run_worker(session.run_user_command(command), group="shell")

    def _send(self, text: str) -> None:
        if self.session is None:
            if self._startup_error is not None:
                self.notify(self._startup_error, title="No session", severity="error", markup=False)
            else:
                self._sent_before_open.append(text)
                self.notify("The session is still opening: this is sent as soon as it is.")
            return
        # Right after send() the prompt sits in the queue until the runner task starts,
        # even when the session was idle: only a send to a working session is queued.
        was_busy = self.session.busy and not self._idle_now()
        attachments = from_mentions(text, self.session.cwd)
        self.session.send(text, attachments=attachments or None)
        self._refresh_status()
        if was_busy:
            self.notify("Queued: it will be sent when the agent is done.", timeout=3)

    @asynccontextmanager
    async def _asking(self, view: Widget) -> AsyncIterator[None]:
        """``view`` (a question) at the end of the timeline while it waits for its
        answer; then gone, and the keys back in the prompt."""
        self.timeline.show_pending()  # the turn asking goes above its question
        await self.timeline.mount(view)
        self.timeline.scroll_end(animate=False)
        try:
            yield
        finally:
            await view.remove()
            self.prompt.focus()

    async def _ask_permission(self, prompt: PermissionPrompt) -> PermissionAnswer:
        """Show the request inline at the end of the timeline and wait for y / a / n."""
        view = PermissionPromptView(prompt)
        async with self._asking(view):
            return await view.answer

    async def _ask_user(self, question: UserQuestion) -> UserAnswer:
        """Show the model's question inline at the end of the timeline; wait for the answer."""
        from widgets.ask_user_prompt import AskUserPromptView

        view = AskUserPromptView(question)
        async with self._asking(view):
            return await view.answer

    # --- what commands use (CommandHost, app/commands.py) --------------------------

    @property
    def working(self) -> bool:
        """Whether the agent is busy with a prompt now."""
        return self.session is not None and self.session.busy and not self._idle_now()

    def say(self, text: str) -> None:
        """Show a command's output at the end of the timeline (not sent to the model)."""
        self.timeline.mount(Static(text, classes="command-output", markup=False))
        self.timeline.scroll_end(animate=False)

    def prefill(self, text: str) -> None:
        self.prompt.text = text
        self.prompt.move_cursor(self.prompt.document.end)
        self.prompt.focus()

    def refresh_status(self) -> None:
        self._refresh_status()

    def set_agent_mode(self, mode: Mode) -> None:
        """The one way modes change (Shift+Tab, /mode, /plan, /autopilot)."""
        self.mode_switch.set(mode)

    def show_plan(self) -> None:
        """What /plan shows besides switching to plan mode: the plan so far, if any."""
        session = self.session
        if session is not None and session.plan.read():
            self.action_show_plan()
        else:
            self.say(
                "Plan mode: the model investigates and writes a plan before changing anything."
            )

    async def switch_model(self, name: str) -> None:
        from app.model_setup import make_model

        session = self.session
        if session is None:
            return
        try:
            model = await asyncio.to_thread(self._model_factory or make_model, name)
        except Exception as exc:  # a name the client refuses: say so, keep the current one
            self.say(f"Model not changed: {exc}")
            return
        session.set_model(model)
        self._refresh_status()

    @property
    def can_open_with_model(self) -> bool:
        """No session could open, and /model can open one with a model picked here."""
        return self.session is None and self._startup_error is not None and bool(self._model_opener)

    async def open_with_model(self, name: str) -> None:
        """Open the session the start could not, with ``name`` as its model (/model)."""
        if self._model_opener is None or self.session is not None:
            return
        try:
            session = await self._model_opener(name)
        except StartupError as exc:
            self.say(f"Not started with {name}: {exc}")
            return
        for box in self.query(".startup-error"):
            box.remove()
        self.status.note = ""
        self._show(session)
        self._refresh_status()

    async def resume_session(self, id_or_prefix: str) -> None:
        await self._switch.resume(id_or_prefix)

    async def fork_session(self) -> None:
        await self._switch.fork()

    def _files_listed(self) -> None:
        if self.prompt.has_focus:
            self.prompt.refresh_completion()  # an @ typed while listing

    def action_abort(self) -> None:
        self.stop_keys.escape()

    async def action_quit_twice(self) -> None:
        await self.stop_keys.ctrl_c()

    async def _review_plan(self, review: PlanReview) -> PlanDecision:
        """Ask under the proposed plan: approve (interactive or autopilot) or keep planning."""
        view = PlanApproval()
        async with self._asking(view):
            while True:
                action, feedback = await view.answer
                if action != "autopilot" or await self.mode_switch.autopilot_allowed():
                    return PlanDecision(action, feedback)
                view.ask_again()  # the permission level was not chosen: ask again

    def action_toggle_mode(self) -> None:
        """Shift+Tab: interactive → plan → autopilot → interactive."""
        self.mode_switch.cycle()

    def action_toggle_autopilot(self) -> None:
        """The palette's shortcut: interactive or plan ⇄ autopilot, skipping plan."""
        self.mode_switch.toggle_autopilot()

    def action_show_plan(self) -> None:
        """Open the session's plan (Ctrl+G; the ``/plan`` command)."""
        session = self.session
        if session is None:
            self.push_screen(PlanPanel(None))
            return
        try:
            text = session.plan.read()
        except OSError as exc:
            self.notify(f"Cannot read the plan: {exc}", severity="error", markup=False)
            return
        self.push_screen(PlanPanel(text, session.plan.path))

    def action_sessions(self) -> None:
        self._switch.browse()

    def action_runs(self) -> None:
        from app.runs import open_board

        open_board(self)

    def adopt(self, session: Session) -> None:
        """Show ``session`` in place of the one closed (see app/session_switch.py)."""
        self.timeline.reset()
        self._initial_prompt = None
        self._show(session)

    def action_load_earlier(self) -> None:
        self.timeline.load_earlier()

    async def action_quit(self) -> None:
        if self.session is not None:
            await self.session.close()
        self.exit(0)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:  # type: ignore[type-arg]
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Toggle autopilot", "Switch to autopilot and back", self.action_toggle_autopilot
        )
        yield SystemCommand(
            "Cycle mode",
            "Switch interactive → plan → autopilot (Shift+Tab)",
            self.action_toggle_mode,
        )
        yield SystemCommand("Plan", "Show the session's plan (Ctrl+G)", self.action_show_plan)
        yield SystemCommand("Abort turn", "Stop the running turn (Esc)", self.action_abort)
        yield SystemCommand(
            "Load earlier blocks", "Mount older timeline blocks", self.action_load_earlier
        )
        yield SystemCommand(
            "Sessions", "Browse, resume, replay or delete sessions (Ctrl+O)", self.action_sessions
        )
        yield from commands.system_commands(self)
