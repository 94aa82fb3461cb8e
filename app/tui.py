"""``loopdeck`` with no ``-p``: open the terminal app in the working directory."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.store import SessionStore, loopdeck_home

if TYPE_CHECKING:
    from agent.models.base import ModelClient
    from agent.session import Session

DEMO_PROMPT = "Survey this project: what is here, and where is the open work?"


def run_tui(args: argparse.Namespace, cwd: Path) -> int:
    from app.app import LoopdeckApp

    demo = (args.model or "") == "scripted:demo"
    if demo and not args.resume and not args.continue_ and not args.mode and not args.autopilot:
        # The demo's story: a plan to approve, then (in autopilot) a nudge and task_complete.
        args.mode = "plan"

    opener, resumer = make_openers(args, cwd)
    prompt = " ".join(args.prompt_words) or None
    store = SessionStore(loopdeck_home())
    app = LoopdeckApp(
        opener,
        initial_prompt=prompt,
        prefill=DEMO_PROMPT if demo and prompt is None else None,
        nudge_cap=args.max_autopilot_continues,  # None: the session's own, once open
        resumer=resumer,
        store=store,
        model_factory=lambda name: _switch_model(args, name),
    )
    code = app.run() or 0
    # The terminal is restored by now: this line stays on screen after the app.
    hint = resume_hint(app.session, store)
    if hint:
        sys.stderr.write(hint + "\n")
    return code


def _switch_model(args: argparse.Namespace, name: str) -> ModelClient:
    """The client ``/model`` switches to: the flags' timeouts and retries apply."""
    from agent.models.scripted import SCRIPTED_PREFIX
    from app.model_setup import make_model, provider_settings

    settings = None if name.startswith(SCRIPTED_PREFIX) else provider_settings(args)
    return make_model(name, args.api_base, settings)


def make_openers(
    args: argparse.Namespace, cwd: Path
) -> tuple[Callable[[], Awaitable[Session]], Callable[[str], Awaitable[Session]]]:
    """How the app opens the session the flags describe, and resumes another by id
    (from the session browser). Both raise StartupError with the reason."""
    from app.app import StartupError

    async def opener() -> Session:
        # The model, the loop and its tools load here, after the first frame.
        from app.model_setup import SetupError, open_session

        try:
            return await open_session(args, cwd)
        except SetupError as exc:
            raise StartupError(str(exc)) from exc

    async def resumer(session_id: str) -> Session:
        from app.model_setup import SetupError, open_session

        resume_args = argparse.Namespace(**{**vars(args), "resume": session_id, "continue_": False})
        # Like --resume without --autopilot: it opens interactive (Shift+Tab switches).
        resume_args.autopilot = False
        resume_args.mode = None
        try:
            return await open_session(resume_args, cwd)
        except SetupError as exc:
            raise StartupError(str(exc)) from exc

    return opener, resumer


def resume_hint(session: Session | None, store: SessionStore) -> str | None:
    """How to come back, for a session that was kept (one left without a word is not)."""
    if session is None or not store.events_path(session.id).is_file():
        return None
    return f"Resume this session with: loopdeck --resume {session.id[:8]}"
