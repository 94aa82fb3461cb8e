"""Replaying real Copilot logs in the app (instant speed, the whole file shown).

The views the timeline mounts are checked, not the pixels: a ``!command`` is a
shell row, a session shut down (or cut off) mid-turn leaves nothing running.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.viewer import ReplayScreen, ViewerApp
from tests.support.paths import FIXTURES
from widgets.message_blocks import RawView
from widgets.shell_view import ShellView
from widgets.tool_card import ToolCard
from widgets.turn_digest import TurnDigest
from widgets.turn_view import TurnView

REAL = FIXTURES / "copilot-real"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))


async def _replayed(path: Path) -> tuple[ViewerApp, ReplayScreen]:
    screen = ReplayScreen(path, speed=0.0)  # instant: jumps to the end
    return ViewerApp(screen), screen


def _nothing_runs(app: ViewerApp) -> None:
    for view in [*app.screen.query(TurnView), *app.screen.query(TurnDigest)]:
        assert view.block.finished, f"turn {view.block.number} is drawn running"
        assert all(tool.finished for tool in view.block.tools)
    assert not any(card.is_spinning for card in app.screen.query(ToolCard))


async def test_replay_draws_a_users_shell_command_with_its_output() -> None:
    app, screen = await _replayed(REAL / "irrlicht-shell-escape-command" / "events.jsonl")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        (shell,) = screen.query(ShellView)
        assert (shell.block.command, shell.block.output) == ("echo hello", "hello")
        kept_raw = {view.block.type for view in screen.query(RawView)}
        assert not kept_raw & {"tool.user_requested", "tool.execution_complete"}


async def test_replay_of_a_session_shut_down_mid_turn_leaves_nothing_running() -> None:
    app, screen = await _replayed(REAL / "irrlicht-tool-gate-permission-prompt" / "events.jsonl")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        _nothing_runs(app)
        assert not screen.timeline.transcript.busy


async def test_replay_to_the_end_of_a_cut_off_file_closes_it(tmp_path: Path) -> None:
    # The same log without its shutdown line: the file ends inside the turn, and no
    # process writes it any more.
    source = REAL / "irrlicht-tool-gate-permission-prompt" / "events.jsonl"
    lines = [
        line
        for line in source.read_text("utf-8").splitlines()
        if json.loads(line)["type"] != "session.shutdown"
    ]
    log = tmp_path / "cut" / "events.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n", "utf-8")
    app, screen = await _replayed(log)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        _nothing_runs(app)
        # Played event by event from the start, the end closes it the same way.
        await pilot.press("g")
        screen.playing = False
        while screen.position < len(screen.index):
            screen._show_next()
        await pilot.pause()
        _nothing_runs(app)
        assert not screen.timeline.transcript.busy


def _labels(views: Any) -> list[str]:
    return [view.block.model_label for view in views]


async def test_replay_names_the_model_that_answered() -> None:
    app, screen = await _replayed(REAL / "irrlicht-model-switch-midsession" / "events.jsonl")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        shown = _labels(screen.query(TurnView)) + _labels(screen.query(TurnDigest))
        assert shown == ["gpt-5-mini (auto)"] * 2
        assert screen.status.model == "gpt-5-mini (auto)"
