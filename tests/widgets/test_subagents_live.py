"""A sub-agent watched live: its events redraw the task card of the running turn.

The events of a run (schema-written session: a sub-agent with two turns and a
``grep``) are fed to the timeline one by one, as ``loopdeck watch`` does; what the
card draws is read back from the card itself.
"""

from __future__ import annotations

import io

from rich.console import Console
from textual.app import App, ComposeResult

from agent.events.schema import Event, event_from_dict
from agent.log.store import read_events, with_unreadable_rows
from agent.transcript.fold import fold
from tests.support.paths import FIXTURES
from widgets.timeline import Timeline
from widgets.tool_card import ToolCard, card_renderable
from widgets.turn_view import TurnView

TOOLS = FIXTURES / "subagent-tools" / "events.jsonl"


class TimelineApp(App[None]):
    def __init__(self, *, deferred: bool) -> None:
        super().__init__()
        self.deferred = deferred

    def compose(self) -> ComposeResult:
        yield Timeline(deferred=self.deferred, id="timeline")


def drawn(card: ToolCard) -> str:
    """What the card shows now (its last update), as plain text."""
    console = Console(width=110, record=True, file=io.StringIO(), color_system=None)
    console.print(card.content)
    return console.export_text()


def events() -> list[Event]:
    return list(with_unreadable_rows(read_events(TOOLS)))


async def _watch(deferred: bool) -> None:
    stream = events()
    grep_started = next(
        n for n, e in enumerate(stream) if e.type == "tool.execution_start" and e.agent_id
    )
    completed = next(n for n, e in enumerate(stream) if e.type == "subagent.completed")
    app = TimelineApp(deferred=deferred)
    async with app.run_test(size=(120, 40)) as pilot:
        timeline = app.query_one(Timeline)
        for event in stream[: grep_started + 1]:
            timeline.apply(event)
        await pilot.pause()
        (turn,) = [v for v in timeline._views.values() if isinstance(v, TurnView)]
        (card,) = turn.query(ToolCard)
        text = drawn(card)
        assert "⤷ ● Explore Agent  running · 1 turn · 1 tool call · claude-haiku-4.5" in text
        assert "● grep" in text  # what the run does now
        # The run's prompt and turn are its own: no user message or turn of the main's.
        assert len(timeline.transcript.items) == 2

        card.focus()
        await pilot.press("enter")  # a running run can be opened, to watch it
        assert "prompt: Find where the config is loaded" in drawn(card)
        await pilot.press("enter")

        for event in stream[grep_started + 1 : completed + 1]:
            timeline.apply(event)
        await pilot.pause()
        text = drawn(card)
        assert "⤷ ✓ Explore Agent  completed · 2 turns · 1 tool call · 8.0s" in text
        assert "The config is loaded by `load_config` in app/settings.py." in text
        assert "… the run's 2 turns (enter to expand)" in text


async def test_a_sub_agent_waiting_for_approval_says_so_on_its_collapsed_card() -> None:
    stream = events()
    grep_started = next(
        n for n, e in enumerate(stream) if e.type == "tool.execution_start" and e.agent_id
    )
    asked = event_from_dict(
        {
            "type": "permission.requested",
            "data": {
                "requestId": "r1",
                "permissionRequest": {"kind": "shell", "toolCallId": "call_grep_B"},
            },
            "agentId": "call_task_A",
            "id": "p1",
            "timestamp": stream[grep_started].timestamp,
        }
    )
    app = TimelineApp(deferred=False)
    async with app.run_test(size=(120, 40)) as pilot:
        timeline = app.query_one(Timeline)
        for event in [*stream[: grep_started + 1], asked]:
            timeline.apply(event)
        await pilot.pause()
        (card,) = app.query(ToolCard)
        assert "? grep: waiting for approval" in drawn(card)


async def test_a_running_sub_agent_redraws_its_card_live() -> None:
    await _watch(deferred=False)


async def test_a_running_sub_agent_redraws_its_card_in_a_deferred_timeline() -> None:
    await _watch(deferred=True)


def test_a_run_that_failed_before_it_began_opens_on_the_prompt_it_was_given() -> None:
    real = TOOLS.parent.parent / "copilot-real" / "irrlicht-foreground-subagent" / "events.jsonl"
    t = fold(with_unreadable_rows(read_events(real)), replay=True)
    failed = t.get_tool("call_ZaF4lN5Ge6Jmm9hylom7groZ")
    assert failed is not None and failed.subagent is not None
    console = Console(width=110, record=True, file=io.StringIO(), color_system=None)
    console.print(card_renderable(failed, expanded=False))
    collapsed = console.export_text()
    console.print(card_renderable(failed, expanded=True))
    opened = console.export_text()
    assert "✗ task  Write two-sentence JSONL explanation" in collapsed
    assert "… the run's prompt (enter to expand)" in collapsed
    assert "prompt: You are a task subagent." in opened and "prompt:" not in collapsed
