"""loopdeck's own fan-out log (three sub-agents started by one reply, recorded in
``fixtures/loopdeck-fanout``): every line passes the official parser, the runs
overlap in time, and it folds with the same nesting as Copilot's own sub-agent log."""

from __future__ import annotations

import json
from pathlib import Path

from copilot.generated.session_events import session_event_from_dict

from agent.log.store import read_events, with_unreadable_rows
from agent.transcript.blocks import Subagent, ToolCallBlock, TurnBlock, UserBlock
from agent.transcript.fold import Transcript, fold
from tests.support.paths import FIXTURES

FANOUT = FIXTURES / "loopdeck-fanout" / "events.jsonl"
REAL = FIXTURES / "copilot-real" / "irrlicht-foreground-subagent" / "events.jsonl"


def folded(path: Path) -> Transcript:
    return fold(list(with_unreadable_rows(read_events(path))), replay=True)


def runs(t: Transcript) -> list[tuple[ToolCallBlock, Subagent]]:
    turns = [item for item in t.items if isinstance(item, TurnBlock)]
    return [
        (tool, tool.subagent)
        for turn in turns
        for tool in turn.tools
        if tool.name == "task" and tool.subagent is not None
    ]


def test_every_line_parses_with_the_official_sdk() -> None:
    for line in FANOUT.read_text().splitlines():
        wire = json.loads(line)
        parsed = session_event_from_dict(wire)
        assert parsed.type.value == wire["type"]
        assert parsed.agent_id == wire.get("agentId")


def test_the_three_runs_overlap_in_time() -> None:
    found = runs(folded(FANOUT))
    assert len(found) == 3
    starts = [sub.started_at for _, sub in found if sub.started_at is not None]
    ends = [sub.ended_at for _, sub in found if sub.ended_at is not None]
    # Each run started before any of them ended.
    assert len(starts) == len(ends) == 3 and max(starts) < min(ends)


def test_it_nests_as_copilots_own_log_does() -> None:
    ours, copilots = folded(FANOUT), folded(REAL)
    for t in (ours, copilots):
        # One user message: no run's prompt became one; the runs hang on task cards.
        assert len([i for i in t.items if isinstance(i, UserBlock)]) == 1
        for card, sub in runs(t):
            assert sub.card is card and sub.root is card and sub.finished
            assert sub.transcript.get_tool(card.tool_call_id) is None
    assert [sub.status for _, sub in runs(ours)] == ["completed"] * 3
    assert [sub.status for _, sub in runs(copilots)] == ["failed", "completed"]
