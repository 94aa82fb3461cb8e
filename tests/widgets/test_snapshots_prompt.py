"""SVG snapshots of the prompt's completion menu: ``/`` commands and ``@`` files, at
the two sizes the app is checked at. See tests/widgets/test_snapshots.py for how to update."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.app import LoopdeckApp
from tests.support.snapshot_support import (
    make_app,
    settle,
    wait_for,
)
from tests.support.snapshot_support import pinned as pinned  # autouse
from tests.support.snapshot_support import workspace as workspace  # the fixture

SnapCompare = Callable[..., bool]
SIZES = [(120, 40), (80, 24)]


def typing(text: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Open the session, wait for the workspace index, then type ``text``."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle()(pilot)
        app = pilot.app
        assert isinstance(app, LoopdeckApp)
        await wait_for(pilot, lambda: app.files.ready)
        for char in text:
            await pilot.press(char)
        await wait_for(pilot, lambda: app.menu.is_open)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_slash_menu(snap_compare: SnapCompare, workspace: Path, size: tuple[int, int]) -> None:
    """``/`` lists the commands with their arguments and help, the first highlighted."""
    app = make_app(workspace, [])
    assert snap_compare(app, terminal_size=size, run_before=typing("/"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_at_menu(snap_compare: SnapCompare, workspace: Path, size: tuple[int, int]) -> None:
    """``@ca`` lists the workspace's files and folders, fuzzily, best first."""
    app = make_app(workspace, [])
    assert snap_compare(app, terminal_size=size, run_before=typing("look at @ca"))
