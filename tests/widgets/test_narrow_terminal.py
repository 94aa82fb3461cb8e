"""An 80×24 terminal: the welcome banner reflows, the status bar keeps tokens in/out."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region

from agent.transcript.fold import Transcript
from tests.support.app_harness import Harness, make_workspace, started
from tests.support.pilot import text_of, wait_for
from tests.support.streams import Stream
from widgets.status_bar import StatusBar

NARROW = (80, 24)
MODEL = "openrouter/anthropic/claude-3.5-sonnet-20241022"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))  # the banner's title says "~/ws"
    return make_workspace(tmp_path)


async def test_the_welcome_banner_reflows_in_80_columns(workspace: Path) -> None:
    h = Harness([], workspace)
    async with h.app.run_test(size=NARROW) as pilot:
        await started(pilot, h)
        await wait_for(pilot, lambda: bool(h.app.query(".welcome")), "the welcome banner")
        await pilot.pause()
        banner = h.app.query_one(".welcome")
        width = banner.content_region.width
        title, *body = [line.lstrip("█▌ ") for line in text_of(banner).splitlines()]
        assert title.startswith("loopdeck · ") and title.endswith(" · ~/ws")
        assert "Ask about this code" in body[0] and body[-1].endswith("lists commands.")
        # A paragraph: every line but the last is filled, none is a stub of a word or two.
        assert all(len(line) > width - 15 for line in body[:-1]), body


class FakeStatusApp(App[None]):
    """Only the status bar, filled as the app fills it, at the terminal's width."""

    def compose(self) -> ComposeResult:
        yield StatusBar(nudge_cap=5, id="status")


async def test_an_80_column_terminal_shows_tokens_out() -> None:
    s = Stream()
    s.start()
    s.user("hi")
    s.turn("t1", "hello", usage=(18_450, 1_175, 0.0321))
    transcript = Transcript()
    for event in s.events:
        transcript.apply(event)
    app = FakeStatusApp()
    async with app.run_test(size=NARROW) as pilot:
        bar = app.query_one(StatusBar)
        bar.show(transcript, model=MODEL, mode="autopilot", session_id="5eedcafe-00", busy=True)
        await pilot.pause()
        line = bar.render_lines(Region(0, 0, 80, 1))[0].text
        assert "● working" in line and "18.4k in · 1.2k out" in line and "$0.03" in line
