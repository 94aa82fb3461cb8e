"""``loopdeck -p``: run one prompt without a human, print the result, exit.

Text mode prints the final answer (in autopilot, the task_complete summary) on
stdout and a line per tool call on stderr; json mode prints every event, one
JSON object a line, ending with ``session.idle``.

When the session log cannot be written (a full disk), both modes say so on stderr
(the storage error, with the file and the system's error); in json the events that
could not be saved carry ``"unsaved": true``, in text an answer that could not be
saved is named on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TextIO

from agent.events import todos
from agent.events.schema import (
    AssistantMessageData,
    Event,
    SessionErrorData,
    SessionTaskCompleteData,
    SessionWarningData,
    ToolExecutionCompleteData,
)
from agent.loop.turn_loop import LoopOutcome
from agent.session.session import Session
from agent.transcript.fold import Transcript
from app.exit_codes import EXIT_ABORTED, EXIT_AUTOPILOT_CAP, EXIT_ERROR, EXIT_OK, EXIT_USAGE
from app.model_setup import SetupError, open_session, pick_model, start_mode
from app.terminal import silence_stdout

# Set once a run's session is closed: nothing of it is left to write, so the
# command may leave without the interpreter's slow teardown (app.cli.entry).
session_closed = False


class HeadlessPrinter:
    """Subscribes to a session; renders from the transcript (text) or raw events (json)."""

    def __init__(self, output_format: str, out: TextIO, err: TextIO) -> None:
        self.transcript = Transcript()
        self.json = output_format == "json"
        self.out = out
        self.err = err
        self.out_closed = False
        # Whether the latest answer (a reply without tools, a task_complete summary)
        # could not be saved in the log: what text mode prints may be unrecorded.
        self.answer_unsaved = False

    def __call__(self, event: Event) -> None:
        self.transcript.apply(event)
        match event.data:
            case SessionTaskCompleteData():
                self.answer_unsaved = event.unsaved
            case AssistantMessageData(tool_requests=None) if event.agent_id is None:
                self.answer_unsaved = event.unsaved  # a sub-agent's answer is not the answer
            case SessionErrorData(error_type="storage", message=message):
                # Said on stderr in every format: stdout may go to a file or a pipe.
                self.err.write(f"error (storage): {message}\n{UNSAVED_NOTE[self.json]}\n")
                self.err.flush()
            case _:
                pass
        if self.json:
            if self.out_closed:
                return
            try:
                self.out.write(json.dumps(event.wire(), ensure_ascii=False) + "\n")
                self.out.flush()
            except BrokenPipeError:
                # The reader went away (`| head`): stop printing, let the loop finish.
                self.out_closed = True
                silence_stdout(self.out)
            return
        match event.data:
            case ToolExecutionCompleteData(tool_call_id=call_id, success=ok):
                tool = self.transcript.get_tool(call_id)
                if tool is None:
                    return  # a call of an earlier run, closed as interrupted on resume
                mark = "✓" if ok else "✗"
                detail = "" if ok else f" — {tool.error or ''}"
                brief = _brief_args(tool.name, tool.arguments)
                self.err.write(f"{mark} {tool.name}{brief}{detail}\n")
            case SessionErrorData(error_type=kind, message=message) if (
                kind != "storage" and event.agent_id is None
            ):
                # A sub-agent's error is its task call's failure, printed with the call.
                self.err.write(f"error ({kind}): {message}\n")
            case SessionWarningData(message=message):
                self.err.write(f"warning: {message}\n")
            case _:
                pass

    def final_text(self, outcome: LoopOutcome) -> str | None:
        if outcome.task_complete and outcome.summary:
            return outcome.summary
        return self.transcript.final_text()


UNSAVED_NOTE = {
    False: "The session stopped: what came after the failed write is not in its log.",
    True: (
        "The session stopped: what came after the failed write is not in its log "
        '(on stdout, those events carry "unsaved": true).'
    ),
}


def this_run(backlog: list[Event], restored: int = 0) -> list[Event]:
    """The backlog without the log a resumed session was rebuilt from: what this run
    did (repairs, interrupted calls closed, the resume itself, and what follows).
    ``restored``: how many of its events came from the log (Session.restored)."""
    return backlog[restored:]


def _brief_args(name: str, arguments: object) -> str:
    if not isinstance(arguments, dict) or not arguments:
        return ""
    items = todos.parse_todos(arguments) if name == todos.TOOL_NAME else None
    if items is not None:
        return f" {todos.summary(items)}"  # not the list's JSON
    first_key = next(iter(arguments))
    text = str(arguments[first_key]).replace("\n", " ")
    return f" {first_key}={text[:60]}{'…' if len(text) > 60 else ''}"


def run_headless(args: argparse.Namespace, cwd: Path) -> int:
    out = sys.stdout
    # stdout carries only what -p prints (the answer, or the events as JSON lines):
    # anything else printed meanwhile (a library's banner) goes to stderr instead.
    with contextlib.redirect_stdout(sys.stderr):
        return asyncio.run(_run(args, cwd, out))


async def _run(args: argparse.Namespace, cwd: Path, out: TextIO) -> int:
    global session_closed
    loop = asyncio.get_running_loop()
    session: Session | None = None
    interrupts = 0
    interrupted = asyncio.Event()

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            raise SystemExit(EXIT_ABORTED)  # a second Ctrl+C does not wait for cleanup
        sys.stderr.write("\nAborting… (Ctrl+C again to quit at once)\n")
        interrupted.set()
        if session is not None:
            session.abort()

    # Installed before anything can print, so Ctrl+C always means "abort, then idle".
    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        try:
            session = await open_session(args, cwd)
        except SetupError as exc:
            sys.stderr.write(f"loopdeck: {exc}\n")
            return EXIT_USAGE
        printer = HeadlessPrinter(args.output_format, out, sys.stderr)
        # json shows session.start / session.resume too, but never an earlier run again.
        for event in this_run(session.backlog, session.restored):
            printer(event)
        session.subscribe(printer)
        if session.mcp is not None:
            # One prompt has no later call to offer a late server's tools to: it waits
            # for every server to connect or fail (each within its own budget).
            await _first(session.mcp.settled(), interrupted.wait())
        future = session.send(args.prompt)
        if interrupts:
            session.abort()
        outcome = await future
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        if session is not None:
            await session.close()
            session_closed = True
    if not printer.json:
        plan = printer.transcript.plan
        if plan is not None:
            # Plan mode: the plan is the answer (nobody could approve it:
            # see agent.session.plan_mode).
            out.write(plan.plan.rstrip("\n") + "\n\n")
            where = session.plan.path
            sys.stderr.write(f"The plan is kept{f' in {where}' if where else ''}.\n")
        text = printer.final_text(outcome)
        if text:
            out.write(text.rstrip("\n") + "\n")
            if printer.answer_unsaved:
                sys.stderr.write("The answer above is not saved in the session log.\n")
    if outcome.stopped_at_cap:
        sys.stderr.write(cap_explanation(session) + "\n")
    if session.store is None or session.store.events_path(session.id).is_file():
        # (a start that failed before any provider answered is not kept: see Session.close)
        sys.stderr.write(f"Resume this session with: loopdeck --resume {session.id[:8]}\n")
    return exit_code(outcome)


async def _first(*waits: Coroutine[Any, Any, Any]) -> None:
    """Until the first of ``waits`` is done; the others are cancelled."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def cap_explanation(session: Session) -> str:
    """Exit 3 says what happened and how to go on."""
    cap = session.max_autopilot_continues
    return (
        f"Autopilot stopped at its cap of {cap} nudge{'' if cap == 1 else 's'} without the "
        "task marked complete (exit 3).\n"
        f'To go on: loopdeck -p "…" --resume {session.id[:8]} --autopilot '
        f"--max-autopilot-continues N (the cap counts per prompt; a larger N allows more)"
    )


def exit_code(outcome: LoopOutcome) -> int:
    if outcome.aborted:
        return EXIT_ABORTED
    if outcome.error is not None:
        return EXIT_ERROR
    if outcome.stopped_at_cap:
        return EXIT_AUTOPILOT_CAP
    return EXIT_OK


def show_system_prompt(args: argparse.Namespace, cwd: Path) -> int:
    from agent.loop.system_prompt import build_system_prompt
    from agent.tools.registry import default_tools

    try:
        picked = pick_model(args.model)
        model = picked[0] if picked else "(no model configured)"
    except SetupError as exc:
        sys.stderr.write(f"loopdeck: {exc}\n")
        return EXIT_USAGE
    from app.sandbox_setup import SandboxSetupError, sandbox_setup

    mode = start_mode(args)
    tools = default_tools(autopilot=mode == "autopilot").names()
    if mode == "plan":
        from agent.session.plan_mode import EXIT_TOOL, read_only

        # What a plan-mode session offers: the read tools and exit_plan_mode.
        tools = [t.name for t in read_only(default_tools(autopilot=False))] + [EXIT_TOOL]
    try:
        sandbox, _ = sandbox_setup(args)
    except SandboxSetupError as exc:
        sys.stderr.write(f"loopdeck: {exc}\n")
        return EXIT_USAGE
    sandbox.cwd = cwd
    section = sandbox.prompt_section(mode)
    prompt = build_system_prompt(cwd=cwd, mode=mode, tool_names=tools, model=model, sandbox=section)
    sys.stdout.write(prompt + "\n")
    return EXIT_OK
