"""An inline permission request: exactly what will run or change, answered y / a / n.

It ignores keys for a short moment after it appears (is first drawn, not merely
mounted), so keystrokes meant for the prompt (typed just before it showed up) cannot
answer it by accident.
"""

from __future__ import annotations

import asyncio
import json

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Input, Static

from agent.permissions.rules import PermissionAnswer, PermissionPrompt, command_identifiers
from widgets.arming import Arming
from widgets.lazy_rich import highlighted

MAX_DIFF_LINES = 60


class PermissionPromptView(Vertical, can_focus=True):
    def __init__(self, prompt: PermissionPrompt) -> None:
        super().__init__(classes="permission-prompt")
        self.prompt = prompt
        self.answer: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
        self.arming = Arming()
        self._feedback: Input | None = None

    def compose(self) -> ComposeResult:
        prompt = self.prompt
        title = "Run this command?" if prompt.kind == "shell" else f"{prompt.intention}?"
        yield Static(Text.assemble(("⚠ Permission  ", "bold"), (title, "bold")), classes="title")
        if prompt.kind == "shell":
            if prompt.intention and not prompt.intention.startswith("Run `"):
                yield Static(Text(prompt.intention, style="italic"))
            yield Static(
                highlighted(prompt.command or "", "bash"),
                classes="what",
            )
        elif prompt.kind == "mcp":  # the server, the tool and exactly what it is sent
            arguments = json.dumps(prompt.arguments or {}, indent=2, ensure_ascii=False)
            yield Static(highlighted(arguments, "json"), classes="what")
        else:
            yield Static(_diff(prompt.diff or f"(no preview for {prompt.path})"), classes="what")
        yield Static(
            Text.assemble(
                ("y", "bold"),
                " yes, once   ",
                ("a", "bold"),
                f" {always_label(prompt)}   ",
                ("n", "bold"),
                " no (say why, or just Enter)",
            ),
            classes="keys",
        )

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.arming.painted()  # once rendered: a slow first draw does not use up the delay
        return lines

    def on_mount(self) -> None:
        self.focus()
        self.scroll_visible()

    def on_key(self, event: events.Key) -> None:
        if self._feedback is not None or event.key not in ("y", "a", "n"):
            return  # Esc and Ctrl+C still stop the turn
        event.stop()
        if not self.arming.counts(event):
            return  # typed before the request appeared: not an answer
        match event.key:
            case "y":
                self._resolve(PermissionAnswer("approve"))
            case "a":
                self._resolve(PermissionAnswer("session"))
            case _:
                self._ask_feedback()

    def _ask_feedback(self) -> None:
        self._feedback = Input(
            placeholder="Why not? (optional) — Enter to send", classes="feedback"
        )
        self.mount(self._feedback)
        self._feedback.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self._resolve(PermissionAnswer("deny", message.value.strip() or None))

    def _resolve(self, answer: PermissionAnswer) -> None:
        if not self.answer.done():
            self.answer.set_result(answer)


def always_label(prompt: PermissionPrompt) -> str:
    """Exactly what answering ``a`` lets through for the rest of the session."""
    match prompt.kind:
        case "shell":
            names = command_identifiers(prompt.command or "")
            if not names:
                return "always allow this command this session"
            listed = ", ".join(f"`{name}`" for name in names)
            return f"always allow {listed} commands this session"
        case "write":
            return "always allow file edits this session"
        case "custom-tool":
            return f"always allow {prompt.tool_name} this session"
        case "mcp":
            return f"always allow {prompt.server_name}({prompt.server_tool}) this session"
        case _:
            return "yes, always this session"


def _diff(text: str) -> RenderableType:
    text = text.rstrip("\n")  # Syntax would draw the final newline as an empty row
    lines = text.splitlines()
    if len(lines) > MAX_DIFF_LINES:
        hidden = len(lines) - MAX_DIFF_LINES
        text = "\n".join([*lines[:MAX_DIFF_LINES], f"… {hidden} more lines"])
    return highlighted(text, "diff")
