"""The ``@`` completion source: the workspace's files, listed once per session in a
thread (never on the UI's loop), then matched as you type (agent/session/file_index.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from widgets.completion import Candidate

if TYPE_CHECKING:
    from agent.session.file_index import FuzzyIndex

LIMIT = 50  # entries offered; the menu scrolls


class WorkspaceFiles:
    def __init__(self) -> None:
        self.index: FuzzyIndex | None = None  # None until listed

    @property
    def ready(self) -> bool:
        return self.index is not None

    async def load(self, cwd: Path, then: Callable[[], None]) -> None:
        """List ``cwd``; ``then`` runs once the list is there (to offer it for an
        ``@`` typed meanwhile)."""
        from agent.session.file_index import FuzzyIndex, list_workspace

        self.index = None
        self.index = FuzzyIndex(await asyncio.to_thread(list_workspace, cwd))
        then()

    def candidates(self, token: str) -> list[Candidate]:
        """What ``@…`` completes to: a file with a space after it, a folder without
        (to go on typing inside it)."""
        if self.index is None:
            return []
        return [
            Candidate(insert=f"@{path}" + ("" if path.endswith("/") else " "), label=path)
            for path in self.index.search(token[1:], limit=LIMIT)
        ]
