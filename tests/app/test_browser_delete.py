"""Deleting from the session browser: the row goes, and a folder that leads out of
the store is refused (nothing is written or removed there)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from textual.widgets import DataTable

from agent.log.store import SessionStore
from app.session_browser import SessionBrowser
from tests.support.held_sessions import SIZE, app_for, held_session, script_model, wait_until
from tests.support.pilot import notifications


async def test_a_deleted_session_leaves_the_list_and_a_link_out_is_refused(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = SessionStore(loopdeck_home)
    done = await held_session(store, tmp_path, "finished earlier")
    await done.close()
    outside = tmp_path / "outside-session"
    outside.mkdir()
    (outside / "events.jsonl").write_bytes(store.events_path(done.id).read_bytes())
    digest = hashlib.sha256((outside / "events.jsonl").read_bytes()).hexdigest()
    (store.root / "linked-elsewhere").symlink_to(outside)
    app = app_for(["--model", script_model(tmp_path, "mine", "mine"), "hello"], tmp_path, store)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                pilot,
                lambda: app.session is not None and store.events_path(app.session.id).is_file(),
                "the app's own session",
            )
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, SessionBrowser), "the browser")
            browser = app.screen
            assert isinstance(browser, SessionBrowser)

            row = [s.id for s in browser.rows].index(done.id)
            browser.query_one(DataTable).move_cursor(row=row)
            await pilot.press("d")
            await wait_until(pilot, lambda: app.screen is not browser, "to ask")
            await pilot.press("y")
            await wait_until(pilot, lambda: bool(notifications(app)), "the notice")
            assert notifications(app)[-1] == f"Deleted session {done.id[:8]}."
            assert not store.session_dir(done.id).exists()
            assert done.id not in [s.id for s in browser.rows]

            row = [s.id for s in browser.rows].index("linked-elsewhere")
            browser.query_one(DataTable).move_cursor(row=row)
            await pilot.press("d")
            await wait_until(pilot, lambda: app.screen is not browser, "to ask again")
            await pilot.press("y")
            await wait_until(pilot, lambda: len(notifications(app)) == 2, "the refusal")
            assert "leads out of" in notifications(app)[-1]
            assert sorted(p.name for p in outside.iterdir()) == ["events.jsonl"]
            assert hashlib.sha256((outside / "events.jsonl").read_bytes()).hexdigest() == digest
    finally:
        if app.session is not None:
            await app.session.close()
