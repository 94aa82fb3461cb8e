"""Helpers to drive sessions with inline scripts and record what they emit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.events.schema import Event, Mode
from agent.log.store import SessionStore
from agent.models.base import RetryPolicy, StreamItem
from agent.models.scripted import Script, ScriptedModel
from agent.session.session import Session

# ~300 tokens of talk: a conversation a summary is smaller than (one no smaller than
# what it replaces is a failed compaction).
FILLER = " ".join(
    f"Detail {i}: the parser keeps line and column for each token." for i in range(24)
)


def padded(prompt: str) -> str:
    """``prompt`` with :data:`FILLER` after it, so a summary of it can be smaller."""
    return f"{prompt}\n{FILLER}"


def scripted(
    turns: list[dict[str, Any]], when_exhausted: str = "stop", label: str = "test"
) -> FakeCountingModel:
    script = Script.model_validate({"turns": turns, "when_exhausted": when_exhausted})
    return FakeCountingModel(ScriptedModel(script, label))


class FakeCountingModel:
    """Wraps a scripted model; counts real calls and records what each one saw."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.calls = 0
        self.seen_tools: list[list[str]] = []
        self.seen_messages: list[list[dict[str, Any]]] = []
        self.call_indexes: list[int] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01)

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        self.calls += 1
        self.call_indexes.append(call_index)
        self.seen_tools.append([t["function"]["name"] for t in tools])
        self.seen_messages.append(list(messages))
        async for item in self.inner.stream(messages, tools, call_index=call_index):
            yield item


@dataclass
class FakeRecorder:
    events: list[Event] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, etype: str) -> list[Event]:
        return [e for e in self.events if e.type == etype]


async def new_session(
    model: Any,
    tmp_path: Path,
    *,
    mode: Mode = "interactive",
    store: SessionStore | None = None,
    system_prompt: str | None = None,
    **kwargs: Any,
) -> tuple[Session, FakeRecorder]:
    """``system_prompt``: "full" for a test whose sizes are the full prompt's in a window
    that would otherwise get the compact one."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    session = await Session.create(model=model, cwd=workspace, mode=mode, store=store, **kwargs)
    if system_prompt is not None:
        session.use_system_prompt(system_prompt)
    recorder = FakeRecorder()
    session.subscribe(recorder)
    return session, recorder
