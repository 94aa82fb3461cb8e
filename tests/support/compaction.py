"""Sessions that fill their context window, for the compaction tests: a window a dozen
reads fill, a notes file and the turns that read it again and again, the token count the
session makes for a scripted model, and a model whose summary waits for the test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.models.base import COMPACTION_CALL, StreamItem
from agent.models.context_window import estimate_tokens, message_text
from agent.models.scripted import ScriptedModel
from tests.support.scripting import FakeCountingModel

WINDOW = 9_000  # tokens: the system prompt and tools take ~2,900; a dozen reads fill the rest


def request_tokens(messages: list[dict[str, Any]], tools: int = 0) -> int:
    """What the session counts for a scripted model (four characters a token)."""
    return sum(estimate_tokens(message_text(m)) + 4 for m in messages) + tools


def tool_turn(i: int, path: str = "notes.txt") -> dict[str, Any]:
    """A scripted turn that reads ``path`` (notes.txt) once more."""
    return {
        "text": f"Step {i}: reading the notes again.",
        "tool_calls": [{"name": "view", "arguments": {"path": path}}],
    }


def notes(workspace: Path, chars: int) -> None:
    """Write a notes.txt of at least ``chars`` characters into ``workspace``."""
    workspace.mkdir(exist_ok=True)
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    (workspace / "notes.txt").write_text(line * (chars // len(line) + 1))


class FakeSlowSummaryModel(FakeCountingModel):
    """Its summary waits until the test lets it go: the loop must go on meanwhile."""

    def __init__(self, inner: ScriptedModel) -> None:
        super().__init__(inner)
        self.release = asyncio.Event()

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        if call_index == COMPACTION_CALL:
            await self.release.wait()
        async for item in super().stream(messages, tools, call_index=call_index):
            yield item
