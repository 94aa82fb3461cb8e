"""Sub-agents: events carrying ``agentId`` fold into their run, never into the main agent.

Over the real Copilot log (two ``task`` runs: one failed at once, one answered) and a
session written from the schema whose sub-agent opens turns (with the main agent's
turn ids) and calls a tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from copilot.generated.session_events import session_event_from_dict

from agent.events.schema import AbortData, Event, event_from_dict, event_from_json
from agent.log.replay import EventIndex
from agent.log.session_row import SessionSummary
from agent.log.store import read_events, with_unreadable_rows
from agent.log.summary import summarize_events
from agent.loop.history import History
from agent.transcript.blocks import NoticeBlock, ToolCallBlock, TurnBlock, UserBlock
from agent.transcript.fold import Transcript, fold
from tests.support.paths import FIXTURES

REAL = FIXTURES / "copilot-real" / "irrlicht-foreground-subagent" / "events.jsonl"
TOOLS = FIXTURES / "subagent-tools" / "events.jsonl"

ANSWER = "JSONL (JSON Lines) is a text format where each line is a separate, valid JSON value"


def events_of(path: Path) -> list[Event]:
    return list(with_unreadable_rows(read_events(path)))


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def turns_of(t: Transcript) -> list[TurnBlock]:
    return [item for item in t.items if isinstance(item, TurnBlock)]


def users_of(t: Transcript) -> list[UserBlock]:
    return [item for item in t.items if isinstance(item, UserBlock)]


def tools_of(t: Transcript) -> list[ToolCallBlock]:
    return [tool for turn in turns_of(t) for tool in turn.tools]


# --- the real log -------------------------------------------------------------------


def test_the_real_logs_sub_agent_prompt_and_reply_stay_out_of_the_main_agent() -> None:
    t = fold(events_of(REAL), replay=True)

    # The user typed one message; the sub-agent's prompt is not a second one.
    assert [u.content[:10] for u in users_of(t)] == ["Delegate t"]
    turns = turns_of(t)
    assert [turn.number for turn in turns] == [1, 2, 3, 4]
    assert t.turns == 4 and t.tool_calls == 3
    # The sub-agent's reply (turnId "0" of its own) does not land in main turn 1.
    assert all(ANSWER not in turn.text for turn in turns)
    assert turns[3].text == "done" and t.final_text() == "done"
    # Turn 1's output count is its own (690), not the sub-agent's reply's (261).
    assert [turn.output_tokens for turn in turns[:3]] == [690, 553, 624]
    assert not t.busy


def test_the_real_logs_runs_hang_on_the_task_calls_that_started_them() -> None:
    t = fold(events_of(REAL), replay=True)
    first, read, second = tools_of(t)

    assert (first.name, read.name, second.name) == ("task", "read_agent", "task")
    assert read.subagent is None
    failed = first.subagent
    assert failed is not None
    assert (failed.label, failed.name, failed.status) == ("Task Agent", "task", "failed")
    assert failed.error is not None and "Reasoning effort 'short'" in failed.error
    assert (failed.turns, failed.tool_calls, failed.duration) == (0, 0, 0.01)
    assert failed.prompt is None and failed.answer is None

    done = second.subagent
    assert done is not None and done is t.get_subagent("call_wOCm9GnVqiwkxaCfoP8JD25O")
    assert (done.status, done.model, done.turns, done.tool_calls) == (
        "completed",
        "gpt-5-mini",
        1,
        0,
    )
    assert done.duration == 6.771 and done.total_tokens == 10637
    assert done.prompt is not None and done.prompt.startswith("You are a task subagent.")
    assert done.answer is not None and done.answer.startswith(ANSWER)
    # Its turn is closed with the run, not left "working…"; with no turn_start of its
    # own, it runs from the prompt (15:38:49.267) to the run's end (15:38:54.816).
    (sub_turn,) = turns_of(done.transcript)
    assert sub_turn.status == "done"
    assert sub_turn.duration is not None and round(sub_turn.duration, 3) == 5.549


def test_every_line_with_an_agent_id_keeps_it_when_read_and_written_back() -> None:
    raw = lines_of(REAL)
    events = events_of(REAL)
    assert [e.agent_id for e in events] == [obj.get("agentId") for obj in raw]
    for obj, event in zip(raw, events, strict=True):
        assert event.wire().get("agentId") == obj.get("agentId")
        session_event_from_dict(json.loads(event.to_json()))  # still the SDK's format


# --- a sub-agent with turns and tools --------------------------------------------------


def test_a_sub_agents_turns_and_tools_are_its_own_even_with_the_main_turn_ids() -> None:
    t = fold(events_of(TOOLS), replay=True)

    main1, main2 = turns_of(t)
    assert [u.content for u in users_of(t)] == [
        "Where is the config loaded? Ask a sub-agent to find out."
    ]
    assert t.turns == 2 and t.tool_calls == 1
    assert [tool.name for tool in main1.tools] == ["task"]
    assert main1.text == "Asking a sub-agent to look." and main1.model == "gpt-5-mini"
    assert main2.text == "It is loaded in app/settings.py."

    sub = main1.tools[0].subagent
    assert sub is not None
    assert (sub.label, sub.status, sub.turns, sub.tool_calls, sub.duration) == (
        "Explore Agent",
        "completed",
        2,
        1,
        8.0,
    )
    s1, s2 = turns_of(sub.transcript)
    assert (s1.number, s1.status, s1.model, s1.text) == (
        1,
        "done",
        "claude-haiku-4.5",
        "Searching for the loader.",
    )
    (grep,) = s1.tools
    assert (grep.name, grep.status, grep.result) == (
        "grep",
        "success",
        "app/settings.py:12:def load_config(path):",
    )
    assert t.get_tool("call_grep_B") is None  # not a call of the main agent
    assert s2.text.startswith("The config is loaded") and sub.answer == s2.text


def test_each_sub_agent_event_redraws_the_card_of_its_main_turn() -> None:
    """Live, the timeline redraws what a change names: a sub-agent's event names the
    task card (in its main turn), never a block of the main timeline of its own."""
    t = Transcript()
    events = events_of(TOOLS)
    card: ToolCallBlock | None = None
    for event in events:
        changes = t.apply(event)
        if event.agent_id is None:
            if event.type == "tool.execution_start":
                card = t.get_tool("call_task_A")
            continue
        assert card is not None
        assert [(c.kind, c.item, c.parent) for c in changes] == [("updated", card, turns_of(t)[0])]
    # The user's message and the two main turns: nothing a sub-agent added.
    assert [type(item) for item in t.items] == [UserBlock, TurnBlock, TurnBlock]
    assert card is not None and card.subagent is not None


def test_a_run_cut_short_by_an_abort_is_interrupted_with_what_it_had_open() -> None:
    events = events_of(TOOLS)[:10]  # up to the sub-agent's grep starting
    t = Transcript()
    for event in events:
        t.apply(event)
    sub = t.get_subagent("call_task_A")
    assert sub is not None and sub.status == "running"
    t.apply(Event.new(AbortData(), events[-1].id))

    assert sub.status == "interrupted"
    (turn,) = turns_of(sub.transcript)
    assert turn.status == "aborted" and turn.tools[0].status == "interrupted"


def test_a_run_whose_start_was_not_seen_still_gets_a_card() -> None:
    """A replay window that begins inside a run, or an agentId naming no call."""
    t = Transcript()
    for event in events_of(TOOLS)[6:15]:  # from the sub-agent's prompt to its answer
        t.apply(event)
    assert users_of(t) == [] and turns_of(t) == []
    (card,) = [item for item in t.items if isinstance(item, ToolCallBlock)]
    assert card.tool_call_id == "call_task_A" and card.subagent is not None
    assert card.subagent.turns == 2 and card.subagent.tool_calls == 1


def test_a_run_started_by_a_run_is_drawn_inside_it() -> None:
    outer, inner = "call_outer", "call_inner"
    raw: list[dict[str, Any]] = [
        {"type": "user.message", "data": {"content": "go"}},
        {"type": "assistant.turn_start", "data": {"turnId": "0"}},
        {
            "type": "assistant.message",
            "data": {
                "messageId": "m0",
                "content": "",
                "toolRequests": [{"toolCallId": outer, "name": "task", "arguments": {}}],
            },
        },
        {
            "type": "subagent.started",
            "data": {"toolCallId": outer, "agentName": "a", "agentDisplayName": "A"},
            "agentId": outer,
        },
        {
            "type": "assistant.message",
            "data": {
                "messageId": "m1",
                "content": "",
                "toolRequests": [{"toolCallId": inner, "name": "task", "arguments": {}}],
            },
            "agentId": outer,
        },
        {
            "type": "subagent.started",
            "data": {"toolCallId": inner, "agentName": "b", "agentDisplayName": "B"},
            "agentId": inner,
        },
        {
            "type": "assistant.message",
            "data": {"messageId": "m2", "content": "inner answer"},
            "agentId": inner,
        },
    ]
    t = Transcript()
    for n, obj in enumerate(raw):
        obj |= {"id": f"e{n}", "timestamp": f"2026-08-05T15:00:0{n}.000Z"}
        t.apply(event_from_dict(obj))
    outer_run, inner_run = t.get_subagent(outer), t.get_subagent(inner)
    assert outer_run is not None and inner_run is not None
    inner_card = outer_run.transcript.get_tool(inner)
    assert inner_card is not None and inner_card.subagent is inner_run
    assert inner_run.root is t.get_tool(outer)  # redrawn through the main card
    assert inner_run.answer == "inner answer"
    assert t.tool_calls == 1 and outer_run.transcript.tool_calls == 1


# --- the other readers of a log -----------------------------------------------------------


def test_the_models_history_leaves_out_the_sub_agents_conversation() -> None:
    history = History()
    for event in events_of(TOOLS):
        history.apply(event)
    contents = [m.get("content") for m in history.messages]
    assert "Find where the config is loaded and answer with the path." not in contents
    assert [m["role"] for m in history.messages] == ["user", "assistant", "tool", "assistant"]


def test_the_replay_index_counts_only_the_main_agents_turns() -> None:
    index = EventIndex.build(TOOLS)
    starts = [n for n, etype in enumerate(index.types) if etype == "assistant.turn_start"]
    assert len(starts) == 4
    assert index.turn_starts == [starts[0], starts[3]]


def test_the_session_summary_counts_only_the_main_agent() -> None:
    summary = summarize_events(lines_of(TOOLS), SessionSummary(id="x", path=TOOLS.parent))
    assert summary.turns == 2 and summary.tool_calls == 1
    assert summary.first_prompt.startswith("Where is the config loaded?")


def test_an_agent_id_of_the_wrong_type_reads_as_none() -> None:
    line = '{"type":"user.message","data":{"content":"hi"},"id":"x","timestamp":"","agentId":7}'
    assert event_from_json(line).agent_id is None


def test_a_custom_agent_picked_and_dropped_is_a_notice_not_a_raw_row() -> None:
    raw: list[dict[str, Any]] = [
        {
            "type": "subagent.selected",
            "data": {
                "agentName": "reviewer",
                "agentDisplayName": "Code Reviewer",
                "tools": ["view", "grep"],
            },
        },
        {"type": "subagent.deselected", "data": {}},
    ]
    t = Transcript()
    for n, obj in enumerate(raw):
        obj |= {
            "id": f"5b5b0000-0000-4000-8000-00000000010{n}",
            "timestamp": f"2026-08-05T15:00:0{n}.000Z",
            "parentId": None,
        }
        session_event_from_dict(obj)  # the SDK's own shapes
        t.apply(event_from_dict(obj))
    assert [(type(item), getattr(item, "message", None)) for item in t.items] == [
        (NoticeBlock, "agent: Code Reviewer selected (2 tools)"),
        (NoticeBlock, "agent: back to the default agent"),
    ]
