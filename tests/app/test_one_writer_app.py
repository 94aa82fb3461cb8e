"""One writer per session, in the app: resuming a session another process writes is
refused with a notice, at start-up (``loopdeck --resume ID``) and from the browser.

The other writer is a session this test holds open; the lock is per open file, so it
refuses the app even though both live in this process.
"""

from __future__ import annotations

import os
from pathlib import Path

from textual.widgets import DataTable, Static

from agent.log.store import SessionStore
from app.session_browser import SessionBrowser
from tests.support.held_sessions import SIZE, app_for, held_session, script_model, wait_until
from tests.support.pilot import notifications


async def test_resuming_a_session_in_use_at_start_up_shows_who_holds_it(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = SessionStore(loopdeck_home)
    other = await held_session(store, tmp_path, "busy elsewhere")
    try:
        app = app_for(["--resume", other.id[:8]], tmp_path, store)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: bool(app.query(".startup-error")), "the notice")
            shown = str(app.query_one(".startup-error", Static).render())
            assert f"session {other.id[:8]} is in use by another loopdeck process" in shown
            assert f"pid {os.getpid()}" in shown
            assert app.session is None and app.is_running
    finally:
        await other.close()


async def test_resuming_a_session_in_use_from_the_browser_keeps_it_open(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = SessionStore(loopdeck_home)
    other = await held_session(store, tmp_path, "busy elsewhere")
    app = app_for(["--model", script_model(tmp_path, "mine", "mine")], tmp_path, store)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.session is not None, "the app's own session")
            mine = app.session
            assert mine is not None

            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, SessionBrowser), "the browser")
            browser = app.screen
            assert isinstance(browser, SessionBrowser)
            row = [s.id for s in browser.rows].index(other.id)
            browser.query_one(DataTable).move_cursor(row=row)
            await pilot.press("enter")
            await wait_until(
                pilot, lambda: any("in use" in m for m in notifications(app)), "the notice"
            )
            (notice,) = [m for m in notifications(app) if "in use" in m]
            assert f"pid {os.getpid()}" in notice
            assert app.screen is browser  # still browsing
            assert app.session is mine  # and the app's session was not given up

            # Once the other writer lets go, the same choice resumes it.
            await other.close()
            await pilot.press("enter")
            await wait_until(
                pilot,
                lambda: app.session is not None and app.session.id == other.id,
                "the resumed session",
            )
            assert not isinstance(app.screen, SessionBrowser)
    finally:
        await other.close()
        if app.session is not None:
            await app.session.close()


async def test_the_browser_does_not_delete_a_session_a_process_has_open(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = SessionStore(loopdeck_home)
    other = await held_session(store, tmp_path, "busy elsewhere")
    app = app_for(["--model", script_model(tmp_path, "mine", "mine"), "hello"], tmp_path, store)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                pilot,
                lambda: app.session is not None and store.events_path(app.session.id).is_file(),
                "the app's own session",
            )
            mine = app.session
            assert mine is not None
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, SessionBrowser), "the browser")
            browser = app.screen
            assert isinstance(browser, SessionBrowser)
            row = [s.id for s in browser.rows].index(other.id)
            browser.query_one(DataTable).move_cursor(row=row)
            await pilot.press("d")
            await wait_until(pilot, lambda: not isinstance(app.screen, SessionBrowser), "to ask")
            await pilot.press("y")
            await wait_until(pilot, lambda: bool(notifications(app)), "the notice")
            (notice,) = notifications(app)
            assert f"session {other.id[:8]} is in use by another loopdeck process" in notice
            assert f"pid {os.getpid()}" in notice
            assert store.session_dir(other.id).is_dir()
            await wait_until(pilot, lambda: app.screen is browser, "back in the browser")

            # The app's own session: it says so without asking.
            row = [s.id for s in browser.rows].index(mine.id)
            browser.query_one(DataTable).move_cursor(row=row)
            await pilot.press("d")
            await wait_until(pilot, lambda: len(notifications(app)) == 2, "the second notice")
            assert f"Session {mine.id[:8]} is open here" in notifications(app)[1]
            assert app.screen is browser
            assert store.session_dir(mine.id).is_dir()
    finally:
        await other.close()
        if app.session is not None:
            await app.session.close()
