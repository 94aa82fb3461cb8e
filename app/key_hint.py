"""The line of keys under the prompt: what the keys do where focus is, and now.

In the prompt it names sending, new lines, modes and the palette; while the agent
works, that Enter queues and Esc aborts; in the timeline, how to move between cards
and back. It redraws only when its text changes.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

IDLE_HINT = "Enter send · Shift+Enter/Ctrl+J new line · Shift+Tab mode · Ctrl+P commands"
BUSY_HINT = "Agent working — Enter queues your message · Esc aborts the turn"
TIMELINE_HINT = "↑↓ or j/k move between cards · Enter opens one · Tab back to the prompt"


class KeyHint(Static):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(IDLE_HINT, **kwargs)
        self._text = IDLE_HINT

    def show_for(self, *, in_timeline: bool, busy: bool) -> None:
        """The keys for focus in the timeline (and the way out), else the prompt's."""
        hint = TIMELINE_HINT if in_timeline else BUSY_HINT if busy else IDLE_HINT
        if hint != self._text:
            # Static.update asks for a layout of the whole screen: only when it changes.
            self._text = hint
            self.update(hint)
