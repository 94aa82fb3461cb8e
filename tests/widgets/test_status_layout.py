"""The status line at every width: what shortens or goes first, what always stays."""

from __future__ import annotations

import pytest

from agent.transcript.fold import Transcript
from tests.support.streams import Stream
from widgets.status_bar import StatusBar
from widgets.status_layout import Segment, fit


def test_segments_give_way_lowest_rank_first() -> None:
    segments = [
        Segment.fixed("state"),
        Segment.shrinking("aaaa-long", (20, "aaaa"), (50, "")),
        Segment.shrinking("bbbb", (10, "")),
        Segment.fixed("keep"),
    ]
    assert fit(segments, 100).plain == "state │ aaaa-long │ bbbb │ keep"
    assert fit(segments, 30).plain == "state │ aaaa-long │ keep"  # rank 10 went first
    assert fit(segments, 22).plain == "state │ aaaa │ keep"
    assert fit(segments, 12).plain == "state │ keep"
    # Nothing left to give: cut at the end, the first segment stays.
    assert fit(segments, 8).plain == "state │…"
    assert all(fit(segments, w).cell_len <= w for w in range(1, 40))


def test_a_segment_needs_one_rank_per_step() -> None:
    with pytest.raises(ValueError):
        Segment((fit([], 1),), (1,))


MODEL = "openrouter/anthropic/claude-3.5-sonnet-20241022"


def status_at(width: int, *, queued: int = 0) -> str:
    """The status bar's line for an autopilot session with one turn, at ``width``."""
    s = Stream()
    s.start()
    s.user("hi")
    s.turn("t1", "hello", usage=(123_456, 7_890, 0.4321))
    transcript = Transcript()
    for event in s.events:
        transcript.apply(event)
    bar = StatusBar(nudge_cap=5)
    bar.transcript, bar.model, bar.mode = transcript, MODEL, "autopilot"
    bar.session_id = "5eedcafe-0000-0000"
    bar.queued = queued
    return fit(bar.segments(), width).plain


@pytest.mark.parametrize("width", [40, 60, 78, 98, 140, 300])
def test_tokens_in_and_out_stay_at_every_width(width: int) -> None:
    line = status_at(width, queued=2)
    assert len(line) <= width
    assert line.startswith("○ idle")
    assert "123.5k in · 7.9k out" in line
    assert "2 queued" in line


def test_what_goes_first_at_narrow_widths() -> None:
    wide = status_at(200)
    assert wide == (
        f"○ idle │ {MODEL} │ autopilot 0/5 nudges │ 5eedcafe │ turns 1 │ "
        "123.5k in · 7.9k out │ $0.43"
    )
    # The session id goes first, then the model's provider.
    assert status_at(120) == (
        f"○ idle │ {MODEL} │ autopilot 0/5 nudges │ turns 1 │ 123.5k in · 7.9k out │ $0.43"
    )
    assert status_at(110) == (
        "○ idle │ claude-3.5-sonnet-20241022 │ autopilot 0/5 nudges │ turns 1 │ "
        "123.5k in · 7.9k out │ $0.43"
    )
    # Then the word "nudges" and the turn count (each turn's header numbers it).
    assert status_at(90) == (
        "○ idle │ claude-3.5-sonnet-20241022 │ autopilot 0/5 │ 123.5k in · 7.9k out │ $0.43"
    )
    # Then the model name is cut, then it goes (it heads the welcome and the turns).
    assert status_at(80) == (
        "○ idle │ claude-3.5-sonn… │ autopilot 0/5 │ 123.5k in · 7.9k out │ $0.43"
    )
    assert status_at(70) == "○ idle │ autopilot 0/5 │ 123.5k in · 7.9k out │ $0.43"
    # Then the cost, and at last the mode.
    assert status_at(50) == "○ idle │ autopilot 0/5 │ 123.5k in · 7.9k out"
    assert status_at(40) == "○ idle │ 123.5k in · 7.9k out"


def test_context_use_shows_once_measured_and_gives_way_before_the_model() -> None:
    from agent.events.schema import SessionUsageInfoData

    s = Stream()
    s.start()
    s.user("hi")
    s.emit(SessionUsageInfoData(current_tokens=6_200, messages_length=3, token_limit=10_000))
    s.turn("t1", "hello", usage=(6_200, 100, None))
    transcript = Transcript()
    for event in s.events:
        transcript.apply(event)
    bar = StatusBar()
    bar.transcript, bar.model, bar.mode = transcript, "gpt-4o", "interactive"
    bar.session_id = "5eedcafe-0000-0000"
    assert fit(bar.segments(), 200).plain == (
        "○ idle │ gpt-4o │ interactive │ 5eedcafe │ turns 1 │ 6.2k in · 100 out │ ctx 62%"
    )
    # It gives way after the turn count, before the model.
    assert fit(bar.segments(), 60).plain == (
        "○ idle │ gpt-4o │ interactive │ 6.2k in · 100 out │ ctx 62%"
    )
    assert fit(bar.segments(), 55).plain == "○ idle │ gpt-4o │ interactive │ 6.2k in · 100 out"
    # Nothing measured yet: no segment.
    assert "ctx" not in status_at(300)
