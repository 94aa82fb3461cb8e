"""The loop's rules (DESIGN §1), driven by scripted models, no UI."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent.events.schema import (
    AssistantMessageData,
    SessionErrorData,
    SessionIdleData,
    SessionTaskCompleteData,
    ToolExecutionCompleteData,
    UserMessageData,
)
from agent.loop.turn_loop import NUDGE
from agent.models.base import RetryPolicy, StreamItem
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agent.tools.registry import ToolRegistry, default_tools
from tests.support.scripting import FakeCountingModel, new_session, scripted

GREP = {"name": "grep", "arguments": {"pattern": "def main"}}


async def test_one_turn_pair_per_model_call(tmp_path: Path) -> None:
    model = scripted(
        [
            {"text": "Searching.", "tool_calls": [GREP]},
            {
                "text": "Looking closer.",
                "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}],
            },
            {"text": "It is in app.py."},
        ]
    )
    session, rec = await new_session(model, tmp_path)
    outcome = await session.send_and_wait("where is main?")

    assert model.calls == 3
    assert len(rec.of("assistant.turn_start")) == 3
    assert len(rec.of("assistant.turn_end")) == 3
    assert outcome.final_text == "It is in app.py."
    assert outcome.turns == 3
    # Per turn: start, message, tools, end — in that order.
    core = [
        t
        for t in rec.types()
        if t
        in {
            "assistant.turn_start",
            "assistant.message",
            "tool.execution_start",
            "tool.execution_complete",
            "assistant.turn_end",
        }
    ]
    turn = [
        "assistant.turn_start",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_end",
    ]
    assert core == turn + turn + ["assistant.turn_start", "assistant.message", "assistant.turn_end"]


async def test_each_turn_sees_the_whole_conversation(tmp_path: Path) -> None:
    model = scripted([{"text": "a", "tool_calls": [GREP]}, {"text": "done"}])
    session, _ = await new_session(model, tmp_path)
    await session.send_and_wait("find main")
    second = model.seen_messages[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "grep"
    assert second[3]["tool_call_id"] == second[2]["tool_calls"][0]["id"]


async def test_idle_exactly_once_and_last_per_send(tmp_path: Path) -> None:
    model = scripted([{"text": "one"}, {"text": "two"}])
    session, rec = await new_session(model, tmp_path)
    await session.send_and_wait("first")
    assert rec.types().count("session.idle") == 1
    assert rec.types()[-1] == "session.idle"
    await session.send_and_wait("second")
    assert rec.types().count("session.idle") == 2
    assert rec.types()[-1] == "session.idle"


async def test_queued_sends_each_get_their_idle(tmp_path: Path) -> None:
    model = scripted([{"text": "one", "delay_ms": 30}, {"text": "two"}])
    session, rec = await new_session(model, tmp_path)
    first = session.send("first")
    second = session.send("second")
    results = await asyncio.gather(first, second)
    assert [r.final_text for r in results] == ["one", "two"]
    idles = [i for i, t in enumerate(rec.types()) if t == "session.idle"]
    users = [i for i, t in enumerate(rec.types()) if t == "user.message"]
    assert len(idles) == 2 and idles[0] < users[1] < idles[1]


async def test_task_complete_is_not_offered_in_interactive_mode(tmp_path: Path) -> None:
    model = scripted(
        [
            {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"summary": "x"}}]},
            {"text": "ok"},
        ]
    )
    session, rec = await new_session(model, tmp_path)
    outcome = await session.send_and_wait("hi")
    assert "task_complete" not in model.seen_tools[0]
    assert rec.of("session.task_complete") == []
    complete = rec.of("tool.execution_complete")[0].data
    assert isinstance(complete, ToolExecutionCompleteData) and not complete.success
    assert outcome.task_complete is False
    # Interactive mode never nudges.
    assert not any(
        isinstance(e.data, UserMessageData) and e.data.is_autopilot_continuation for e in rec.events
    )


async def test_autopilot_task_complete_ends_the_loop_with_its_summary(tmp_path: Path) -> None:
    model = scripted(
        [
            {"text": "Working.", "tool_calls": [GREP]},
            {
                "text": "",
                "tool_calls": [{"name": "task_complete", "arguments": {"summary": "Fixed it."}}],
            },
            {"text": "never reached"},
        ]
    )
    session, rec = await new_session(model, tmp_path, mode="autopilot")
    outcome = await session.send_and_wait("fix the bug")
    assert "task_complete" in model.seen_tools[0]
    assert model.calls == 2
    done = rec.of("session.task_complete")
    assert len(done) == 1
    assert isinstance(done[0].data, SessionTaskCompleteData)
    assert done[0].data.summary == "Fixed it."
    assert outcome.task_complete and outcome.summary == "Fixed it."
    assert rec.types()[-1] == "session.idle"


async def test_autopilot_nudges_then_completes(tmp_path: Path) -> None:
    model = scripted(
        [
            {"text": "My plan is..."},
            {"text": "Still planning."},
            {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"summary": "s"}}]},
        ]
    )
    session, rec = await new_session(model, tmp_path, mode="autopilot")
    outcome = await session.send_and_wait("do it")
    nudges = [
        e
        for e in rec.events
        if isinstance(e.data, UserMessageData) and e.data.is_autopilot_continuation
    ]
    assert len(nudges) == 2 and outcome.nudges == 2
    assert all(isinstance(n.data, UserMessageData) and n.data.content == NUDGE for n in nudges)
    assert "task_complete tool" in NUDGE and "open questions" in NUDGE
    assert outcome.task_complete
    # The nudge reaches the model as a user message.
    assert model.seen_messages[1][-1] == {"role": "user", "content": NUDGE}


@pytest.mark.parametrize("cap", [5, 2])
async def test_nudges_are_capped(tmp_path: Path, cap: int) -> None:
    model = scripted([{"text": "I think we are done."}], when_exhausted="repeat_last")
    kwargs: dict[str, Any] = {} if cap == 5 else {"max_autopilot_continues": cap}
    session, rec = await new_session(model, tmp_path, mode="autopilot", **kwargs)
    outcome = await asyncio.wait_for(session.send_and_wait("go"), 10)
    assert outcome.stopped_at_cap and not outcome.task_complete
    assert outcome.nudges == cap
    assert model.calls == cap + 1
    assert len(rec.of("session.autopilot_stopped")) == 1
    assert rec.types()[-1] == "session.idle"


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for a state of the session (polled: the interval only bounds the latency)."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), timeout)


class FakeHeldModel:
    """A scripted model whose reply waits, once it has begun, until the test lets it go:
    "mid run" is a state the test reaches, not a moment it guesses."""

    def __init__(self, inner: FakeCountingModel) -> None:
        self.inner = inner
        self.release = asyncio.Event()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def retry_policy(self) -> RetryPolicy:
        return self.inner.retry_policy

    @property
    def calls(self) -> int:
        return self.inner.calls

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        async for item in self.inner.stream(messages, tools, call_index=call_index):
            await self.release.wait()
            yield item


async def test_switching_to_interactive_mid_run_stops_nudging(tmp_path: Path) -> None:
    model = FakeHeldModel(scripted([{"text": "planning"}], when_exhausted="repeat_last"))
    session, rec = await new_session(model, tmp_path, mode="autopilot")
    future = session.send("go")
    await until(lambda: model.calls == 1)  # the first turn is running
    session.set_mode("interactive")
    model.release.set()
    outcome = await asyncio.wait_for(future, 5)
    assert outcome.nudges == 0 and model.calls == 1
    assert rec.of("session.mode_changed")[0].data.new_mode == "interactive"  # type: ignore[union-attr]


async def test_rate_limit_is_retried_with_backoff_then_succeeds(tmp_path: Path) -> None:
    model = scripted(
        [{"error": {"type": "rate_limit", "message": "slow down"}}, {"text": "Recovered."}]
    )
    session, rec = await new_session(model, tmp_path)
    outcome = await session.send_and_wait("hi")
    assert outcome.final_text == "Recovered." and outcome.error is None
    assert len(rec.of("assistant.turn_retry")) == 1
    assert len(rec.of("assistant.turn_start")) == 1
    assert model.call_indexes == [0, 1]


async def test_persistent_server_error_ends_with_error_then_idle(tmp_path: Path) -> None:
    model = scripted([{"error": {"type": "server", "message": "boom"}}], "repeat_last")
    session, rec = await new_session(model, tmp_path)
    outcome = await session.send_and_wait("hi")
    assert model.calls == 4  # first try + 3 retries
    errors = rec.of("session.error")
    assert len(errors) == 1
    assert isinstance(errors[0].data, SessionErrorData)
    assert errors[0].data.error_type == "server"
    assert outcome.error is not None
    assert rec.types()[-1] == "session.idle"
    assert len(rec.of("assistant.turn_start")) == len(rec.of("assistant.turn_end")) == 1


async def test_auth_error_is_not_retried(tmp_path: Path) -> None:
    model = scripted([{"error": {"type": "auth", "message": "bad key"}}])
    session, rec = await new_session(model, tmp_path)
    await session.send_and_wait("hi")
    assert model.calls == 1
    assert rec.of("session.error")[0].data.error_type == "auth"  # type: ignore[union-attr]
    assert rec.of("assistant.turn_retry") == []


async def test_error_in_autopilot_stops_without_nudging(tmp_path: Path) -> None:
    model = scripted([{"error": {"type": "context_limit", "message": "too long"}}])
    session, rec = await new_session(model, tmp_path, mode="autopilot")
    outcome = await session.send_and_wait("hi")
    assert outcome.error is not None and outcome.nudges == 0
    assert rec.types()[-1] == "session.idle"


async def test_abort_during_model_call_is_prompt(tmp_path: Path) -> None:
    model = scripted([{"text": "a long and slow answer " * 20, "delay_ms": 10_000}])
    session, rec = await new_session(model, tmp_path)
    future = session.send("hi")
    # Abort once the reply has begun (what streamed is kept, checked below).
    streamed = lambda: "".join(e.data.delta_content for e in rec.of("assistant.message_delta"))  # type: ignore[union-attr]  # noqa: E731
    await until(lambda: streamed().startswith("a long"))
    started = time.monotonic()
    session.abort()
    outcome = await asyncio.wait_for(future, 2)
    assert time.monotonic() - started < 1.0
    assert outcome.aborted
    types = rec.types()
    assert types[-1] == "session.idle"
    idle = rec.events[-1].data
    assert isinstance(idle, SessionIdleData) and idle.aborted is True
    assert "abort" in types
    assert types.count("assistant.turn_start") == types.count("assistant.turn_end") == 1
    # What streamed before the abort is kept as the (partial) message.
    partial = rec.of("assistant.message")
    assert len(partial) == 1 and isinstance(partial[0].data, AssistantMessageData)
    assert partial[0].data.content.startswith("a long")


class FakeSlowArgs(ToolArgs):
    seconds: float


class FakeSlowTool(Tool):
    name: ClassVar[str] = "slow"
    description: ClassVar[str] = "sleeps"
    Args = FakeSlowArgs
    cancelled: ClassVar[bool] = False
    running: ClassVar[bool] = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        FakeSlowTool.running = True
        try:
            await asyncio.sleep(args.seconds)
        except asyncio.CancelledError:
            FakeSlowTool.cancelled = True
            raise
        return ToolResult(content="slept")


def with_slow_tool(mode: str) -> ToolRegistry:
    registry = default_tools(autopilot=mode == "autopilot")
    registry.register(FakeSlowTool())
    return registry


async def test_abort_during_tool_cancels_it_and_keeps_history_whole(tmp_path: Path) -> None:
    model = scripted(
        [
            {"text": "", "tool_calls": [{"name": "slow", "arguments": {"seconds": 30}}, GREP]},
            {"text": "after"},
        ]
    )
    session, rec = await new_session(model, tmp_path, registry_factory=with_slow_tool)
    FakeSlowTool.running = False
    future = session.send("hi")
    await until(lambda: FakeSlowTool.running)
    session.abort()
    outcome = await asyncio.wait_for(future, 2)
    assert outcome.aborted and FakeSlowTool.cancelled
    completes = [e.data for e in rec.of("tool.execution_complete")]
    assert len(completes) == 2  # the running one and the one never started
    assert all(isinstance(c, ToolExecutionCompleteData) and not c.success for c in completes)
    # The next send works and the model sees a result for every tool call.
    outcome = await session.send_and_wait("again")
    assert outcome.final_text == "after"
    roles = [m["role"] for m in model.seen_messages[-1]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]


async def test_abort_when_idle_does_nothing(tmp_path: Path) -> None:
    session, rec = await new_session(scripted([{"text": "x"}]), tmp_path)
    session.abort()
    assert rec.of("abort") == []


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"name": "grep", "arguments": "{not json"}, "JSON"),
        ({"name": "grep", "arguments": {"pattern": 3}}, "pattern"),
        ({"name": "grep", "arguments": {}}, "pattern"),
        ({"name": "view", "arguments": {"path": "x", "bogus": 1}}, "bogus"),
        ({"name": "no_such_tool", "arguments": {}}, "no_such_tool"),
    ],
)
async def test_invalid_tool_calls_fail_readably_and_the_loop_goes_on(
    tmp_path: Path, call: dict[str, Any], expected: str
) -> None:
    model = scripted([{"text": "", "tool_calls": [call]}, {"text": "recovered"}])
    session, rec = await new_session(model, tmp_path)
    outcome = await session.send_and_wait("hi")
    complete = rec.of("tool.execution_complete")[0].data
    assert isinstance(complete, ToolExecutionCompleteData)
    assert not complete.success
    assert complete.error is not None and expected in complete.error.message
    assert outcome.final_text == "recovered"
    # The model reads the failure as the tool's result.
    tool_msg = model.seen_messages[1][-1]
    assert tool_msg["role"] == "tool" and expected in tool_msg["content"]


class FakeClosingModel:
    """A scripted model that notes when each call's stream is closed (its generator's
    ``finally``), and where the session's events stood at that moment."""

    def __init__(self, inner: FakeCountingModel, recorder: list[str]) -> None:
        self.inner = inner
        self.recorder = recorder
        self.closed_after: list[list[str]] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def retry_policy(self) -> RetryPolicy:
        return self.inner.retry_policy

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        try:
            async for item in self.inner.stream(messages, tools, call_index=call_index):
                yield item
        finally:
            self.closed_after.append(list(self.recorder))


async def test_each_model_stream_is_closed_before_its_message_is_recorded(
    tmp_path: Path,
) -> None:
    # The reply is a stream's last item: the loop returns with the stream unfinished.
    # Left to the collector, asyncio closes it later from its finalizer hook (a
    # thread-safe wakeup and a task per model call); the loop closes it itself.
    types: list[str] = []
    model = FakeClosingModel(
        scripted([{"text": "Searching.", "tool_calls": [GREP]}, {"text": "Found."}]), types
    )
    session, _rec = await new_session(model, tmp_path)
    session.subscribe(lambda event: types.append(event.type))
    outcome = await session.send_and_wait("where is main?")

    assert outcome.final_text == "Found."
    assert len(model.closed_after) == 2
    for seen in model.closed_after:
        # Closed right after the reply: before the message naming it is emitted.
        assert seen[-1] == "assistant.message_delta"
