"""SVG snapshots of replay and of the session browser, over the recorded fixtures.

The fixtures carry fixed timestamps, so every duration drawn is the same run after
run; playback is stopped at a fixed position by key presses (instant speed, then
``g`` and arrows), never by timing. The browser reads ``session.json`` files with
fixed contents (an outcome is written, so no pid is checked).

Update after an intended visual change with
``pytest tests/widgets/test_snapshots_replay.py --snapshot-update`` and look at the pictures.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot

from agent.log.store import SessionStore
from app.session_browser import SessionBrowser
from app.viewer import STYLES, ReplayScreen, ViewerApp
from tests.support.paths import FIXTURES
from tests.support.snapshot_support import keys_then_settle

SnapCompare = Callable[..., bool]
TERMINAL = (100, 34)
SHOP = Path("/home/dev/shop")


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))


def test_replay_paused_after_two_turns(snap_compare: SnapCompare) -> None:
    """The loopdeck session stepped to the end of turn 2: the bar says turn 2 of 6."""
    screen = ReplayScreen(FIXTURES / "loopdeck-session" / "events.jsonl", speed=0.0)
    assert snap_compare(
        ViewerApp(screen),
        terminal_size=TERMINAL,
        run_before=keys_then_settle("g", "right", "right"),
    )
    assert screen.position == 12 and not screen.playing


def test_replay_of_a_copilot_session_with_unknown_types(snap_compare: SnapCompare) -> None:
    """The Copilot fixture at its end: events loopdeck does not model are raw rows."""
    screen = ReplayScreen(FIXTURES / "copilot-session" / "events.jsonl", speed=0.0)
    assert snap_compare(ViewerApp(screen), terminal_size=(100, 46), run_before=keys_then_settle())


class BrowserApp(App[None]):
    CSS_PATH = STYLES / "app.tcss"

    def __init__(self, store: SessionStore, cwd: Path) -> None:
        super().__init__()
        self.store, self.cwd = store, cwd

    def on_mount(self) -> None:
        self.push_screen(SessionBrowser(self.store, self.cwd))


SESSIONS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "1d0c5e55-0000-4000-8000-000000000001",
        "loopdeck-session",
        {
            "startedAt": "2025-03-14T09:26:53.000Z",
            "updatedAt": "2025-03-14T09:27:59.500Z",
            "cwd": str(SHOP),
            "model": "scripted:fix-cart.json",
            "mode": "autopilot",
            "turns": 6,
            "toolCalls": 5,
            "firstPrompt": "Make Cart.add reject a quantity of zero or less.",
            "outcome": "completed",
        },
    ),
    (
        "c0b1107e-5e55-4a1e-9d3c-7e57f1c5a001",
        "copilot-session",
        {
            "startedAt": "2025-10-02T14:05:00.000Z",
            "updatedAt": "2025-10-02T14:05:21.700Z",
            "cwd": "/home/dev/notes",
            "model": "claude-sonnet-4.5",
            "mode": "interactive",
            "turns": 3,
            "toolCalls": 1,
            "firstPrompt": "How many words are in README.md?",
            "outcome": "completed",
        },
    ),
    (
        "7042a1b0-0000-4000-8000-000000000003",
        "torn",
        {
            "startedAt": "2025-03-15T10:02:11.000Z",
            "updatedAt": "2025-03-15T10:02:16.600Z",
            "cwd": str(SHOP),
            "model": "scripted:fix-cart.json",
            "mode": "autopilot",
            "turns": 2,
            "toolCalls": 1,
            "firstPrompt": "Make Cart.add reject a quantity of zero or less (second try).",
            "outcome": "interrupted",
        },
    ),
]


def test_session_browser(snap_compare: SnapCompare, loopdeck_home: Path) -> None:
    """Three sessions: this directory's two first (newest on top), then the other."""
    store = SessionStore(loopdeck_home)
    for session_id, name, meta in SESSIONS:
        folder = store.session_dir(session_id)
        folder.mkdir(parents=True)
        shutil.copy(FIXTURES / name / "events.jsonl", folder / "events.jsonl")
        (folder / "session.json").write_text(json.dumps({**meta, "pid": 0}), "utf-8")
    rows: list[str] = []
    settle = keys_then_settle()

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, SessionBrowser)
        rows.extend(s.id[:8] for s in screen.rows)

    assert snap_compare(BrowserApp(store, SHOP), terminal_size=TERMINAL, run_before=run_before)
    assert rows == ["7042a1b0", "1d0c5e55", "c0b1107e"]
