"""``loopdeck -p``: run one prompt without a human, print the result, exit.

Text mode prints the final answer (in autopilot, the task_complete summary) on
stdout and a line per tool call on stderr; json mode prints every event, one
JSON object a line, ending with ``session.idle``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import TextIO

from agent.events import Event, SessionErrorData, SessionWarningData, ToolExecutionCompleteData
from agent.loop import LoopOutcome
from agent.session import Session
from agent.transcript import Transcript
from app.cli import EXIT_ABORTED, EXIT_AUTOPILOT_CAP, EXIT_ERROR, EXIT_OK, EXIT_USAGE
from app.model_setup import SetupError, open_session, pick_model

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

    def __call__(self, event: Event) -> None:
        self.transcript.apply(event)
        if self.json:
            if self.out_closed:
                return
            try:
                self.out.write(json.dumps(event.wire(), ensure_ascii=False) + "\n")
                self.out.flush()
            except BrokenPipeError:
                # The reader went away (`| head`): stop printing, let the loop finish.
                self.out_closed = True
                _silence_stdout()
            return
        match event.data:
            case ToolExecutionCompleteData(tool_call_id=call_id, success=ok):
                tool = self.transcript.get_tool(call_id)
                name = tool.name if tool else "tool"
                mark = "✓" if ok else "✗"
                detail = "" if ok or tool is None else f" — {tool.error or ''}"
                self.err.write(
                    f"{mark} {name}{_brief_args(tool.arguments if tool else None)}{detail}\n"
                )
            case SessionErrorData(error_type=kind, message=message):
                self.err.write(f"error ({kind}): {message}\n")
            case SessionWarningData(message=message):
                self.err.write(f"warning: {message}\n")
            case _:
                pass

    def final_text(self, outcome: LoopOutcome) -> str | None:
        if outcome.task_complete and outcome.summary:
            return outcome.summary
        return self.transcript.final_text()


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _brief_args(arguments: object) -> str:
    if not isinstance(arguments, dict) or not arguments:
        return ""
    first_key = next(iter(arguments))
    text = str(arguments[first_key]).replace("\n", " ")
    return f" {first_key}={text[:60]}{'…' if len(text) > 60 else ''}"


def run_headless(args: argparse.Namespace, cwd: Path) -> int:
    return asyncio.run(_run(args, cwd))


async def _run(args: argparse.Namespace, cwd: Path) -> int:
    global session_closed
    loop = asyncio.get_running_loop()
    session: Session | None = None
    interrupts = 0

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            raise SystemExit(EXIT_ABORTED)  # a second Ctrl+C does not wait for cleanup
        sys.stderr.write("\nAborting… (Ctrl+C again to quit at once)\n")
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
        printer = HeadlessPrinter(args.output_format, sys.stdout, sys.stderr)
        session.subscribe(printer, replay=True)  # json shows session.start / resume too
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
        text = printer.final_text(outcome)
        if text:
            sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stderr.write(f"Resume this session with: loopdeck --resume {session.id[:8]}\n")
    return exit_code(outcome)


def exit_code(outcome: LoopOutcome) -> int:
    if outcome.aborted:
        return EXIT_ABORTED
    if outcome.error is not None:
        return EXIT_ERROR
    if outcome.stopped_at_cap:
        return EXIT_AUTOPILOT_CAP
    return EXIT_OK


def show_system_prompt(args: argparse.Namespace, cwd: Path) -> int:
    from agent.prompt import build_system_prompt
    from agent.tools.registry import default_tools

    try:
        picked = pick_model(args.model)
        model = picked[0] if picked else "(no model configured)"
    except SetupError as exc:
        sys.stderr.write(f"loopdeck: {exc}\n")
        return EXIT_USAGE
    mode = "autopilot" if args.autopilot else "interactive"
    tools = default_tools(autopilot=args.autopilot).names()
    sys.stdout.write(build_system_prompt(cwd=cwd, mode=mode, tool_names=tools, model=model) + "\n")
    return EXIT_OK
