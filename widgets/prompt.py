"""The prompt: multi-line input. Enter sends; Shift+Enter or Ctrl+J adds a line;
Up/Down walk the history when the cursor is on the first/last line.

Typing ``/`` at the start, or ``@`` after a space, opens the completion menu (see
widgets/completion.py); while it is open Up/Down move in it, Tab/Enter accept, Esc
closes it. A paste of many lines shows as one "[pasted N lines]" marker (Ctrl+T
expands it); the full text is what is sent.
"""

from __future__ import annotations

import re

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from widgets.completion import Candidate, CompletionMenu, Source

COLLAPSE_LINES = 8  # a paste of this many lines or more is shown as a marker
_MENTION_TOKEN = re.compile(r"(?:^|\s)(@\S*)$")


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
        # Completion: the menu (composed by the app) and a source per trigger.
        self.menu: CompletionMenu | None = None
        self.sources: dict[str, Source] = {}
        self._token_start: tuple[int, int] | None = None
        # The text when the menu was closed (Esc, or a choice taken): it stays closed
        # until the text differs.
        self._dismissed_at: str | None = None
        # Collapsed pastes: marker -> full text.
        self.pastes: dict[str, str] = {}

    # --- completion --------------------------------------------------------------

    def _token(self) -> tuple[str, tuple[int, int]] | None:
        """The completable token that ends at the cursor, and where it starts."""
        row, col = self.cursor_location
        before = self.document.get_line(row)[:col]
        if row == 0 and before.startswith("/") and not any(c.isspace() for c in before):
            return before, (0, 0)
        match = _MENTION_TOKEN.search(before)
        if match is not None:
            token = match.group(1)
            return token, (row, col - len(token))
        return None

    def refresh_completion(self) -> None:
        """Offer what the sources have for the token at the cursor (or close)."""
        menu = self.menu
        if menu is None:
            return
        dismissed = self._dismissed_at is not None and self._dismissed_at == self.text
        token = None if dismissed else self._token()
        source = self.sources.get(token[0][0]) if token is not None else None
        if token is None or source is None:
            self._token_start = None
            menu.close()
            return
        self._token_start = token[1]
        menu.offer(source(token[0]))

    def _on_text_area_changed(self, _: TextArea.Changed) -> None:
        self.refresh_completion()

    def _accept(self, candidate: Candidate) -> None:
        start = self._token_start
        if start is None:
            return
        result = self.replace(candidate.insert, start, self.cursor_location)
        self.move_cursor(result.end_location)
        self._dismissed_at = self.text
        if self.menu is not None:
            self.menu.close()

    def _menu_key(self, key: str) -> bool:
        """Handle ``key`` for an open menu; True when it was used."""
        menu = self.menu
        if menu is None or not menu.is_open:
            return False
        match key:
            case "up":
                menu.move(-1)
            case "down":
                menu.move(1)
            case "escape":
                self._dismissed_at = self.text
                menu.close()
            case "tab" | "enter":
                chosen = menu.chosen
                if chosen is None:
                    return False
                self._accept(chosen)
                if key == "enter" and chosen.submit:
                    self._submit()
            case _:
                return False
        return True

    # --- paste -------------------------------------------------------------------

    async def _on_paste(self, event: events.Paste) -> None:
        # Terminals and tmux send a paste's line breaks as CR (or CRLF): one convention.
        text = event.text.replace("\r\n", "\n").replace("\r", "\n")
        event.text = text
        lines = len(text.splitlines()) or 1  # a final line break ends a line, adds none
        if lines < COLLAPSE_LINES or self.read_only:
            return  # TextArea's own handler (dispatched after this one) inserts it
        event.prevent_default()
        event.stop()
        marker = f"[pasted {lines} lines]"
        number = 1
        while marker in self.pastes:
            number += 1
            marker = f"[pasted {lines} lines #{number}]"
        self.pastes[marker] = text
        result = self.replace(marker, *self.selection)
        self.move_cursor(result.end_location)

    def expand_pastes(self) -> bool:
        """Put the full text of every collapsed paste back in the prompt."""
        text = self.text
        expanded = self._expanded(text)
        if expanded == text:
            return False
        self._set(expanded)
        self.pastes.clear()
        return True

    def _expanded(self, text: str) -> str:
        for marker, full in self.pastes.items():
            text = text.replace(marker, full)
        return text

    # --- keys --------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        if self._menu_key(event.key):
            event.prevent_default()
            event.stop()
            return
        match event.key:
            case "ctrl+t" if self.pastes:
                event.prevent_default()
                event.stop()
                self.expand_pastes()
                return
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

    def clear_draft(self) -> bool:
        """Clear what is typed (Esc, Ctrl+C), keeping it in the history for Up."""
        text = self._expanded(self.text).strip()
        if not text:
            return False
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._history_index = None
        self._draft = ""
        self.pastes.clear()
        self.clear()
        if self.menu is not None:
            self.menu.close()
        return True

    def _submit(self) -> None:
        text = self._expanded(self.text).strip()
        if not text:
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._history_index = None
        self._draft = ""
        self.pastes.clear()
        self.clear()
        if self.menu is not None:
            self.menu.close()
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
        # A recalled "/command" opens no menu: Up/Down keep walking the history.
        self._dismissed_at = text
        self.text = text
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document.get_line(last))))
