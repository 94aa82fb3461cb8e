"""``loopdeck`` with no ``-p``: open the terminal app in the working directory."""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from agent.log.places import loopdeck_home
from agent.log.store import SessionStore

if TYPE_CHECKING:
    from agent.models.base import ModelClient
    from agent.session.session import Session
    from agent.session.tail_resume import TailPreview

DEMO_PROMPT = "Survey this project: what is here, and where is the open work?"


def run_tui(args: argparse.Namespace, cwd: Path) -> int:
    from app.gc_policy import pause_until_up, resume_collection

    pause_until_up()
    try:
        return _run_tui(args, cwd)
    finally:
        resume_collection()


def _run_tui(args: argparse.Namespace, cwd: Path) -> int:
    prompt = " ".join(args.prompt_words) or None
    prefill = demo_story(args, prompt)
    opener, resumer = make_openers(args, cwd)
    tail = start_tail(args, cwd)
    from app.app import LoopdeckApp  # after: the tail is read while the app loads

    store = SessionStore(loopdeck_home())
    app = LoopdeckApp(
        opener,
        initial_prompt=prompt,
        prefill=prefill,
        nudge_cap=args.max_autopilot_continues,  # None: the session's own, once open
        resumer=resumer,
        store=store,
        model_factory=lambda name: _switch_model(args, name),
        tail=tail,
        model_opener=lambda name: opener_with_model(args, cwd, name),
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


def demo_story(args: argparse.Namespace, prompt: str | None) -> str | None:
    """A new ``scripted:demo`` session tells the demo's story: it starts in plan mode
    (a plan to approve, then in autopilot a nudge and task_complete) with its question
    in the prompt, ready to send. Returns that question, or None. A resumed demo goes
    on where it was."""
    if (args.model or "") != "scripted:demo" or args.resume is not None or args.continue_:
        return None
    if not args.mode and not args.autopilot:
        args.mode = "plan"
    return DEMO_PROMPT if prompt is None else None


def make_openers(
    args: argparse.Namespace, cwd: Path
) -> tuple[Callable[[], Awaitable[Session]], Callable[[str], Awaitable[Session]]]:
    """How the app opens the session the flags describe, and resumes another by id
    (from the session browser). Both raise StartupError with the reason."""
    from app.session_switch import StartupError

    async def opener() -> Session:
        # The model, the loop and its tools load here, after the first frame, in a
        # thread: a timeline drawn meanwhile (a resumed tail) stays live.
        await asyncio.to_thread(import_module, "app.model_setup")
        from app.model_setup import SetupError, open_session

        try:
            return await open_session(args, cwd)
        except SetupError as exc:
            raise StartupError(in_app(str(exc))) from exc

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


async def opener_with_model(args: argparse.Namespace, cwd: Path, name: str) -> Session:
    """The session the flags describe, with the model picked in the app (``/model``
    when none was configured)."""
    from app.model_setup import SetupError, open_session
    from app.session_switch import StartupError

    try:
        return await open_session(args, cwd, model_string=name)
    except SetupError as exc:
        raise StartupError(str(exc)) from exc


def in_app(problem: str) -> str:
    """A start-up problem as the app says it: a missing model can be chosen right here."""
    from agent.models.select import NO_MODEL_HELP

    if problem != NO_MODEL_HELP.strip() and problem != NO_MODEL_HELP:
        return problem
    return NO_MODEL_HELP.replace(
        "No model is configured yet.\n",
        "No model is configured yet. Type /model to choose one now, or set one for next time.\n",
        1,
    ).replace("  loopdeck --model scripted:demo\n", "  /model scripted:demo\n")


def start_tail(args: argparse.Namespace, cwd: Path) -> Future[TailPreview] | None:
    """For --resume and --continue of a session resumed in place: start reading the
    end of its log now, in a thread, while the app's modules load; the app draws it
    while the session opens (None: nothing to draw, a new session or a forked log)."""
    if args.resume is None and not args.continue_:
        return None
    from app.locate import target_of_args

    store = SessionStore(loopdeck_home())
    try:
        target = target_of_args(args, store, cwd)
    except Exception:  # whatever it is, the opener meets it again and says why
        return None
    if target is None or target.session_id is None:
        return None
    path = store.events_path(target.session_id)
    future: Future[TailPreview] = Future()

    def read() -> None:
        try:
            from agent.log.line_heads import start_count

            # A long log's turns before its tail are counted by ripgrep, in its own
            # process, while this thread loads what reads the tail.
            turn_count = start_count(path, "assistant.turn_start")
            from agent.session.tail_resume import read_tail

            preview = read_tail(path, turn_count=turn_count)
            # The tail's replies are drawn with Markdown next: loaded (and its parser
            # built once) here, before the tail is handed over. Loaded after, the
            # app's first paint waited on this import's lock: a 40-70 ms stall.
            from rich.markdown import Markdown

            Markdown("*warm*")
            future.set_result(preview)
        except BaseException as exc:  # handed to the app, which draws no preview
            if not future.done():
                future.set_exception(exc)

    threading.Thread(target=read, name="tail-first", daemon=True).start()
    return future


def resume_hint(session: Session | None, store: SessionStore) -> str | None:
    """How to come back, for a session that was kept (one left without a word is not)."""
    if session is None or not store.events_path(session.id).is_file():
        return None
    return f"Resume this session with: loopdeck --resume {session.id[:8]}"
