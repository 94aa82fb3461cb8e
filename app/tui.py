"""``loopdeck`` with no ``-p``: open the terminal app in the working directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from agent.loop import DEFAULT_MAX_CONTINUES
from agent.session import Session
from agent.store import SessionStore, loopdeck_home

DEMO_PROMPT = "Survey this project: what is here, and where is the open work?"


def run_tui(args: argparse.Namespace, cwd: Path) -> int:
    from app.app import LoopdeckApp, StartupError
    from app.model_setup import SetupError, open_session

    demo = (args.model or "") == "scripted:demo"
    if demo and not args.resume and not args.continue_:
        args.autopilot = True  # the demo's story includes a nudge and task_complete

    async def opener() -> Session:
        try:
            return await open_session(args, cwd)
        except SetupError as exc:
            raise StartupError(str(exc)) from exc

    async def resumer(session_id: str) -> Session:
        resume_args = argparse.Namespace(**{**vars(args), "resume": session_id, "continue_": False})
        resume_args.autopilot = False  # keep the resumed session's own mode
        try:
            return await open_session(resume_args, cwd)
        except SetupError as exc:
            raise StartupError(str(exc)) from exc

    cap = args.max_autopilot_continues
    prompt = " ".join(args.prompt_words) or None
    app = LoopdeckApp(
        opener,
        initial_prompt=prompt,
        prefill=DEMO_PROMPT if demo and prompt is None else None,
        nudge_cap=DEFAULT_MAX_CONTINUES if cap is None else cap,
        resumer=resumer,
        store=SessionStore(loopdeck_home()),
    )
    return app.run() or 0
