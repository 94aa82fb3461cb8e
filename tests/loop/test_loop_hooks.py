"""The loop's hook points, steering, external tools and asking in every mode, in process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.events.schema import (
    ExternalToolRequestedData,
    SessionWarningData,
    ToolExecutionCompleteData,
    ToolRequest,
    UserMessageData,
)
from agent.loop.hooks import LoopHooks, PromptDecision, ToolAfterword, ToolDecision
from agent.loop.turn_loop import MAX_STOP_BLOCKS
from agent.permissions.rules import PermissionAnswer, PermissionPrompt
from agent.tools.base import ToolResult
from agent.tools.external import ExternalToolCalls, ExternalToolSpec, external_tool
from agent.tools.registry import ToolRegistry, default_tools
from tests.support.scripting import new_session, scripted

CREATE = {"name": "create", "arguments": {"path": "a.txt", "file_text": "x\n"}}


async def test_a_blocked_prompt_runs_no_turn_and_says_why(tmp_path: Path) -> None:
    class Block(LoopHooks):
        async def user_prompt_submitted(self, prompt: str) -> PromptDecision | None:
            return PromptDecision(block_reason="secrets in the prompt")

    model = scripted([{"text": "never"}])
    session, rec = await new_session(model, tmp_path)
    session.hooks = Block()
    outcome = await session.send_and_wait("my password is hunter2")
    assert rec.types() == ["session.warning", "session.idle"]
    warning = rec.events[0].data
    assert isinstance(warning, SessionWarningData) and warning.warning_type == "policy_blocked"
    assert "secrets in the prompt" in warning.message
    assert model.calls == 0 and outcome.turns == 0


async def test_tool_hooks_change_arguments_skip_the_gate_and_add_context(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    class Steer(LoopHooks):
        async def pre_tool_use(self, request: ToolRequest) -> ToolDecision | None:
            return ToolDecision(
                permission="allow",
                arguments={"path": "b.txt", "file_text": "y\n"},
                context="pre-note",
            )

        async def post_tool_use(
            self, request: ToolRequest, result: ToolResult
        ) -> ToolAfterword | None:
            seen.append((request.name, str(request.arguments)))
            return ToolAfterword(content="created (hooked)", context="post-note")

    model = scripted([{"tool_calls": [CREATE]}, {"text": "ok"}])
    session, rec = await new_session(model, tmp_path)
    session.hooks = Steer()
    await session.send_and_wait("make a file")
    workspace = tmp_path / "ws"
    # No UI to ask, yet the hook's "allow" let the write through, with its arguments.
    assert (workspace / "b.txt").read_text() == "y\n" and not (workspace / "a.txt").exists()
    assert rec.of("permission.requested") == []
    start = rec.of("tool.execution_start")[0].data
    assert start.arguments == {"path": "b.txt", "file_text": "y\n"}  # type: ignore[union-attr]
    done = rec.of("tool.execution_complete")[0].data
    assert isinstance(done, ToolExecutionCompleteData) and done.result is not None
    assert done.result.content == "created (hooked)\n\npre-note\n\npost-note"
    assert seen == [("create", str({"path": "b.txt", "file_text": "y\n"}))]


async def test_a_denying_pre_hook_fails_the_call_for_the_model(tmp_path: Path) -> None:
    class Deny(LoopHooks):
        async def pre_tool_use(self, request: ToolRequest) -> ToolDecision | None:
            return ToolDecision(permission="deny", reason="read-only day")

    session, rec = await new_session(scripted([{"tool_calls": [CREATE]}, {"text": "ok"}]), tmp_path)
    session.hooks = Deny()
    await session.send_and_wait("make a file")
    done = rec.of("tool.execution_complete")[0].data
    assert isinstance(done, ToolExecutionCompleteData) and not done.success
    assert done.error is not None and "read-only day" in done.error.message
    assert not (tmp_path / "ws" / "a.txt").exists()


async def test_agent_stop_keeps_going_but_not_forever(tmp_path: Path) -> None:
    stops: list[tuple[str, bool]] = []

    class Insist(LoopHooks):
        async def agent_stop(self, *, stop_reason: str, repeated: bool) -> str | None:
            stops.append((stop_reason, repeated))
            return "keep going"

    model = scripted([{"text": "done?"}], when_exhausted="repeat_last")
    session, rec = await new_session(model, tmp_path)
    session.hooks = Insist()
    await session.send_and_wait("go")
    assert len(stops) == MAX_STOP_BLOCKS and stops[0] == ("end_turn", False)
    assert all(repeated for _, repeated in stops[1:])
    assert model.calls == MAX_STOP_BLOCKS + 1
    continues = [e.data for e in rec.of("user.message")][1:]
    assert [(u.content, u.source) for u in continues] == [
        ("keep going", "system")
    ] * MAX_STOP_BLOCKS  # type: ignore[union-attr]
    assert rec.types().count("session.idle") == 1


async def test_immediate_sends_join_the_running_loop(tmp_path: Path) -> None:
    model = scripted(
        [
            {
                "text": "one two three four five",
                "delay_ms": 500,
                "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}],
            },
            {"text": "both answered"},
        ]
    )
    session, rec = await new_session(model, tmp_path)
    first = session.send("one", message_id="m1")
    while "assistant.message_delta" not in rec.types():
        await asyncio.sleep(0.01)
    second = session.send("two", message_id="m2", immediate=True)
    outcome = await asyncio.wait_for(first, 10)
    assert await asyncio.wait_for(second, 10) is outcome
    users = [e.data for e in rec.of("user.message")]
    assert [(u.content, u.message_id) for u in users] == [("one", "m1"), ("two", "m2")]  # type: ignore[union-attr]
    assert rec.types().count("session.idle") == 1
    assert model.calls == 2 and model.seen_messages[1][-1] == {"role": "user", "content": "two"}
    # With nothing running, "immediate" is an ordinary send.
    third = session.send("three", immediate=True)
    await asyncio.wait_for(third, 10)
    assert rec.types().count("session.idle") == 2


async def test_the_asker_is_consulted_in_autopilot_only_when_enabled(tmp_path: Path) -> None:
    asked: list[PermissionPrompt] = []

    async def approve(prompt: PermissionPrompt) -> PermissionAnswer:
        asked.append(prompt)
        return PermissionAnswer("approve")

    turns = [
        {"tool_calls": [CREATE]},
        {"tool_calls": [{"name": "task_complete", "arguments": {"summary": "s"}}]},
    ]
    session, _ = await new_session(scripted(turns), tmp_path, mode="autopilot")
    session.permissions.asker = approve
    await session.send_and_wait("write it")
    assert asked == [] and not (tmp_path / "ws" / "a.txt").exists()

    other = tmp_path / "other"
    other.mkdir()
    session, _ = await new_session(scripted(turns), other, mode="autopilot")
    session.permissions.asker = approve
    session.permissions.ask_in_every_mode = True
    await session.send_and_wait("write it")
    assert [p.kind for p in asked] == ["write"] and (other / "ws" / "a.txt").exists()


async def test_external_tools_wait_for_the_answer_and_say_when_abandoned(tmp_path: Path) -> None:
    calls_holder: list[ExternalToolCalls] = []
    spec = ExternalToolSpec(name="lookup", description="Look it up", skip_permission=True)

    def registry(mode: str) -> ToolRegistry:
        tools = default_tools(autopilot=False)
        return ToolRegistry(
            [*(tools.get(n) for n in tools.names()), external_tool(spec, calls_holder[0])]
        )  # type: ignore[misc]

    model = scripted(
        [
            {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]},
            {"text": "got it"},
            {"tool_calls": [{"name": "lookup", "arguments": {"q": "y"}}]},
        ]
    )
    session, rec = await new_session(model, tmp_path, registry_factory=registry)
    calls = ExternalToolCalls(session.emit, session.id)
    calls_holder.append(calls)
    assert "lookup" in [t["function"]["name"] for t in session.tools().schemas()]

    running = session.send("look x up")
    requested = await _wait_for(rec, "external_tool.requested")
    data = requested.data
    assert isinstance(data, ExternalToolRequestedData) and data.arguments == {"q": "x"}
    assert data.tool_call_id == "call_0_0" and calls.pending() == [data.request_id]
    assert calls.answer(data.request_id, ToolResult(content="x is 1"))
    assert not calls.answer(data.request_id, ToolResult(content="again"))
    await asyncio.wait_for(running, 10)
    done = rec.of("tool.execution_complete")[0].data
    assert done.result.content == "x is 1"  # type: ignore[union-attr]

    running = session.send("look y up")
    while len(rec.of("external_tool.requested")) < 2:
        await asyncio.sleep(0.01)
    session.abort()
    outcome = await asyncio.wait_for(running, 10)
    assert outcome.aborted and calls.pending() == []
    completed = [e.data.request_id for e in rec.of("external_tool.completed")]  # type: ignore[union-attr]
    assert completed == [e.data.request_id for e in rec.of("external_tool.requested")]  # type: ignore[union-attr]


async def _wait_for(rec, etype: str):  # type: ignore[no-untyped-def]
    async def poll():  # type: ignore[no-untyped-def]
        while not rec.of(etype):
            await asyncio.sleep(0.01)
        return rec.of(etype)[0]

    return await asyncio.wait_for(poll(), 10)


def test_user_message_ids_round_trip() -> None:
    data = UserMessageData(content="hi", message_id="m1")
    assert data.wire() == {"content": "hi", "messageId": "m1"}
