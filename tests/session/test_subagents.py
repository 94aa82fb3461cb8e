"""Sub-agents through the real loop: ``task`` runs a scripted sub-agent as its own loop.

Its events carry the ``agentId`` of its ``task`` call and are framed by
``subagent.started``/``completed``/``failed`` as Copilot CLI writes them; its answer is
the call's result; several run at once, bounded; an abort stops them all; a failure is
the call's, never the session's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import Event
from agent.extensions.skills.tool import SkillTool
from agent.log.store import SessionStore, read_events, with_unreadable_rows
from agent.models.scripted import Script, ScriptedModel
from agent.permissions.rules import PermissionPolicy
from agent.session.agent_kinds import EXPLORE, GENERAL_PURPOSE, TASK
from agent.session.session import Session
from agent.tools.base import ToolResult
from agent.tools.registry import ToolRegistry
from agent.tools.view import ViewTool
from agent.transcript.blocks import ToolCallBlock, TurnBlock, UserBlock
from agent.transcript.fold import Transcript, fold
from tests.support.paths import FIXTURES
from tests.support.scripting import new_session
from tests.support.subagents import (
    FAN_OUT,
    FakeHoldingModel,
    explorer,
    fan_out_model,
    most_at_once,
    of_run,
    task_call,
)

REAL = FIXTURES / "copilot-real" / "irrlicht-foreground-subagent" / "events.jsonl"


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "app.py").write_text("# TODO: tidy\nimport os\n\n\ndef main():\n    pass\n")
    return ws


def one_task(sub: dict[str, Any], agent_type: str = "explore") -> dict[str, Any]:
    return {
        "turns": [
            {"text": "Delegating.", "tool_calls": [task_call("finder", "Find it.", agent_type)]},
            {"text": "Thanks, done."},
        ],
        "subagents": {"finder": sub},
    }


def model_of(script: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel(Script.model_validate(script), "subs")


def turns_of(t: Transcript) -> list[TurnBlock]:
    return [item for item in t.items if isinstance(item, TurnBlock)]


def task_cards(t: Transcript) -> list[ToolCallBlock]:
    return [tool for turn in turns_of(t) for tool in turn.tools if tool.name == "task"]


def logged(store: SessionStore, session_id: str) -> list[Event]:
    return list(with_unreadable_rows(read_events(store.events_path(session_id))))


async def test_a_sub_agent_runs_its_own_loop_and_its_answer_is_the_result(
    tmp_path: Path,
) -> None:
    workspace(tmp_path)
    script = one_task(explorer("TODO", "One TODO, in app.py line 1."))
    session, rec = await new_session(model_of(script), tmp_path)
    outcome = await session.send_and_wait("Where are the TODOs?")
    assert outcome.final_text == "Thanks, done."

    [start] = [e for e in rec.of("tool.execution_start") if e.data.tool_name == "task"]
    call_id = start.data.tool_call_id
    run = of_run(rec.events, call_id)
    # Framed as Copilot writes it, every event of the run carrying the task call's id.
    assert run[0].type == "subagent.started" and run[-1].type == "subagent.completed"
    assert run[0].data.agent_name == "explore" and run[0].data.tool_call_id == call_id
    types = [e.type for e in run]
    assert "user.message" in types and "tool.execution_complete" in types
    [grep] = [e for e in run if e.type == "tool.execution_complete"]
    assert grep.data.success and "app.py:1:# TODO: tidy" in grep.data.result.content
    # Its own turns, numbered from 0 apart from the session's.
    assert [e.data.turn_id for e in run if e.type == "assistant.turn_start"] == ["0", "1"]
    main_turns = [e for e in rec.of("assistant.turn_start") if e.agent_id is None]
    assert [e.data.turn_id for e in main_turns] == ["0", "1"]
    # The call's result is the run's final answer; the parent's next turn reads it.
    [done] = [e for e in rec.of("tool.execution_complete") if e.data.tool_call_id == call_id]
    assert done.agent_id is None and done.data.success
    assert done.data.result.content == "One TODO, in app.py line 1."
    # The session's conversation holds the call and its result, not the run's talk.
    contents = [str(m.get("content")) for m in session.history.messages]
    assert "Find it." not in contents and "Searching for TODO." not in contents
    assert "One TODO, in app.py line 1." in contents
    # The session's counters are its own: two turns, one tool call.
    assert session._turns == 2 and session._tool_calls == 1
    # Last of all, once: idle.
    assert rec.types().count("session.idle") == 1 and rec.types()[-1] == "session.idle"
    await session.close()


async def test_three_task_calls_in_one_reply_run_at_once(tmp_path: Path) -> None:
    workspace(tmp_path)
    model = FakeHoldingModel(fan_out_model())
    session, rec = await new_session(model, tmp_path)
    future = session.send("Search three things.")
    # All three are held in their first model call at the same time.
    await asyncio.wait_for(model.until_in_flight(3), 30)
    model.release.set()
    outcome = await future
    assert outcome.final_text == "All three answered."
    assert model.most == 3 and most_at_once(rec.events) == 3
    results = {
        e.data.tool_call_id: e.data.result.content
        for e in rec.of("tool.execution_complete")
        if e.agent_id is None
    }
    assert sorted(results.values()) == [
        "One TODO, in app.py line 1.",
        "One function: main, in app.py.",
        "One import: os, in app.py.",
    ]
    await session.close()


async def test_no_more_sub_agents_run_at_once_than_the_bound(tmp_path: Path) -> None:
    workspace(tmp_path)
    model = FakeHoldingModel(fan_out_model())
    session, rec = await new_session(model, tmp_path)
    session.subagents.max_concurrent = 2
    future = session.send("Search three things.")
    await asyncio.wait_for(model.until_in_flight(2), 30)
    # The third waits for a slot: only two runs have started.
    assert len(rec.of("subagent.started")) == 2
    model.release.set()
    await future
    assert model.most == 2 and most_at_once(rec.events) == 2
    assert len(rec.of("subagent.completed")) == 3
    await session.close()


def test_the_bound_comes_from_copilots_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.session.subagents import DEFAULT_MAX_CONCURRENT, max_concurrent_from_env

    assert max_concurrent_from_env({}) == DEFAULT_MAX_CONCURRENT == 4
    assert max_concurrent_from_env({"COPILOT_SUBAGENT_MAX_CONCURRENT": "2"}) == 2
    assert max_concurrent_from_env({"COPILOT_SUBAGENT_MAX_CONCURRENT": "0"}) == 1
    assert max_concurrent_from_env({"COPILOT_SUBAGENT_MAX_CONCURRENT": "lots"}) == 4


async def test_an_abort_stops_every_sub_agent_and_idle_comes_once_and_last(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    workspace(tmp_path)
    store = SessionStore(loopdeck_home)
    model = FakeHoldingModel(fan_out_model())
    session, rec = await new_session(model, tmp_path, store=store)
    future = session.send("Search three things.")
    await asyncio.wait_for(model.until_in_flight(3), 30)
    session.abort()
    outcome = await asyncio.wait_for(future, 30)
    assert outcome.aborted
    assert model.in_flight == 0  # every held model call was cancelled
    ends = rec.of("subagent.completed")
    assert len(ends) == 3 and all(e.data.cancelled for e in ends)
    assert not rec.of("subagent.failed")
    calls = [e for e in rec.of("tool.execution_complete") if e.agent_id is None]
    assert len(calls) == 3 and all(
        not e.data.success and e.data.error.code == "interrupted" for e in calls
    )
    types = rec.types()
    assert types.count("session.idle") == 1 and types[-1] == "session.idle"
    await session.close()
    # Read back, every run's card is closed: none still running.
    t = fold(logged(store, session.id), replay=True, finished=True)
    cards = task_cards(t)
    assert len(cards) == 3
    assert all(c.subagent is not None and c.subagent.finished for c in cards)


async def test_a_failing_sub_agent_is_its_calls_failure_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    workspace(tmp_path)
    script = one_task({"turns": [{"error": {"type": "auth", "message": "bad key"}}]})
    session, rec = await new_session(model_of(script), tmp_path)
    outcome = await session.send_and_wait("Where are the TODOs?")
    assert outcome.final_text == "Thanks, done." and outcome.error is None
    [failed] = rec.of("subagent.failed")
    assert "bad key" in failed.data.error
    [done] = [e for e in rec.of("tool.execution_complete") if e.agent_id is None]
    assert not done.data.success and "bad key" in done.data.error.message
    # The run's error is the run's: the session itself recorded none.
    assert all(e.agent_id is not None for e in rec.of("session.error"))
    await session.close()


async def test_an_unknown_agent_type_and_an_empty_answer_fail_the_call(tmp_path: Path) -> None:
    workspace(tmp_path)
    script = {
        "turns": [
            {
                "text": "",
                "tool_calls": [
                    task_call("nobody", "x", "wizard"),
                    task_call("silent", "say nothing"),
                ],
            },
            {"text": "ok"},
        ],
        "subagents": {"silent": {"turns": [{"text": ""}]}},
    }
    session, rec = await new_session(model_of(script), tmp_path)
    await session.send_and_wait("go")
    results = [e.data for e in rec.of("tool.execution_complete") if e.agent_id is None]
    assert [r.success for r in results] == [False, False]
    messages = [r.error.message for r in results]
    assert any("Unknown agent_type: wizard. Valid types are: explore" in m for m in messages)
    assert "Agent completed but produced no response." in messages
    await session.close()


async def test_an_explorer_cannot_edit(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    edit = {"name": "edit", "arguments": {"path": "app.py", "old_str": "os", "new_str": "sys"}}
    sub = {"turns": [{"text": "", "tool_calls": [edit]}, {"text": "I could not edit."}]}
    session, rec = await new_session(model_of(one_task(sub)), tmp_path, mode="autopilot")
    await session.send_and_wait("go")
    [refused] = [e for e in rec.of("tool.execution_complete") if e.agent_id and not e.data.success]
    assert "unknown tool 'edit'; available tools: view, grep, glob" in refused.data.error.message
    assert "import os" in (ws / "app.py").read_text()
    await session.close()


async def test_a_sub_agents_call_under_a_deny_rule_is_denied(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    rm = {"name": "bash", "arguments": {"command": "rm app.py"}}
    sub = {"turns": [{"text": "", "tool_calls": [rm]}, {"text": "It was denied."}]}
    policy = PermissionPolicy.from_flags(deny=["shell(rm)"], allow_all=True)
    session, rec = await new_session(
        model_of(one_task(sub, "general-purpose")), tmp_path, mode="autopilot", policy=policy
    )
    await session.send_and_wait("go")
    [asked] = rec.of("permission.requested")
    [answered] = rec.of("permission.completed")
    assert asked.agent_id is not None and asked.agent_id == answered.agent_id  # nested
    assert answered.data.result["kind"] == "denied-by-rules"
    [refused] = [
        e
        for e in rec.of("tool.execution_complete")
        if e.data.tool_call_id.endswith("_0_0") and e.agent_id
    ]
    assert not refused.data.success and "denied by the rule" in refused.data.error.message
    assert (ws / "app.py").exists()
    await session.close()


async def test_usage_is_counted_per_sub_agent_and_in_the_sessions_total(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    workspace(tmp_path)
    store = SessionStore(loopdeck_home)
    session, rec = await new_session(fan_out_model(), tmp_path, store=store)
    await session.send_and_wait("Search three things.")
    [todos] = [r for r in session.subagents.runs.values() if r.description == "todos search"]
    assert (todos.usage.input_tokens, todos.usage.output_tokens) == (40, 4)
    assert todos.usage.cost == pytest.approx(0.004)
    [ended] = [e for e in rec.of("subagent.completed") if e.agent_id == todos.agent_id]
    assert ended.data.total_tokens == 44 and ended.data.total_tool_calls == 1
    # The session's total: its own call and the sub-agent's.
    [totals] = session.usage.by_model.values()
    assert (totals.input_tokens, totals.output_tokens) == (140, 14)
    assert totals.cost == pytest.approx(0.014)
    await session.close()
    # The log keeps that total (a resume reads it back).
    resumed = await Session.resume(store=store, session_id=session.id, model=fan_out_model())
    [again] = resumed.usage.by_model.values()
    assert (again.input_tokens, again.output_tokens) == (140, 14)
    await resumed.close()


async def test_every_event_of_a_fan_out_parses_with_the_official_sdk(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    session_events = pytest.importorskip("copilot.generated.session_events")
    workspace(tmp_path)
    store = SessionStore(loopdeck_home)
    session, _ = await new_session(fan_out_model(), tmp_path, store=store)
    await session.send_and_wait("Search three things.")
    await session.close()
    lines = store.events_path(session.id).read_text().splitlines()
    seen: set[str] = set()
    for line in lines:
        wire = json.loads(line)
        parsed = session_events.session_event_from_dict(wire)
        assert parsed.type.value == wire["type"]
        assert str(parsed.id) == wire["id"]
        if wire.get("agentId"):
            assert parsed.agent_id == wire["agentId"]
            seen.add(wire["type"])
    assert {"subagent.started", "subagent.completed", "user.message"} <= seen
    assert {"assistant.message", "tool.execution_start", "tool.execution_complete"} <= seen


def shape(t: Transcript) -> list[tuple[str, str, int, int]]:
    """Each task card: its run's status, agent name, turns and tool calls."""
    out = []
    for card in task_cards(t):
        sub = card.subagent
        assert sub is not None
        tools = [tool for turn in turns_of(sub.transcript) for tool in turn.tools]
        out.append((sub.status, sub.name, len(turns_of(sub.transcript)), len(tools)))
    return out


async def test_the_log_read_back_draws_each_run_nested_in_its_task_card(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    workspace(tmp_path)
    store = SessionStore(loopdeck_home)
    session, rec = await new_session(fan_out_model(), tmp_path, store=store)
    await session.send_and_wait("Search three things.")
    await session.close()
    live = Transcript()
    for event in rec.events:
        live.apply(event)
    replayed = fold(logged(store, session.id), replay=True)
    # One user message, the session's two turns; each run inside its card.
    for t in (live, replayed):
        assert len([i for i in t.items if isinstance(i, UserBlock)]) == 1
        assert len(turns_of(t)) == 2
        assert shape(t) == [("completed", "explore", 2, 1)] * 3
    # Copilot's own log nests the same way: a run on its task card, not a main turn.
    real = fold(list(with_unreadable_rows(read_events(REAL))), replay=True)
    assert [s[0] for s in shape(real)] == ["failed", "completed"]
    assert len([i for i in real.items if isinstance(i, UserBlock)]) == 1


async def test_runs_overlap_in_time_in_the_log(tmp_path: Path, loopdeck_home: Path) -> None:
    """The three runs' frames interleave in the log: each started before any ended."""
    workspace(tmp_path)
    store = SessionStore(loopdeck_home)
    model = FakeHoldingModel(fan_out_model())
    session, _ = await new_session(model, tmp_path, store=store)
    future = session.send("Search three things.")
    await asyncio.wait_for(model.until_in_flight(3), 30)
    model.release.set()
    await future
    await session.close()
    frames = [
        (e.timestamp, e.type) for e in logged(store, session.id) if e.type.startswith("subagent.")
    ]
    starts = [ts for ts, kind in frames if kind == "subagent.started"]
    ends = [ts for ts, kind in frames if kind == "subagent.completed"]
    assert len(starts) == len(ends) == 3 and max(starts) <= min(ends)
    assert FAN_OUT["subagents"].keys() == {"todos", "defs", "imports"}


def test_no_kind_of_sub_agent_is_offered_the_skill_tool() -> None:
    # A skill's instructions are written into the session's conversation, which a
    # sub-agent does not read: loaded by one, they would reach the parent instead.
    class FakeLoader:
        def load_skill(self, name: str, tool_call_id: str) -> ToolResult:
            raise AssertionError("never called")

    offered = ToolRegistry([ViewTool(), SkillTool(FakeLoader())])
    for kind in (EXPLORE, TASK, GENERAL_PURPOSE):
        assert kind.registry(offered).names() == ["view"], kind.name


async def test_a_run_under_way_when_plan_mode_starts_may_only_read(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    rm = {"name": "bash", "arguments": {"command": "rm app.py"}}
    sub = {"turns": [{"text": "", "tool_calls": [rm]}, {"text": "Stopped: plan mode."}]}
    policy = PermissionPolicy.from_flags(allow_all=True)
    model = FakeHoldingModel(model_of(one_task(sub, "general-purpose")))
    session, rec = await new_session(model, tmp_path, mode="autopilot", policy=policy)
    future = session.send("go")
    await asyncio.wait_for(model.until_in_flight(1), 30)  # the run's first call is held
    session.set_mode("plan")  # the user switches while it runs
    model.release.set()
    await future
    [refused] = [
        e
        for e in rec.of("tool.execution_complete")
        if e.agent_id and e.data.tool_call_id.endswith("_0_0")
    ]
    assert not refused.data.success and "plan mode" in refused.data.error.message
    assert (ws / "app.py").exists()
    await session.close()


def test_a_sub_agents_tools_are_compact_when_its_sessions_are() -> None:
    offered = ToolRegistry([ViewTool()])
    offered.compact = True
    for kind in (EXPLORE, TASK, GENERAL_PURPOSE):
        assert kind.registry(offered).compact, kind.name
    offered.compact = False
    assert not GENERAL_PURPOSE.registry(offered).compact
