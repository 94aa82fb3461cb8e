"""Opening a finished session to look at it, and leaving, changes nothing on disk.

Resuming records ``session.resume`` (and the app's switch back to interactive) only
once the session is used: until then the listing must still say what the session was
(its outcome, mode and duration), so neither its log nor its metadata is written.
"""

from __future__ import annotations

from pathlib import Path

from agent.log.store import SessionStore, read_events
from agent.session.session import Session
from tests.support.scripting import FakeRecorder, new_session, scripted

DONE = {"name": "task_complete", "arguments": {"summary": "Surveyed."}}


async def finished_autopilot_session(tmp_path: Path) -> tuple[SessionStore, str]:
    store = SessionStore(tmp_path / "home")
    model = scripted([{"text": "Looking.", "tool_calls": [DONE]}])
    session, _ = await new_session(model, tmp_path, store=store, mode="autopilot")
    await session.send_and_wait("survey this project")
    await session.close()
    return store, session.id


def on_disk(store: SessionStore, sid: str) -> tuple[bytes, bytes]:
    folder = store.session_dir(sid)
    return (folder / "events.jsonl").read_bytes(), (folder / "session.json").read_bytes()


async def reopen(store: SessionStore, sid: str) -> Session:
    """As the app opens it: resumed, then back to interactive (app/model_setup.py)."""
    session = await Session.resume(store=store, session_id=sid, model=scripted([]))
    session.set_mode("interactive")
    return session


async def test_opening_and_closing_a_finished_session_writes_nothing(tmp_path: Path) -> None:
    store, sid = await finished_autopilot_session(tmp_path)
    before, listed = on_disk(store, sid), store.summary(sid)
    assert (listed.outcome, listed.mode) == ("completed", "autopilot")

    session = await reopen(store, sid)
    recorder = FakeRecorder()
    session.subscribe(recorder, replay=True)
    # What opening did is shown all the same.
    assert "session.resume" in recorder.types()
    assert "session.mode_changed" in recorder.types()
    await session.close()

    assert on_disk(store, sid) == before
    assert store.summary(sid) == listed


async def test_a_session_used_after_opening_records_its_opening_first(tmp_path: Path) -> None:
    store, sid = await finished_autopilot_session(tmp_path)
    session = await Session.resume(store=store, session_id=sid, model=scripted([{"text": "Hi."}]))
    session.set_mode("interactive")
    recorder = FakeRecorder()
    session.subscribe(recorder)
    await session.send_and_wait("and now the docs")
    await session.close()

    types = [e.type for e in read_events(store.events_path(sid)).events]
    tail = types[types.index("session.resume") :]
    assert tail[:3] == ["session.resume", "session.mode_changed", "user.message"]
    assert types.count("session.resume") == 1
    # Each event reached the subscriber once: when emitted, not again when written.
    ids = [e.id for e in recorder.events]
    assert len(ids) == len(set(ids))
    listed = store.summary(sid)
    assert (listed.mode, listed.outcome, listed.turns) == ("interactive", "completed", 2)


async def test_the_app_opened_on_a_finished_session_and_quit_leaves_it_as_it_was(
    tmp_path: Path,
) -> None:
    from app.app import LoopdeckApp

    store, sid = await finished_autopilot_session(tmp_path)
    before, listed = on_disk(store, sid), store.summary(sid)

    async def opened() -> Session:
        return await reopen(store, sid)

    app = LoopdeckApp(opened)
    async with app.run_test(size=(100, 30)) as pilot:
        while app.session is None:
            await pilot.pause()
        await pilot.pause()
        await pilot.press("ctrl+q")
    assert on_disk(store, sid) == before
    assert store.summary(sid) == listed
