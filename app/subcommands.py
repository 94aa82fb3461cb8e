"""``loopdeck sessions | replay | watch | export | runs``: parsing and dispatch."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from agent.log.store import SessionNotFound
from app.exit_codes import EXIT_USAGE
from app.terminal import need_terminal


def _parser(name: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"loopdeck {name}", description=description)


def run_subcommand(name: str, argv: list[str]) -> int:
    match name:
        case "sessions":
            return _sessions(argv)
        case "replay":
            return _replay(argv)
        case "watch":
            return _watch(argv)
        case "export":
            return _export(argv)
        case "runs":
            return _runs(argv)
    raise AssertionError(name)  # pragma: no cover


def _sessions(argv: list[str]) -> int:
    from app.sessions_table import print_sessions

    parser = _parser("sessions", "List recorded sessions, this directory's first.")
    parser.add_argument("--all", action="store_true", help="not only this directory's")
    parser.add_argument("--cwd", type=Path, help="list the sessions of DIR")
    parser.add_argument("--copilot", action="store_true", help="GitHub Copilot CLI's sessions")
    parser.add_argument("--search", default="", metavar="TEXT", help="only first prompts with TEXT")
    args = parser.parse_args(argv)
    cwd = (args.cwd or Path(os.getcwd())).expanduser().resolve()
    if not cwd.is_dir():
        parser.exit(EXIT_USAGE, f"loopdeck sessions: --cwd {args.cwd}: not a directory\n")
    if not args.copilot:
        _check_home(parser)
    return print_sessions(cwd=cwd, show_all=args.all, copilot=args.copilot, search=args.search)


def _check_home(parser: argparse.ArgumentParser) -> None:
    """Reading needs no write access, but a home that is a file is a mistake to say."""
    from app.home_check import home_error

    problem = home_error(write=False)
    if problem is not None:
        parser.exit(EXIT_USAGE, f"{parser.prog}: {problem}\n")


def _session_path(parser: argparse.ArgumentParser, spec: str) -> Path:
    from app.locate import locate_session

    if not Path(spec).expanduser().exists():  # an id: looked up in the home
        _check_home(parser)
    try:
        return locate_session(spec)
    except SessionNotFound as exc:
        parser.exit(EXIT_USAGE, f"{parser.prog}: {exc}\n")


def _replay(argv: list[str]) -> int:
    from agent.log.replay import parse_speed

    parser = _parser("replay", "Replay a recorded session in the timeline.")
    parser.add_argument("session", metavar="SESSION", help="an id, an id prefix, or a path")
    parser.add_argument(
        "--speed", default="1", help="1, 2, 4, 16 or instant (default 1: as it happened)"
    )
    args = parser.parse_args(argv)
    try:
        speed = parse_speed(args.speed)
    except ValueError as exc:
        parser.exit(EXIT_USAGE, f"loopdeck replay: {exc}\n")
    path = _session_path(parser, args.session)
    if not need_terminal(parser.prog, f"to read it as text: loopdeck export {args.session}"):
        return EXIT_USAGE
    from app.gc_policy import pause_until_up, resume_collection

    pause_until_up()
    try:
        from app.viewer import ReplayScreen, ViewerApp

        return ViewerApp(ReplayScreen(path, speed=speed)).run() or 0
    finally:
        resume_collection()


def _watch(argv: list[str]) -> int:
    parser = _parser("watch", "Follow a session another loopdeck process is writing.")
    parser.add_argument("session", metavar="SESSION", help="an id, an id prefix, or a path")
    args = parser.parse_args(argv)
    path = _session_path(parser, args.session)
    if not need_terminal(parser.prog, "run it in a terminal window"):
        return EXIT_USAGE
    from app.viewer import ViewerApp, WatchScreen

    return ViewerApp(WatchScreen(path)).run() or 0


def _export(argv: list[str]) -> int:
    from app.export import export_session, format_for

    parser = _parser("export", "Write a session as a readable Markdown or HTML transcript.")
    parser.add_argument("session", metavar="SESSION", help="an id, an id prefix, or a path")
    parser.add_argument(
        "--format",
        choices=("md", "html"),
        help="md or html (default: html for an -o file ending in .html or .htm, else md)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write to FILE (default: stdout)")
    args = parser.parse_args(argv)
    path = _session_path(parser, args.session)
    fmt = args.format or format_for(args.output)
    text = export_session(path, fmt)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        sys.stderr.write(f"{parser.prog}: cannot write {args.output}: {exc.strerror or exc}\n")
        return 1
    sys.stderr.write(f"wrote {args.output}\n")
    return 0


def _runs(argv: list[str]) -> int:
    from app.runs_notify import NOTIFY_CHOICES, notify_mode

    parser = _parser(
        "runs", "A live board of the runs on this machine (loopdeck's and Copilot CLI's)."
    )
    parser.add_argument(
        "--since",
        type=float,
        default=24.0,
        metavar="HOURS",
        help="show runs that ended up to HOURS ago (default 24); live ones always show",
    )
    parser.add_argument("--no-copilot", action="store_true", help="leave Copilot CLI's runs out")
    parser.add_argument(
        "--notify",
        choices=NOTIFY_CHOICES,
        default=None,
        help="when a run starts waiting for approval or ends: the bell and a desktop "
        "notification where the terminal shows one (auto, the default; config.toml "
        "[runs] notify), only one of them, or nothing",
    )
    args = parser.parse_args(argv)
    if args.since < 0:
        parser.exit(EXIT_USAGE, "loopdeck runs: --since must be 0 hours or more\n")
    _check_home(parser)
    if not need_terminal(parser.prog, "for the runs as text: loopdeck sessions --all"):
        return EXIT_USAGE
    from app.runs import run_board

    return run_board(
        recent=args.since * 3600, copilot=not args.no_copilot, notify=notify_mode(args.notify)
    )
