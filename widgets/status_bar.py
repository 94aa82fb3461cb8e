"""The status line: model, mode, session, turns, tokens and cost, busy or idle."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from agent.permission_level import option
from agent.transcript import Transcript
from widgets.format import cost, tokens


class StatusBar(Static):
    busy: reactive[bool] = reactive(False)
    queued: reactive[int] = reactive(0)

    def __init__(self, *, nudge_cap: int | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.transcript: Transcript | None = None
        self.model = ""
        self.mode = "interactive"
        self.session_id = ""
        self.nudge_cap = nudge_cap
        self.note = ""
        self.sandbox = ""  # e.g. "sandbox workspace-write"; empty: none configured

    def watch_busy(self, busy: bool) -> None:
        self.set_class(busy, "-busy")

    def show(
        self,
        transcript: Transcript,
        *,
        model: str,
        mode: str,
        session_id: str,
        busy: bool,
        queued: int = 0,
    ) -> None:
        self.transcript = transcript
        self.model, self.mode, self.session_id = model, mode, session_id
        self.busy = busy
        self.queued = queued
        self.set_class(mode == "autopilot", "-autopilot")
        self.refresh()

    def render(self) -> Text:
        t = self.transcript
        sep = (" │ ", "dim")
        mode = Text(self.mode, style="bold")
        if self.mode == "autopilot" and self.nudge_cap is not None:
            used = t.nudges_used if t else 0
            mode.append(f" {used}/{self.nudge_cap} nudges", style="")
        if t and t.permission_level:  # chosen before autopilot, for the whole session
            mode.append(f" · {option(t.permission_level).short}", style="")
        # The state leads: a line too long for the terminal is cut at its end, and
        # "working"/"idle" is what must stay visible.
        state = ("● working", "bold") if self.busy else ("○ idle", "")
        parts: list[Text | tuple[str, str] | str] = [
            state,
            sep,
            (self.model or "no model", "bold"),
            sep,
            mode,
            sep,
            (self.session_id[:8] or "new session", ""),
            sep,
            f"turns {t.turns if t else 0}",
        ]
        if t and (t.input_tokens or t.output_tokens):
            parts += [sep, f"{tokens(t.input_tokens) or 0} in · {tokens(t.output_tokens) or 0} out"]
        if t and t.cost:
            parts += [sep, cost(t.cost)]
        if self.sandbox:
            unguarded = self.sandbox.startswith(("no sandbox", "sandbox off"))
            parts += [sep, (self.sandbox, "bold red" if unguarded else "")]
        if self.queued:
            parts += [sep, f"{self.queued} queued"]
        if self.note:
            parts += [sep, (self.note, "italic")]
        return Text.assemble(*parts)
