"""The ``loopdeck`` command: argument parsing and dispatch, nothing else.

Imports stay light here: the TUI's first frame and ``-p`` must not wait for
litellm, which is imported only when a real model is called.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agent import __version__
from app.exit_codes import EXIT_OK, EXIT_USAGE
from app.terminal import need_terminal, silence_stdout

SUBCOMMANDS = ("sessions", "replay", "watch", "export", "runs")

_DESCRIPTION = """\
A terminal coding agent you can watch.

  loopdeck                         open the terminal app in this directory
  loopdeck -p "PROMPT"             run headless and print the answer
  loopdeck sessions                list recorded sessions (--copilot: Copilot CLI's)
  loopdeck replay SESSION          replay a session at the pace it happened
  loopdeck watch SESSION           follow a session another terminal is running
  loopdeck runs                    a live board of every run on this machine
  loopdeck export SESSION          write a session as Markdown or HTML
  loopdeck --headless --stdio      be the runtime a Copilot SDK app drives (JSON-RPC)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopdeck",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt_words", nargs="*", metavar="PROMPT", help="start with this prompt")
    parser.add_argument("-p", "--prompt", help="run headless with this prompt, then exit")
    parser.add_argument("--model", help="litellm model string, or scripted:<file.json|name>")
    parser.add_argument("--autopilot", action="store_true", help="work until task_complete")
    parser.add_argument(
        "--mode",
        choices=("interactive", "plan", "autopilot"),
        help="start in this mode: plan reads and proposes a plan first (--autopilot is "
        "--mode autopilot)",
    )
    parser.add_argument(
        "--max-autopilot-continues",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="autopilot nudges before giving up (default 5)",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json"),
        default="text",
        help="with -p: the final answer (text) or every event as JSON lines (json)",
    )
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="resume a session by id, id prefix or path (default: the latest here); a "
        "Copilot CLI session, or any log outside loopdeck's store, is forked into a new one",
    )
    resume.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="resume the most recent session in this directory",
    )
    parser.add_argument("--cwd", type=Path, help="work in DIR instead of the current directory")
    perms = parser.add_argument_group("permissions")
    perms.add_argument(
        "--allow-tool",
        action="append",
        default=[],
        metavar="RULE",
        help="allow without asking: 'shell', 'shell(git:*)', 'write', a tool name, an MCP "
        "server 'server' or one of its tools 'server(tool)'",
    )
    perms.add_argument(
        "--deny-tool",
        action="append",
        default=[],
        metavar="RULE",
        help="always refuse, e.g. 'shell(rm)'; deny wins over every allow",
    )
    perms.add_argument(
        "--allow-all-tools", action="store_true", help="never ask (deny rules apply)"
    )
    perms.add_argument(
        "--yolo",
        action="store_true",
        help="--allow-all-tools, paths outside the workspace, and --sandbox off",
    )
    perms.add_argument(
        "--add-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="let file tools reach DIR too",
    )
    parser.add_argument(
        "--show-system-prompt", action="store_true", help="print the system prompt and exit"
    )
    parser.add_argument("--version", action="version", version=f"loopdeck {__version__}")
    _add_sandbox_flags(parser)
    _add_mcp_flags(parser)
    _add_connection_flags(parser)
    _add_runtime_flags(parser)
    return parser


def _add_sandbox_flags(parser: argparse.ArgumentParser) -> None:
    """The OS sandbox around shell commands (config.toml: sandbox, sandbox_network)."""
    group = parser.add_argument_group("sandbox")
    group.add_argument(
        "--sandbox",
        choices=("read-only", "workspace-write", "off"),
        default=None,
        help="what shell commands may write: nothing, the workspace and --add-dir "
        "directories (default), or anything (off; also what --yolo means)",
    )
    group.add_argument(
        "--sandbox-network",
        choices=("on", "off"),
        default=None,
        help="let sandboxed commands open TCP connections (default: on in interactive "
        "mode, off in autopilot)",
    )
    group.add_argument(
        "--sandbox-hide",
        action="append",
        metavar="PATH",
        default=None,
        help="a path no command or tool may read, besides the default list (~/.ssh, "
        "~/.aws, ~/.config/gh, ~/.netrc, ~/.docker/config.json, loopdeck's and Copilot's "
        "folders) or config.toml's sandbox_hidden; repeatable",
    )


def _add_mcp_flags(parser: argparse.ArgumentParser) -> None:
    """MCP servers, configured as in Copilot CLI (~/.copilot/mcp-config.json)."""
    group = parser.add_argument_group("MCP servers")
    group.add_argument(
        "--additional-mcp-config",
        action="append",
        default=[],
        metavar="JSON",
        help='more servers for this session: {"mcpServers": {...}} as JSON, or @FILE '
        "(repeatable; wins over the config files)",
    )
    group.add_argument(
        "--disable-mcp-server",
        action="append",
        default=[],
        metavar="NAME",
        help="do not start this configured MCP server (repeatable)",
    )


def _add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """Where the model server is and how long to wait for it (config.toml: api_base,
    connect_timeout, idle_timeout; max_retries and retry_base_delay only there)."""
    group = parser.add_argument_group("model server")
    group.add_argument(
        "--api-base",
        type=_api_base,
        metavar="URL",
        help="the model server's URL, e.g. http://127.0.0.1:8080/v1 for a local server",
    )
    group.add_argument(
        "--connect-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up connecting to the model server after this long (default 10)",
    )
    group.add_argument(
        "--idle-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up when the model server sends nothing for this long, before or "
        "during a reply (default 60)",
    )
    group.add_argument(
        "--context-window",
        type=_tokens,
        metavar="TOKENS",
        help="the model's context window, for a model litellm does not know (config "
        "context_window; default: litellm's model map, else 128000)",
    )
    group.add_argument(
        "--max-output-tokens",
        type=_reply_tokens,
        metavar="TOKENS",
        help="room kept in the context window for each reply, and asked of the model "
        "(config max_output_tokens; default: the model's output limit from litellm's "
        "map, else 4096 of a window given with --context-window)",
    )
    group.add_argument(
        "--background-compaction",
        choices=("auto", "on", "off"),
        help="summarise the conversation while the turn goes on (on), or make the turn "
        "wait for the summary (off: for a server that serves one request at a time); "
        "config background_compaction; default auto: off with --api-base, else on",
    )
    group.add_argument(
        "--text-tool-calls",
        choices=("auto", "on", "off"),
        help="run a tool call the model writes in its reply's text (<tool_call> tags, a "
        "JSON block) when the server returns none; config text_tool_calls; default "
        "auto: on with --api-base, else off",
    )
    group.add_argument(
        "--system-prompt",
        choices=("auto", "compact", "full"),
        help="the system prompt: compact (a short one for small models and windows) or "
        "full; config system_prompt; default auto: compact for a context window of "
        "8192 tokens or less",
    )


def _api_base(text: str) -> str:
    from agent.models.settings import ApiBaseError, check_api_base

    try:
        return check_api_base(text)
    except ApiBaseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _token_count(text: str) -> int:
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of tokens: {text!r}") from None


def _reply_tokens(text: str) -> int:
    value = _token_count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} tokens leaves no room for a reply")
    return value


def _tokens(text: str) -> int:
    value = _token_count(text)
    if value < 1_000:
        raise argparse.ArgumentTypeError(f"{value} tokens is too small a context window")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def _add_runtime_flags(parser: argparse.ArgumentParser) -> None:
    """``--headless``: serve the Copilot SDK's JSON-RPC protocol instead of a UI."""
    runtime = parser.add_argument_group(
        "SDK runtime",
        "Serve JSON-RPC to an app written with the Copilot SDK (github-copilot-sdk).\n"
        "--model and the permission flags above set every session's defaults.",
    )
    runtime.add_argument("--headless", action="store_true", help="run as an SDK runtime")
    transport = runtime.add_mutually_exclusive_group()
    transport.add_argument(
        "--stdio", action="store_true", help="with --headless: speak on stdin/stdout"
    )
    transport.add_argument(
        "--port",
        type=_port,
        metavar="N",
        help="with --headless: listen on 127.0.0.1:N (0 or none: any free port)",
    )
    runtime.add_argument(
        "--log-level",
        choices=("none", "error", "warning", "info", "debug", "all"),
        default="info",
        help="how much the runtime logs (to $LOOPDECK_HOME/logs)",
    )
    # Passed by the SDK when it starts a runtime; nothing in loopdeck they apply to.
    for flag in ("--no-auto-update", "--no-auto-login", "--remote", "--embedded-host"):
        runtime.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    for flag in ("--auth-token-env", "--session-idle-timeout", "--cli-login-sync-integration-id"):
        runtime.add_argument(flag, metavar="VALUE", help=argparse.SUPPRESS)


# Copilot CLI flags a headless loopdeck accepts and ignores: what they configure
# (its sign-in, its UI, its log folder, URL rules of its web tool) loopdeck lacks.
COPILOT_ONLY = frozenset(
    {
        "--allow-all-paths",
        "--allow-all-urls",
        "--allow-url",
        "--deny-url",
        "--banner",
        "--no-color",
        "--screen-reader",
        "--config-dir",
        "--log-dir",
        "--no-custom-instructions",
        "--secret-env-vars",
    }
)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be 0..65535")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _main(args_list)
        sys.stdout.flush()  # inside the try: a reader gone early (`| head`) is caught here
    except BrokenPipeError:
        silence_stdout()
        return EXIT_OK
    return code


def _main(args_list: list[str]) -> int:
    if args_list[:1] and args_list[0] in SUBCOMMANDS:
        from app.subcommands import run_subcommand

        return run_subcommand(args_list[0], args_list[1:])
    parser = build_parser()
    if args_list[:1] and not args_list[0].startswith("-"):
        # Before parsing: `loopdeck sesions --all` must not fail on --all instead.
        _refuse_near_miss(parser, args_list[0])
    if "--headless" in args_list:
        # Copilot's own flags that an SDK app may pass and loopdeck has nothing for are
        # accepted (and logged); anything else is refused, as Copilot refuses it.
        args, ignored = parser.parse_known_args(args_list)
        refused = [a for a in ignored if a.startswith("-") and a.split("=")[0] not in COPILOT_ONLY]
        if refused:
            parser.error(f"unrecognized arguments: {' '.join(refused)}")
        args.ignored_flags = ignored
    else:
        args = parser.parse_args(args_list)
    cwd = _workspace(args.cwd)
    if cwd is None:
        parser.exit(EXIT_USAGE, f"loopdeck: --cwd {args.cwd}: not a directory\n")
    if args.prompt is not None and args.prompt_words:
        parser.exit(EXIT_USAGE, "loopdeck: give the prompt either with -p or as words, not both\n")
    if args.autopilot and args.mode not in (None, "autopilot"):
        parser.exit(EXIT_USAGE, f"loopdeck: --autopilot and --mode {args.mode} disagree\n")
    if not args.headless:
        _check_prompt_words(parser, args.prompt_words, explicit="--" in args_list)
        _check_rules(parser, args, cwd)

    if args.headless:
        from app.server.main import run_server

        _check_home(parser)
        return run_server(args, cwd)
    if args.stdio or args.port is not None:
        parser.exit(EXIT_USAGE, "loopdeck: --stdio and --port go with --headless\n")
    if args.show_system_prompt:
        from app.headless import show_system_prompt

        return show_system_prompt(args, cwd)
    if args.prompt is not None:
        if not args.prompt.strip():
            parser.exit(EXIT_USAGE, "loopdeck: -p needs a non-empty prompt\n")
        from app.headless import run_headless

        _check_home(parser)
        return run_headless(args, cwd)
    _check_home(parser)
    if not need_terminal("loopdeck", 'for one answer without the app: loopdeck -p "…"'):
        return EXIT_USAGE
    from app.mcp_setup import ask_workspace_trust
    from app.tui import run_tui

    ask_workspace_trust(cwd)  # the workspace's MCP servers: asked once per folder
    return run_tui(args, cwd)


def near_subcommand(word: str) -> str | None:
    """The subcommand ``word`` looks like a slip of (``sesions``, ``Replay``, ``exp``)."""
    if " " in word.strip():
        return None  # a quoted prompt
    lowered = word.lower()
    prefixed = [name for name in SUBCOMMANDS if len(lowered) >= 3 and name.startswith(lowered)]
    if prefixed:
        return prefixed[0]
    import difflib  # here: every other command would pay for its import

    close = difflib.get_close_matches(lowered, SUBCOMMANDS, n=1, cutoff=0.75)
    return close[0] if close else None


def _refuse_near_miss(parser: argparse.ArgumentParser, word: str) -> None:
    near = near_subcommand(word)
    if near is not None:
        parser.exit(
            EXIT_USAGE,
            f"loopdeck: {word!r} is not a command; did you mean `loopdeck {near}`? "
            f"(to send it to the model as a prompt: loopdeck -- {word})\n",
        )


def _check_prompt_words(
    parser: argparse.ArgumentParser, words: list[str], *, explicit: bool
) -> None:
    """The app's PROMPT is one argument: unquoted words could start with a command."""
    if not words or explicit:
        return  # after `--` every word is the prompt
    _refuse_near_miss(parser, words[0])
    if len(words) > 1:
        joined = " ".join(words)
        parser.exit(
            EXIT_USAGE,
            f'loopdeck: quote the prompt: loopdeck "{joined}" (or run it headless: '
            f'loopdeck -p "{joined}")\n',
        )


def _check_rules(parser: argparse.ArgumentParser, args: argparse.Namespace, cwd: Path) -> None:
    """Unknown rule kinds are a usage error before anything opens (the app included)."""
    allow, deny = args.allow_tool, args.deny_tool
    if not allow and not deny:
        return
    from agent.permissions.rules import PermissionPolicy, RuleError
    from agent.tools.registry import rule_tool_names
    from app.mcp_setup import mcp_config

    servers = mcp_config(args, cwd).configured  # rules may name an MCP server
    try:
        PermissionPolicy.from_flags(allow, deny, tools=rule_tool_names(), servers=servers)
    except RuleError as exc:
        parser.exit(EXIT_USAGE, f"loopdeck: {exc}\n")


def _check_home(parser: argparse.ArgumentParser) -> None:
    from app.home_check import home_error

    problem = home_error(write=True)
    if problem is not None:
        parser.exit(EXIT_USAGE, f"loopdeck: {problem}\n")


def _workspace(cwd: Path | None) -> Path | None:
    path = (cwd or Path(os.getcwd())).expanduser()
    return path.resolve() if path.is_dir() else None


def entry() -> None:
    """The ``loopdeck`` command: :func:`main`, then, after a ``-p`` run, exit at once.

    A ``-p`` run has closed its session (log flushed and synced) when it returns;
    all that is left is the interpreter tearing down litellm's large module graph,
    which takes seconds on a small machine and would hold the exit of a run that
    has already ended (after a timeout, an abort). Only that teardown is skipped.
    """
    code = main()
    headless = sys.modules.get("app.headless")
    if headless is None or not getattr(headless, "session_closed", False):
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
