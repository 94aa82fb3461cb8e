"""The request measured before each model call costs what was appended since the last
call, not a pass over the whole history (which grows until a compaction)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.events.schema import (
    AssistantMessageData,
    Event,
    EventData,
    SessionCompactionCompleteData,
    SessionContextClearedData,
    SessionTruncationData,
    ToolExecutionCompleteData,
    ToolRequest,
    ToolResultPayload,
    UserMessageData,
)
from agent.loop.history import SUMMARY_PREFIX, History
from agent.models import context_window
from agent.models.context_window import ContextLimits, TokenMeter


class FakeMessage(dict[str, Any]):
    """A chat message that counts how often it is read."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        FakeMessage.reads += 1
        return super().get(key, default)


def event(data: EventData) -> Event:
    return Event.new(data, None)


def exchange(history: History, i: int, output: str = "ok") -> None:
    call = f"call-{i}"
    history.apply(
        event(
            AssistantMessageData(
                message_id=f"m{i}",
                content=f"step {i}",
                tool_requests=[ToolRequest(tool_call_id=call, name="view", arguments={})],
            )
        )
    )
    history.apply(
        event(
            ToolExecutionCompleteData(
                tool_call_id=call, success=True, result=ToolResultPayload(content=output)
            )
        )
    )


def test_for_model_reads_only_what_was_appended() -> None:
    history = History()
    history.max_tool_bytes = 100
    history.messages = [FakeMessage(role="user", content=f"m{i}") for i in range(50)]
    assert len(history.for_model()) == 50
    FakeMessage.reads = 0
    history.messages.append(FakeMessage(role="tool", tool_call_id="c", content="x" * 500))
    sent = history.for_model()
    assert len(sent) == 51
    assert sent[-1]["content"].startswith("x" * 100 + "\n[output cut")
    assert FakeMessage.reads <= 4  # the new message (and a look at the one before it)


def from_scratch(history: History) -> list[dict[str, Any]]:
    """What for_model gives for these messages when it has seen none before."""
    fresh = History()
    fresh.max_tool_bytes = history.max_tool_bytes
    fresh.messages = list(history.messages)
    return fresh.for_model()


def test_for_model_follows_compaction_truncation_and_clearing() -> None:
    history = History()
    history.max_tool_bytes = 10
    history.apply(event(UserMessageData(content="the task")))
    for i in range(4):
        exchange(history, i, output="long output " * 3)
    sent = history.for_model()
    assert len(sent) == 9
    assert all("[output cut" in m["content"] for m in sent if m["role"] == "tool")
    # A compaction swaps the first five messages for its summary, in place.
    history.apply(
        event(
            SessionCompactionCompleteData(
                success=True, summary_content="so far", messages_removed=5
            )
        )
    )
    assert history.for_model() == from_scratch(history)
    assert history.for_model()[0]["content"] == SUMMARY_PREFIX + "so far"
    assert len(history.for_model()) == 5
    exchange(history, 9, output="short")
    history.apply(
        event(
            SessionTruncationData(
                messages_removed_during_truncation=2,
                performed_by=History.DROP_OLDEST,
                post_truncation_messages_length=5,
                post_truncation_tokens_in_messages=0,
                pre_truncation_messages_length=7,
                pre_truncation_tokens_in_messages=0,
                token_limit=1000,
                tokens_removed_during_truncation=0,
            )
        )
    )
    assert history.for_model() == from_scratch(history)
    assert history.for_model()[-1]["content"] == "short"
    history.max_tool_bytes = 1_000  # a larger window: nothing is cut any more
    assert history.for_model() == history.messages
    history.apply(event(SessionContextClearedData(messages_cleared=5)))
    assert history.for_model() == []


def meter() -> TokenMeter:
    return TokenMeter(ContextLimits(100_000), lambda: len)


def tokens(counted: TokenMeter, messages: list[dict[str, Any]]) -> int:
    return counted.measure("", [], messages).messages


def test_meter_counts_only_appended_messages() -> None:
    counted = meter()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "a" * 10} for _ in range(100)]
    first = tokens(counted, messages)
    looked_up: list[object] = []
    original = counted.message_tokens

    def message_tokens(message: dict[str, Any]) -> int:
        looked_up.append(message)
        return original(message)

    counted.message_tokens = message_tokens  # type: ignore[method-assign]
    messages.append({"role": "user", "content": "b" * 20})
    assert tokens(counted, messages) == first + 20 + 4
    assert looked_up == [messages[-1]]


def test_meter_recounts_a_history_changed_in_place() -> None:
    counted = meter()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "a" * 10} for _ in range(5)]
    assert tokens(counted, messages) == 5 * 14
    messages[:1] = [{"role": "user", "content": "summary " * 10}]  # same length, same last
    assert tokens(counted, messages) == 4 * 14 + 80 + 4
    del messages[1:3]
    messages.append({"role": "user", "content": "c"})
    messages.append({"role": "user", "content": "d"})
    assert tokens(counted, messages) == 2 * 14 + 84 + 2 * 5
    assert tokens(counted, list(messages)) == 2 * 14 + 84 + 2 * 5


def test_meter_serialises_the_same_tools_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Offered on every call and built once by their registry: dumping them to JSON
    # before each call cost more than the rest of the measure.
    counted = meter()
    tools: list[dict[str, Any]] = [{"type": "function", "function": {"name": "a"}}]
    dumped: list[object] = []
    real_dumps = json.dumps

    def dumps(value: Any, **kwargs: Any) -> str:
        dumped.append(value)
        return real_dumps(value, **kwargs)

    monkeypatch.setattr(context_window.json, "dumps", dumps)
    first = counted.measure("", tools, []).tools
    assert counted.measure("", tools, []).tools == first
    assert counted.measure("", tools, []).tools == first
    assert dumped == [tools]


def test_meter_recounts_tools_that_changed() -> None:
    counted = meter()
    tools: list[dict[str, Any]] = [{"type": "function", "function": {"name": "a"}}]
    one = counted.measure("", tools, []).tools
    added = [*tools, {"type": "function", "function": {"name": "bb"}}]  # a new registry list
    two = counted.measure("", added, []).tools
    assert two == len(json.dumps(added, sort_keys=True)) > one
    tools.append({"type": "function", "function": {"name": "ccc"}})  # the same list, grown
    assert counted.measure("", tools, []).tools == len(json.dumps(tools, sort_keys=True))
    tools[0] = {"type": "function", "function": {"name": "dddd"}}  # an item replaced
    assert counted.measure("", tools, []).tools == len(json.dumps(tools, sort_keys=True))
