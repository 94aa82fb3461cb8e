"""What a turn cost and how fast it ran, and what a cut attempt showed: live, in the
log, in replay, export, the session list and after a resume (no UI here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.events import usage_ledger
from agent.events.schema import (
    AssistantUsageData,
    Event,
    SessionCustomNotificationData,
    SessionUsageCheckpointData,
)
from agent.log.replay import EventIndex
from agent.log.session_row import SessionSummary
from agent.log.store import SessionStore, read_events
from agent.log.summary import summarize_events
from agent.session.session import Session
from agent.transcript.blocks import TurnBlock
from agent.transcript.fold import Transcript, fold
from app.export import to_html, to_markdown
from tests.support.scripting import new_session, scripted
from tests.support.snapshot_support import pin_determinism
from widgets.turn_view import header_text

VIEW = {"name": "view", "arguments": {"path": "."}}
TWO_TURNS: list[dict[str, Any]] = [
    {
        "text": "Looking around.",
        "tool_calls": [VIEW],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 5, "cost": 0.001},
    },
    {
        "text": "Done looking.",
        "usage": {"prompt_tokens": 1200, "completion_tokens": 7, "cost": 0.002},
    },
]


def turns_of(t: Transcript) -> list[TurnBlock]:
    return [b for b in t.items if isinstance(b, TurnBlock)]


def usage_of(t: Transcript) -> list[tuple[int | None, int | None, float | None]]:
    return [(b.input_tokens, b.output_tokens, b.cost) for b in turns_of(t)]


def totals(t: Transcript | SessionSummary) -> tuple[int, int, float]:
    return (t.input_tokens, t.output_tokens, round(t.cost, 9))


async def recorded(
    turns: list[dict[str, Any]], tmp_path: Path, home: Path, *prompts: str, **kw: Any
) -> tuple[Session, Transcript, SessionStore]:
    """Run ``prompts`` through a stored session; the live transcript saw everything."""
    store = SessionStore(home)
    session, _rec = await new_session(scripted(turns, **kw), tmp_path, store=store)
    live = Transcript()
    session.subscribe(live.apply, replay=True)
    for prompt in prompts:
        await session.send_and_wait(prompt)
    await session.close()
    return session, live, store


def persisted(store: SessionStore, session_id: str) -> list[Event]:
    return read_events(store.events_path(session_id)).events


# --- 7: usage survives the live run ----------------------------------------------------


async def test_usage_is_in_the_log_so_replay_export_and_the_listing_match_live(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    session, live, store = await recorded(TWO_TURNS, tmp_path, loopdeck_home, "look")
    events = persisted(store, session.id)
    replayed = fold(events, replay=True)

    expected = [(1000, 5, 0.001), (1200, 7, 0.002)]
    assert usage_of(live) == usage_of(replayed) == expected
    assert totals(live) == totals(replayed) == (2200, 12, 0.003)
    # The session list (metadata, and the log alone when there is none) says the same.
    assert totals(store.summary(session.id)) == (2200, 12, 0.003)
    lines = store.events_path(session.id).read_text("utf-8").splitlines()
    summary = summarize_events(map(json.loads, lines), SessionSummary(id=session.id, path=Path()))
    assert totals(summary) == (2200, 12, 0.003)
    # So do exports.
    md = to_markdown(replayed)
    assert "- **Tokens:** 2.2k in / 12 out" in md
    assert "- **Cost:** $0.0030" in md
    assert "### Turn 1 · scripted:test · " in md and "1.0k in / 5 out · $0.0010" in md
    assert "1.2k in / 7 out · $0.0020" in to_html(replayed)
    # What carries it: the schema's persisted usage record, cumulative per model.
    checkpoints = [e for e in events if isinstance(e.data, SessionUsageCheckpointData)]
    assert len(checkpoints) == 2
    assert not any(isinstance(e.data, AssistantUsageData) for e in events)  # stays ephemeral


async def test_a_live_session_does_not_rebuild_its_totals_from_its_own_checkpoint(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session folds each checkpoint it records; rebuilding the totals from the one
    # just made from them (each turn) gives them back: only a resume needs it.
    rebuilt: list[object] = []
    real = usage_ledger.metrics_of

    def metrics_of(checkpoint: SessionUsageCheckpointData) -> Any:
        rebuilt.append(checkpoint)
        return real(checkpoint)

    monkeypatch.setattr(usage_ledger, "metrics_of", metrics_of)
    session, live, store = await recorded(TWO_TURNS, tmp_path, loopdeck_home, "look")
    assert rebuilt == []
    assert totals(live) == (2200, 12, 0.003)
    assert session.usage.totals().input_tokens == 2200
    assert session.usage.totals().requests == 2
    resumed = await Session.resume(store=store, session_id=session.id, model=scripted(TWO_TURNS))
    try:
        assert rebuilt  # a resume restores the totals from the log's checkpoints
        assert resumed.usage.totals() == session.usage.totals()
    finally:
        await resumed.close()


async def test_every_line_still_parses_with_the_official_parser(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    official = pytest.importorskip("copilot.generated.session_events")
    turns = [{**TWO_TURNS[0], "reasoning": "hm"}, {"text": "Half", "error": {"type": "server"}}]
    turns.append(TWO_TURNS[1])
    session, _live, store = await recorded(turns, tmp_path, loopdeck_home, "look")
    path = store.events_path(session.id)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    types = {line["type"] for line in lines}
    assert {"session.usage_checkpoint", "session.custom_notification"} <= types
    for line in lines:
        parsed = official.session_event_from_dict(line)
        assert parsed.type.value == line["type"]
    checkpoint = next(line for line in lines if line["type"] == "session.usage_checkpoint")
    data = official.session_event_from_dict(checkpoint).data
    (metric,) = data.provider_model_metrics
    assert (metric.model_id, metric.metrics.usage.input_tokens) == ("scripted:test", 1000)


async def test_a_resumed_session_counts_the_whole_session(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    first, _live, store = await recorded(TWO_TURNS, tmp_path, loopdeck_home, "look")
    more = [*TWO_TURNS, {"text": "More.", "usage": {"prompt_tokens": 1500, "completion_tokens": 9}}]
    resumed = await Session.resume(store=store, session_id=first.id, model=scripted(more))
    seen = Transcript()  # what the app's timeline and status bar read
    resumed.subscribe(seen.apply, replay=True)  # the restored log, then the new send
    assert totals(seen) == (2200, 12, 0.003)
    await resumed.send_and_wait("and more")
    await resumed.close()

    whole = fold(persisted(store, first.id), replay=True)
    assert usage_of(whole)[-1] == usage_of(seen)[-1] == (1500, 9, 0.0)
    assert totals(seen) == totals(whole) == totals(store.summary(first.id)) == (3700, 21, 0.003)


async def test_a_replay_window_keeps_the_usage_recorded_before_it(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    turns = [
        {"text": f"Turn {i}.", "tool_calls": [VIEW], "usage": {"prompt_tokens": 10 * (i + 1)}}
        for i in range(5)
    ]
    turns.append({"text": "Done.", "usage": {"prompt_tokens": 60, "completion_tokens": 1}})
    session, live, store = await recorded(turns, tmp_path, loopdeck_home, "go")
    index = EventIndex.build(store.events_path(session.id))
    start = index.turn_starts[3]  # a window of the last three turns
    window = Transcript()
    checkpoint = index.last_before("session.usage_checkpoint", start)
    assert checkpoint is not None
    window.apply(checkpoint)
    for event in index.read(start, len(index)):
        window.apply(event)
    assert totals(window) == totals(live) == (210, 1, 0.0)
    assert usage_of(window) == usage_of(live)[3:] == [(40, 0, 0.0), (50, 0, 0.0), (60, 1, 0.0)]


# --- 8: time to first token and tokens per second ----------------------------------------


async def test_speed_is_shown_live_and_the_same_figures_replay(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, _ids = pin_determinism(monkeypatch)  # every event 140 ms after the last
    reply = {"text": "one two three four five", "usage": {"completion_tokens": 10}}
    store = SessionStore(loopdeck_home)
    session, rec = await new_session(scripted([reply]), tmp_path, store=store)
    live = Transcript()
    while_streaming: list[tuple[float | None, float | None]] = []

    def watch(event: Event) -> None:
        live.apply(event)
        turn = live.current_turn
        if event.type == "assistant.message_delta" and turn is not None:
            while_streaming.append((turn.ttft_seconds, turn.tokens_per_second))

    session.subscribe(watch)
    await session.send_and_wait("count")
    await session.close()

    # Live, from the first delta on: time to first token at once, then chunks per second.
    assert while_streaming[0] == (0.14, None)
    assert while_streaming[2] == (0.14, pytest.approx(3 / 0.28))
    # Done: message_start -> first delta 140 ms; -> message 840 ms; 10 tokens in 700 ms.
    (usage,) = rec.of("assistant.usage")
    assert isinstance(usage.data, AssistantUsageData)
    assert (usage.data.time_to_first_token_ms, usage.data.duration) == (140, 840)
    replayed = fold(persisted(store, session.id), replay=True)
    for t in (live, replayed):
        (turn,) = turns_of(t)
        assert turn.ttft_seconds == 0.14
        assert turn.tokens_per_second == pytest.approx(10 / 0.7)
        assert "first token 140ms · 14 tok/s" in header_text(turn, show_model=False).plain
    assert "first token 140ms · 14 tok/s" in to_markdown(replayed)
    assert clock.calls > 0


# --- 6: a cut attempt stays visible ------------------------------------------------------


async def test_a_cut_attempt_stays_until_the_retry_replaces_it_live_and_in_replay(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    turns = [
        {"text": "The answer is", "error": {"type": "server", "message": "stream dropped"}},
        {"text": "The answer is 42."},
    ]
    store = SessionStore(loopdeck_home)
    session, rec = await new_session(scripted(turns), tmp_path, store=store)
    live = Transcript()
    after: dict[str, tuple[str, int | None, str]] = {}

    def watch(event: Event) -> None:
        live.apply(event)
        turn = live.current_turn
        if turn is not None and event.type not in after:
            after[event.type] = (turn.cut_text, turn.cut_attempt, turn.text)

    session.subscribe(watch)
    outcome = await session.send_and_wait("what is it?")
    await session.close()
    assert outcome.final_text == "The answer is 42."

    # Kept through the retry, marked as attempt 1; gone once the retry streams its reply.
    assert after["assistant.turn_retry"] == ("The answer is", 1, "")
    (turn,) = turns_of(live)
    assert (turn.cut_text, turn.text, turn.retries) == ("", "The answer is 42.", 1)
    # The log holds it (deltas do not reach it), so a replay shows the same.
    events = persisted(store, session.id)
    notes = [e.data for e in events if isinstance(e.data, SessionCustomNotificationData)]
    cut = [n for n in notes if n.name == "attempt_cut"]
    assert len(cut) == 1 and cut[0].payload["content"] == "The answer is"
    retry_at = next(i for i, e in enumerate(events) if e.type == "assistant.turn_retry")
    midway = fold(events[: retry_at + 1])
    assert [(b.cut_text, b.cut_attempt, b.text) for b in turns_of(midway)] == [
        ("The answer is", 1, "")
    ]
    replayed = fold(events, replay=True)
    assert [(b.cut_text, b.text, b.retries) for b in turns_of(replayed)] == [
        ("", "The answer is 42.", 1)
    ]
    assert rec.types()[-1] == "session.idle"


async def test_a_cut_attempt_that_nothing_replaced_stays_in_replay_and_export(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    dropped = {"text": "Half an ans", "error": {"type": "server", "message": "dropped"}}
    session, live, store = await recorded(
        [dropped], tmp_path, loopdeck_home, "go", when_exhausted="repeat_last"
    )
    replayed = fold(persisted(store, session.id), replay=True)
    for t in (live, replayed):
        (turn,) = turns_of(t)
        assert (turn.status, turn.cut_text, turn.cut_attempt, turn.text) == (
            "error",
            "Half an ans",
            4,  # the first try and three retries
            "",
        )
        assert turn.ttft_seconds is None  # no reply arrived: no speed to show
    md = to_markdown(replayed)
    assert "> *attempt 4, cut:* ~~Half an ans~~" in md
    assert "<i>attempt 4, cut:</i> <del>Half an ans</del>" in to_html(replayed)


async def test_replay_and_watch_of_a_long_log_count_the_turns_they_do_not_load(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    from app.viewer import WINDOW_TURNS, ReplayScreen, ViewerApp, WatchScreen

    count = WINDOW_TURNS + 5
    turns = [
        {"text": f"Step {i}.", "tool_calls": [VIEW], "usage": {"prompt_tokens": 10}}
        for i in range(count - 1)
    ]
    turns.append({"text": "Done.", "usage": {"prompt_tokens": 10, "completion_tokens": 3}})
    session, live, store = await recorded(turns, tmp_path, loopdeck_home, "go")
    path = store.events_path(session.id)
    assert totals(live) == (10 * count, 3, 0.0)
    for screen in (ReplayScreen(path, speed=0.0), WatchScreen(path)):
        async with ViewerApp(screen).run_test(size=(100, 34)) as pilot:
            await pilot.pause()
            shown = screen.timeline.transcript
            assert len(turns_of(shown)) == WINDOW_TURNS  # only the tail is loaded...
            assert totals(shown) == totals(live)  # ...but the usage counts the whole log
            assert usage_of(shown) == usage_of(live)[-WINDOW_TURNS:]


# --- odd input never breaks the fold -------------------------------------------------


def test_foreign_or_malformed_notes_and_checkpoints_are_kept_or_ignored_not_fatal() -> None:
    from agent.events.schema import AssistantTurnStartData
    from agent.transcript.blocks import RawBlock

    def ev(data: Any) -> Event:
        return Event.new(data, None)

    t = Transcript()
    t.apply(ev(AssistantTurnStartData(turn_id="0")))
    foreign = SessionCustomNotificationData(source="someone", name="x", payload={"a": 1})
    t.apply(ev(foreign))
    bad = SessionCustomNotificationData(source="loopdeck", name="attempt_cut", payload=[1])
    t.apply(ev(bad))
    assert [(b.type, b.data.get("source")) for b in t.items if isinstance(b, RawBlock)] == [
        ("session.custom_notification", "someone"),
        ("session.custom_notification", "loopdeck"),
    ]
    junk = SessionUsageCheckpointData(
        provider_model_metrics=[{"modelId": 3, "metrics": "no"}, {"metrics": {"usage": {}}}]
    )
    t.apply(ev(junk))
    assert totals(t) == (0, 0, 0.0)
    good = SessionUsageCheckpointData(
        provider_model_metrics=[
            {"modelId": "m", "metrics": {"usage": {"inputTokens": 5}, "requests": {"cost": 1}}}
        ]
    )
    t.apply(ev(good))
    assert totals(t) == (5, 0, 1.0) and usage_of(t) == [(5, 0, 1.0)]
    # A smaller total (another writer's series) starts over instead of going negative.
    t.apply(ev(SessionUsageCheckpointData(provider_model_metrics=[])))
    t.apply(ev(good))
    assert totals(t) == (10, 0, 2.0)
