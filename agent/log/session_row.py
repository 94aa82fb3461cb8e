"""One session as the listing shows it (``loopdeck sessions``, the browser, the SDK's
session list): read from its metadata, or its log when the metadata is missing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(slots=True)
class SessionSummary:
    id: str
    path: Path
    started: str = ""
    updated: str = ""
    cwd: str = ""
    model: str = ""
    mode: str = "interactive"
    turns: int = 0
    first_prompt: str = ""
    title: str = ""  # set by /rename (session.title_changed)
    tool_calls: int = 0
    # completed / error / aborted / stopped / in progress / interrupted (process gone)
    outcome: str = "in progress"
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    # A fork's origin, e.g. "copilot 6a23e131" (the metadata's ``forkedFrom``).
    origin: str = ""

    @property
    def duration(self) -> float | None:
        """Seconds from start to the last recorded activity."""
        try:
            start = datetime.fromisoformat(self.started)
            end = datetime.fromisoformat(self.updated)
            return max(0.0, (end - start).total_seconds())
        except (ValueError, TypeError):  # TypeError: one stamp has a zone, the other not
            return None
