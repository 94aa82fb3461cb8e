"""The status line: model, mode, session, turns, tokens and cost, busy or idle."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from agent.events.permission_level import option
from agent.transcript.fold import Transcript
from widgets.format import cost, tokens
from widgets.status_layout import Segment, fit

MAX_WIDTH = 1000  # before the first layout: everything, the layout draws it again


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
        self.set_class(mode == "plan", "-plan")
        self.refresh()

    def render(self) -> Text:
        # Fitted to the width it is drawn at (widgets/status_layout.py): at narrow widths
        # the least needed parts shorten or go first, tokens in/out stay. A resize draws
        # it again. (A Text, not a Rich renderable: Textual blends its colours the same
        # way as every other Static's.)
        width = self.content_size.width
        return fit(self.segments(), width if width > 0 else MAX_WIDTH)

    def segments(self) -> list[Segment]:
        """The line's parts in order. A new part picks its ranks against these: lower
        gives way first (session id 10, model's provider 20, sandbox word 25, nudge word
        30, sandbox 35, turn count 40, context use 45, model cut 50, model 60, cost 70,
        mode 80); state,
        tokens, an MCP server down, queued, note and a missing sandbox never shrink."""
        t = self.transcript
        # The state leads: should even the shortest forms not fit, the line is cut at
        # its end, and "working"/"idle" is what must stay visible.
        state = Text("● working", style="bold") if self.busy else Text("○ idle")
        parts = [Segment.fixed(state), _model_segment(self.model), self._mode_segment()]
        parts.append(Segment.shrinking(self.session_id[:8] or "new session", (10, "")))
        parts.append(Segment.shrinking(f"turns {t.turns if t else 0}", (40, "")))
        if t and (t.input_tokens or t.output_tokens):
            inp, out = tokens(t.input_tokens) or "0", tokens(t.output_tokens) or "0"
            parts.append(Segment.fixed(f"{inp} in · {out} out"))
        if t and t.context_tokens is not None and t.context_window:
            parts.append(_context_segment(t.context_tokens, t.context_window))
        if t and t.cost:
            parts.append(Segment.shrinking(cost(t.cost), (70, "")))
        if self.sandbox:
            parts.append(self._sandbox_segment())
        mcp = t.mcp.down_summary() if t else None
        if mcp:  # a server is down: short, and never gives way
            parts.append(Segment.fixed(Text(mcp, style="bold red")))
        if self.queued:
            parts.append(Segment.fixed(f"{self.queued} queued"))
        if self.note:
            parts.append(Segment.fixed(Text(self.note, style="italic")))
        return parts

    def _sandbox_segment(self) -> Segment:
        # Unconfined commands are a warning that never gives way; a working sandbox
        # shortens to its mode ("workspace-write"), then goes, before the turn count.
        if self.sandbox.startswith(("no sandbox", "sandbox off")):
            return Segment.fixed(Text(self.sandbox, style="bold red"))
        return Segment.shrinking(
            self.sandbox, (25, self.sandbox.removeprefix("sandbox ")), (35, "")
        )

    def _mode_segment(self) -> Segment:
        t = self.transcript
        # Autopilot's permission level is chosen once for the whole session.
        level = f" · {option(t.permission_level).short}" if t and t.permission_level else ""
        mode = Text(self.mode, style="bold")
        if self.mode != "autopilot" or self.nudge_cap is None:
            return Segment.shrinking(mode + level, (80, ""))
        used = t.nudges_used if t else 0
        short = mode.copy()
        short.append(f" {used}/{self.nudge_cap}{level}")
        full = mode + f" {used}/{self.nudge_cap} nudges{level}"
        return Segment.shrinking(full, (30, short), (80, ""))


def _context_segment(used: int, window: int) -> Segment:
    """``ctx 62%`` of the model's context window; warns as compaction nears."""
    share = used / window
    style = "bold red" if share >= 0.95 else "yellow" if share >= 0.8 else ""
    return Segment.shrinking(Text(f"ctx {min(share, 9.99):.0%}", style=style), (45, ""))


MODEL_CUT = 16  # characters of the model name kept at the narrowest


def _model_segment(model: str) -> Segment:
    """``provider/name`` → ``name`` → the name's first characters."""
    full = Text(model or "no model", style="bold")
    name = model.rsplit("/", 1)[-1] if model else ""
    steps: list[tuple[int, Text | str]] = []
    if name and name != model:
        steps.append((20, Text(name, style="bold")))
    if len(name) > MODEL_CUT:
        steps.append((50, Text(name[: MODEL_CUT - 1] + "…", style="bold")))
    steps.append((60, ""))
    return Segment.shrinking(full, *steps)
