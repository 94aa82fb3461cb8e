"""The timeline's non-turn blocks: user messages, nudges, completion, errors, notices."""

from __future__ import annotations

import json

from rich.console import Group, RenderableType
from rich.text import Text
from textual.widgets import Static

from agent.transcript.blocks import (
    AbortBlock,
    ErrorBlock,
    NoticeBlock,
    RawBlock,
    TaskCompleteBlock,
    UserBlock,
)
from widgets.format import abort_reason
from widgets.lazy_rich import rich_markdown


class UserMessageView(Static):
    def __init__(self, block: UserBlock) -> None:
        super().__init__(classes="user-message")
        self.block = block

    def render(self) -> RenderableType:
        text = Text.assemble(("❯ ", "bold"), shown_lines(self.block.content))
        if self.block.attachments:
            text.append("\n  ")
            for label in self.block.attachments:
                text.append(f" @{label} ", style="reverse")
                text.append(" ")
        return text


MESSAGE_LINES = 12  # a longer message (a paste) shows its start and how much more it held


def shown_lines(content: str) -> Text:
    """A user's message as the timeline shows it: whole, or a long paste's first lines
    and a count of the rest (the model got all of it)."""
    lines = content.split("\n")
    if len(lines) <= MESSAGE_LINES:
        return Text(content)
    text = Text("\n".join(lines[: MESSAGE_LINES - 2]))
    text.append(f"\n… {len(lines) - (MESSAGE_LINES - 2):,} more lines", style="dim italic")
    return text


class NudgeView(Static):
    """An autopilot continuation: the loop pushing the model on, numbered."""

    def __init__(self, block: UserBlock, cap: int | None) -> None:
        super().__init__(classes="nudge")
        self.block = block
        self.cap = cap

    def render(self) -> RenderableType:
        number = self.block.nudge_number or 0
        of = f" of {self.cap}" if self.cap else ""
        first = self.block.content.strip().split("\n")[0].split(". ")[0].strip()
        if first and not first.endswith((".", "!", "?", ":")):
            first += "."
        return Text.assemble(
            (f"↻ autopilot nudge {number}{of}", "bold"),
            ("  " if first else "", ""),
            (first, "italic"),
        )


class TaskCompleteView(Static):
    def __init__(self, block: TaskCompleteBlock) -> None:
        super().__init__(classes="task-complete")
        self.block = block

    def render(self) -> RenderableType:
        title = Text("✔ Task complete", style="bold green")
        summary = self.block.summary or "(no summary)"
        return Group(title, rich_markdown(summary))


class ErrorView(Static):
    def __init__(self, block: ErrorBlock) -> None:
        super().__init__(classes="error")
        self.block = block

    def render(self) -> RenderableType:
        block = self.block
        return Group(
            Text.assemble(
                ("✗ Error ", "bold red"), (f"({block.error_type}) ", "bold"), block.message
            ),
            Text(f"  → {block.hint}", style="italic"),
        )


class AbortView(Static):
    def __init__(self, block: AbortBlock, next_step: str = "Send a message to go on.") -> None:
        super().__init__(classes="abort")
        self.block = block
        self.next_step = next_step  # what happens now (a queued message is sent next)

    def render(self) -> RenderableType:
        return Text(f"■ Aborted — {abort_reason(self.block.reason)} {self.next_step}")


class NoticeView(Static):
    def __init__(self, block: NoticeBlock) -> None:
        super().__init__(classes=f"notice -{block.kind}")
        self.block = block

    def render(self) -> RenderableType:
        text = Text(f"• {self.block.message}")
        if self.block.tip:
            text.append(f"  ({self.block.tip})", style="italic")
        return text


class RawView(Static):
    """An event loopdeck does not know: shown compactly, never dropped."""

    def __init__(self, block: RawBlock) -> None:
        super().__init__(classes="raw")
        self.block = block

    def render(self) -> RenderableType:
        data = json.dumps(self.block.data, ensure_ascii=False)
        if len(data) > 160:
            data = data[:159] + "…"
        return Text.assemble((f"{{{self.block.type}}} ", "bold"), data)
