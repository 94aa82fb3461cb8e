"""Sub-agents in tests: a fan-out script, models that hold sub-agents until released,
and readers of what a run wrote."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agent.events.schema import Event
from agent.models.base import ModelClient, RetryPolicy, StreamItem
from agent.models.scripted import Script, ScriptedModel


def task_call(name: str, prompt: str, agent_type: str = "explore") -> dict[str, Any]:
    return {
        "name": "task",
        "arguments": {
            "description": f"{name} search",
            "prompt": prompt,
            "agent_type": agent_type,
            "name": name,
        },
    }


def explorer(pattern: str, answer: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """An explorer's script: one grep, then its answer."""
    first: dict[str, Any] = {
        "text": f"Searching for {pattern}.",
        "tool_calls": [{"name": "grep", "arguments": {"pattern": pattern}}],
    }
    if usage is not None:
        first["usage"] = usage
    return {"turns": [first, {"text": answer}]}


FAN_OUT: dict[str, Any] = {
    "turns": [
        {
            "text": "Three searches at once.",
            "tool_calls": [
                task_call("todos", "Find the TODO markers."),
                task_call("defs", "Find the function definitions."),
                task_call("imports", "Find the imports."),
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "cost": 0.01},
        },
        {"text": "All three answered."},
    ],
    "subagents": {
        "todos": explorer(
            "TODO",
            "One TODO, in app.py line 1.",
            {"prompt_tokens": 40, "completion_tokens": 4, "cost": 0.004},
        ),
        "defs": explorer("def ", "One function: main, in app.py."),
        "imports": explorer("import", "One import: os, in app.py."),
    },
}


def fan_out_model(script: dict[str, Any] | None = None) -> ScriptedModel:
    return ScriptedModel(Script.model_validate(script or FAN_OUT), "fanout")


class FakeHeldModel:
    """A sub-agent's model whose first call waits until the test releases it."""

    def __init__(self, inner: ModelClient, held: FakeHoldingModel) -> None:
        self.inner = inner
        self.held = held

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def retry_policy(self) -> RetryPolicy:
        return self.inner.retry_policy

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        if call_index == 0:
            self.held.in_flight += 1
            self.held.most = max(self.held.most, self.held.in_flight)
            self.held.changed.set()
            try:
                await self.held.release.wait()
            finally:
                self.held.in_flight -= 1
        async for item in self.inner.stream(messages, tools, call_index=call_index):
            yield item


class FakeHoldingModel:
    """The session's model: scripted, and its sub-agents' models held at their first
    call (``in_flight`` counts them, ``most`` the most at once) until ``release``."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.release = asyncio.Event()
        self.changed = asyncio.Event()
        self.in_flight = 0
        self.most = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def retry_policy(self) -> RetryPolicy:
        return self.inner.retry_policy

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        return self.inner.stream(messages, tools, call_index=call_index)

    def for_subagent(self, name: str, agent_type: str) -> ModelClient:
        return FakeHeldModel(self.inner.for_subagent(name, agent_type), self)

    async def until_in_flight(self, count: int) -> None:
        while self.in_flight < count:
            self.changed.clear()
            await self.changed.wait()


def of_run(events: list[Event], agent_id: str) -> list[Event]:
    return [e for e in events if e.agent_id == agent_id]


def most_at_once(events: list[Event]) -> int:
    """The most sub-agent runs open at once, by the order of their frames."""
    running = most = 0
    for event in events:
        if event.type == "subagent.started":
            running += 1
            most = max(most, running)
        elif event.type in ("subagent.completed", "subagent.failed"):
            running -= 1
    return most
