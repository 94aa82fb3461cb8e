"""The session browser's first prompt (what says which session it is) and model are on
screen at 120 and at 80 columns; what does not fit scrolls to the right."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widgets import DataTable

from agent.log.store import SessionStore
from app.session_browser import SessionBrowser
from app.sessions_table import format_table, model_label

PROMPT = (
    "Make Cart.add reject a quantity of zero or less, and say so in the error message "
    "the checkout page shows"
)


class BrowserApp(App[None]):
    def __init__(self, store: SessionStore, cwd: Path) -> None:
        super().__init__()
        self.store, self.cwd = store, cwd

    def on_mount(self) -> None:
        self.push_screen(SessionBrowser(self.store, self.cwd))


def stored(tmp_path: Path) -> SessionStore:
    store = SessionStore(tmp_path / "home")
    folder = store.root / "1d0c5e55-0000-4000-8000-000000000001"
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("", "utf-8")
    meta: dict[str, Any] = {
        "startedAt": "2025-03-14T09:26:53.000Z",
        "updatedAt": "2025-03-14T09:27:59.500Z",
        "cwd": str(tmp_path / "shop"),
        "model": "anthropic/claude-sonnet-4-5",
        "mode": "autopilot",
        "turns": 6,
        "toolCalls": 5,
        "firstPrompt": PROMPT,
        "outcome": "completed",
    }
    (folder / "session.json").write_text(json.dumps(meta), "utf-8")
    return store


def visible(table: DataTable[Any]) -> list[str]:
    """The table's lines as the screen shows them (its viewport, not its content)."""
    return [table.render_line(y).text for y in range(2)]


@pytest.mark.parametrize(("width", "shown"), [(120, 55), (80, 30)])
async def test_the_first_prompt_and_the_model_are_on_screen(
    tmp_path: Path, width: int, shown: int
) -> None:
    app = BrowserApp(stored(tmp_path), tmp_path / "shop")
    async with app.run_test(size=(width, 20)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        header, row = visible(table)
        assert "first prompt" in header and "model" in header
        assert ("completed" in row) is (width >= 120)
        assert PROMPT[:shown] in row
        assert "claude-sonnet-4-5" in row


def listing_row(prompt: str) -> tuple[str, ...]:
    return (
        "1d0c5e55",
        "2025-03-14 09:26",
        "~/src/shop",
        model_label("anthropic/claude-sonnet-4-5"),
        "autopilot",
        "6",
        "5",
        "completed",
        "1m06s",
        "18.4k",
        "324",
        "$0.0120",
        prompt,
    )


@pytest.mark.parametrize("width", [80, 120])
def test_loopdeck_sessions_fits_the_terminal_with_the_model_and_the_prompt(width: int) -> None:
    header, row = format_table([listing_row(PROMPT)], width)
    assert len(header) <= width and len(row) <= width
    assert "MODEL" in header and header.rstrip().endswith("FIRST PROMPT")
    assert "claude-sonnet-4-5" in row and PROMPT[:20] in row
    assert ("TOOLS" in header) is (width > 120)  # left out first on a narrow terminal


def test_loopdeck_sessions_shows_every_column_when_there_is_room() -> None:
    header, row = format_table([listing_row(PROMPT)], 250)
    assert header.split() == [
        *["ID", "STARTED", "CWD", "MODEL", "MODE", "TURNS", "TOOLS"],
        *(["OUTCOME", "TOOK", "IN", "OUT", "COST", "FIRST", "PROMPT"]),
    ]
    assert row.endswith(PROMPT)
