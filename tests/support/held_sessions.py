"""Sessions on disk for the app to open, for Pilot tests of the session browser and of
one writer per session: a session another writer holds open, and the app opened as
``loopdeck ARGV`` would open it, on a given store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from agent.log.store import SessionStore
from agent.models.scripted import ScriptedModel
from agent.session.session import Session
from app.app import LoopdeckApp
from app.cli import build_parser
from app.tui import make_openers
from tests.support.pilot import wait_for

SIZE = (120, 36)
WAIT = 10.0  # seconds: these apps open, list and resume sessions from disk


async def wait_until(pilot: Pilot[Any], check: Callable[[], bool], what: str) -> None:
    """:func:`tests.support.pilot.wait_for`, with the longer :data:`WAIT`."""
    await wait_for(pilot, check, what, timeout=WAIT)


def script_model(folder: Path, name: str, text: str) -> str:
    """A model that answers ``text`` once: its script is written into ``folder``."""
    script = folder / f"{name}.json"
    script.write_text(json.dumps({"turns": [{"text": text}]}), encoding="utf-8")
    return f"scripted:{script}"


async def held_session(store: SessionStore, cwd: Path, prompt: str) -> Session:
    """A session with one exchange, left open: another writer holds it."""
    model = ScriptedModel.from_spec(script_model(cwd, "other", "ok"))
    session = await Session.create(model=model, cwd=cwd, store=store)
    await session.send_and_wait(prompt)
    return session


def app_for(argv: list[str], cwd: Path, store: SessionStore) -> LoopdeckApp:
    """The app as ``loopdeck argv`` in ``cwd`` opens it, on ``store``."""
    args = build_parser().parse_args(argv)
    opener, resumer = make_openers(args, cwd)
    return LoopdeckApp(opener, resumer=resumer, store=store)
