"""The prompt: multi-line input. Enter sends; Shift+Enter or Ctrl+J adds a line;
Up/Down walk the history when the cursor is on the first/last line."""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import TextArea


class PromptInput(TextArea):
    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            compact=True,
            placeholder="Ask about this code, or give the agent a task…",
        )
        self.sent: list[str] = []
        self._history_index: int | None = None
        self._draft = ""

    async def _on_key(self, event: events.Key) -> None:
        match event.key:
            case "enter":
                event.prevent_default()
                event.stop()
                self._submit()
                return
            case "shift+enter" | "ctrl+j":
                event.prevent_default()
                event.stop()
                self.insert("\n")
                return
            case "up" if self.cursor_location[0] == 0 and self.sent:
                event.prevent_default()
                event.stop()
                self._walk_history(-1)
                return
            case "down" if self._history_index is not None and (
                self.cursor_location[0] == self.document.line_count - 1
            ):
                event.prevent_default()
                event.stop()
                self._walk_history(1)
                return
        await super()._on_key(event)

    def _submit(self) -> None:
        text = self.text.strip()
        if not text:
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._history_index = None
        self._draft = ""
        self.clear()
        self.post_message(self.Submitted(text))

    def _walk_history(self, step: int) -> None:
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.sent) - 1
        else:
            index = self._history_index + step
        if index >= len(self.sent):
            self._history_index = None
            self._set(self._draft)
            return
        self._history_index = max(0, index)
        self._set(self.sent[self._history_index])

    def _set(self, text: str) -> None:
        self.text = text
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document.get_line(last))))
