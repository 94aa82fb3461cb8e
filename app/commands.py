"""Slash commands: one registry for the prompt's completion menu, ``/help`` and the
command palette (Ctrl+P).

A command gets its host (the app, through :class:`CommandHost`: what a command may
ask of it) and the text after its name. Commands act on the session
through its own methods (each change is an event: ``session.context_cleared``,
``session.title_changed``, ``session.model_change``, ``session.mode_changed``) and
show what they have to say in the timeline, never to the model. An unknown
``/word`` is not sent either: it is named, with the nearest command.
"""

from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent.events.schema import Mode
from widgets.completion import Candidate

if TYPE_CHECKING:
    from textual.app import SystemCommand
    from textual.screen import Screen

    from agent.session.session import Session


class CommandHost(Protocol):
    """What a command may ask of the app it runs in (the app satisfies it)."""

    @property
    def session(self) -> Session | None: ...

    @property
    def working(self) -> bool:
        """Whether the agent is busy with a prompt now."""

    def say(self, text: str) -> None:
        """Show a command's output at the end of the timeline (not sent to the model)."""

    def prefill(self, text: str) -> None: ...

    def refresh_status(self) -> None: ...

    def set_agent_mode(self, mode: Mode) -> None: ...

    def show_plan(self) -> None: ...

    async def switch_model(self, name: str) -> None: ...

    @property
    def can_open_with_model(self) -> bool: ...

    async def open_with_model(self, name: str) -> None: ...

    async def resume_session(self, id_or_prefix: str) -> None: ...

    async def fork_session(self) -> None: ...

    def action_sessions(self) -> None: ...

    def action_runs(self) -> None:
        """Open the board of the machine's runs (loopdeck runs)."""

    async def action_quit(self) -> None: ...

    def run_worker(
        self, work: Coroutine[Any, Any, None], name: str | None = ..., group: str = ...
    ) -> object: ...

    def push_screen(
        self, screen: Screen[str | None], callback: Callable[[str | None], None]
    ) -> object: ...


Handler = Callable[[CommandHost, str], Coroutine[Any, Any, None]]
MODES: tuple[Mode, ...] = ("interactive", "plan", "autopilot")


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    help: str
    handler: Handler
    # "<x>": an argument is needed; "[x]": it may be given.
    args: str = ""

    @property
    def needs_argument(self) -> bool:
        return self.args.startswith("<")

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.args}".rstrip()


# Keys of the prompt and the app, for /help and the README.
KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send (queued while the agent works)"),
    ("Shift+Enter / Ctrl+J", "new line"),
    ("Up / Down", "earlier prompts (in the completion menu: move)"),
    ("/", "commands, completed as you type (Tab/Enter accept, Esc closes)"),
    ("@", "attach a file or folder of the workspace (fuzzy completion, Tab inserts)"),
    ("!command", "run a shell command yourself, without the model"),
    ("Ctrl+T", "expand a collapsed paste ([pasted N lines])"),
    ("Shift+Tab", "switch mode"),
    ("Esc", "stop the running turn; idle: clear the prompt (Up brings it back)"),
    ("Ctrl+O", "sessions"),
    ("Ctrl+R", "runs: every run on this machine"),
    ("Ctrl+P", "command palette"),
    ("Ctrl+C", "stop the running turn; idle: clear the prompt; twice: quit"),
)


# --- output --------------------------------------------------------------------------


def _session(app: CommandHost) -> Session | None:
    if app.session is None:
        app.say("No session is open yet.")
    return app.session


def _idle(app: CommandHost, session: Session, what: str) -> bool:
    if app.working:
        app.say(f"{what} waits until the agent is done (Esc stops it).")
        return False
    return True


# --- handlers ------------------------------------------------------------------------


async def _help(app: CommandHost, _: str) -> None:
    width = max(len(c.usage) for c in REGISTRY)
    lines = ["Commands:"]
    lines += [f"  {c.usage.ljust(width)}  {c.help}" for c in REGISTRY]
    key_width = max(len(k) for k, _ in KEYS)
    lines += ["", "Keys:"]
    lines += [f"  {k.ljust(key_width)}  {what}" for k, what in KEYS]
    app.say("\n".join(lines))


async def _model(app: CommandHost, arg: str) -> None:
    if app.can_open_with_model:
        await _first_model(app, arg)
        return
    session = _session(app)
    if session is None:
        return
    if arg:
        await app.switch_model(arg)
        return
    from widgets.model_picker import ModelPicker

    choices = _model_choices([(session.model.name, "current")], session.model.name)

    def picked(name: str | None) -> None:
        if name:
            app.run_worker(app.switch_model(name), group="command")

    app.push_screen(ModelPicker(session.model.name, choices), picked)


async def _first_model(app: CommandHost, arg: str) -> None:
    """``/model`` when no model was configured: the session starts with the one chosen."""
    if arg:
        await app.open_with_model(arg)
        return
    from agent.models.scripted import SCRIPTED_PREFIX
    from widgets.model_picker import ModelPicker

    choices = _model_choices([], "")
    choices.append((f"{SCRIPTED_PREFIX}demo", "the offline demo, no key needed"))

    def picked(name: str | None) -> None:
        if name:
            app.run_worker(app.open_with_model(name), group="command")

    app.push_screen(ModelPicker("none", choices), picked)


def _model_choices(choices: list[tuple[str, str]], current: str) -> list[tuple[str, str]]:
    """The picker's offers after ``choices``: the configured model, each key's default."""
    from agent.models.select import PROVIDER_DEFAULTS
    from app.model_setup import SetupError, pick_model

    try:
        # What a new session would use: LOOPDECK_MODEL, else config.toml, else a key's.
        configured = pick_model(None)
    except SetupError:
        configured = None  # a broken config file is reported where it is read
    if configured and configured[0] != current:
        choices.append((configured[0], "configured"))
    for keys, model in PROVIDER_DEFAULTS:
        key = next((k for k in keys if os.environ.get(k)), None)
        if key is not None and all(model != name for name, _ in choices):
            choices.append((model, f"{key} is set"))
    return choices


async def _mode(app: CommandHost, arg: str) -> None:
    session = _session(app)
    if session is None:
        return
    if not arg:
        app.say(f"Mode: {session.mode}. Choose one: /mode {' | '.join(MODES)}")
        return
    wanted = arg.strip().lower()
    if wanted not in MODES:
        app.say(f"No mode {arg!r}: choose one of {', '.join(MODES)}.")
        return
    app.set_agent_mode(wanted)


async def _plan(app: CommandHost, _: str) -> None:
    if _session(app) is None:
        return
    app.set_agent_mode("plan")
    app.show_plan()


async def _autopilot(app: CommandHost, _: str) -> None:
    if _session(app) is not None:
        app.set_agent_mode("autopilot")


async def _clear(app: CommandHost, _: str) -> None:
    session = _session(app)
    if session is None or not _idle(app, session, "/clear"):
        return
    session.clear_context()


async def _context(app: CommandHost, _: str) -> None:
    session = _session(app)
    if session is None:
        return
    from agent.loop.context_usage import report

    keeper = session.context
    # The first count may load a tokenizer (litellm): that happens off the UI's loop.
    await keeper.load()
    keeper.refresh()  # the status line's ctx shows this very count
    usage = keeper.last if keeper.last is not None else keeper.measure()
    totals = session.usage.totals()
    app.say(
        report(
            session.model.name,
            usage,
            keeper.limits,
            keeper.settings,
            checkpoints=session.history.checkpoints,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            cost=totals.cost,
        )
    )


async def _compact(app: CommandHost, arg: str) -> None:
    session = _session(app)
    if session is None or not _idle(app, session, "/compact"):
        return
    focus = arg.strip() or None
    keeper = session.context
    if keeper.compacting and focus and focus != keeper.running_focus:
        app.say(
            "A compaction was already running: it starts over with your focus, so the "
            "summary keeps what you asked for…"
        )
    elif keeper.compacting:
        app.say("A compaction is already running: waiting for it to finish…")
    else:
        app.say("Compacting: the model is summarising the conversation so far…")
    done = await keeper.compact_now(focus)
    if done is None:
        app.say("Nothing to compact yet: the conversation is only the newest exchange.")
    elif not done.success:
        app.say(f"Compaction failed: {done.error}. The conversation is unchanged.")
    else:
        before, after = done.pre_compaction_tokens or 0, done.post_compaction_tokens or 0
        app.say(
            f"Compacted: {done.messages_removed} messages summarised, "
            f"{before:,} → {after:,} tokens (checkpoint {done.checkpoint_number})."
        )
    app.refresh_status()


async def _sessions(app: CommandHost, arg: str) -> None:
    if arg:
        await app.resume_session(arg)
    else:
        app.action_sessions()


async def _runs(app: CommandHost, _: str) -> None:
    app.action_runs()


async def _fork(app: CommandHost, _: str) -> None:
    session = _session(app)
    if session is None or not _idle(app, session, "/fork"):
        return
    await app.fork_session()


async def _rename(app: CommandHost, arg: str) -> None:
    session = _session(app)
    if session is None:
        return
    title = " ".join(arg.split())
    if not title:
        app.say("Usage: /rename <title>")
        return
    session.rename(title)


async def _export(app: CommandHost, arg: str) -> None:
    session = _session(app)
    if session is None or session.store is None:
        app.say("Nothing to export: this session is not recorded.")
        return
    from app.export import export_session, format_for

    await session.persist()
    target = Path(arg).expanduser() if arg else session.cwd / f"loopdeck-{session.id[:8]}.md"
    if not target.is_absolute():
        target = session.cwd / target
    fmt = format_for(target)
    path = session.store.events_path(session.id)
    try:
        text = await asyncio.to_thread(export_session, path, fmt)
        await asyncio.to_thread(target.write_text, text, "utf-8")
    except OSError as exc:
        app.say(f"Not exported: {exc}")
        return
    app.say(f"Exported to {target}")


async def _allow_all(app: CommandHost, _: str) -> None:
    session = _session(app)
    if session is None:
        return
    choice = session.permission_level
    if choice.level == "allow-all":
        app.say("All tools are already allowed in this session.")
        return
    # Recorded like the autopilot question's answer, so replay shows the change.
    choice.answer(choice.ask(), "allow-all")
    app.refresh_status()


async def _add_dir(app: CommandHost, arg: str) -> None:
    session = _session(app)
    if session is None:
        return
    if not arg:
        app.say("Usage: /add-dir <path>")
        return
    folder = (session.cwd / Path(arg).expanduser()).resolve()
    if not folder.is_dir():
        app.say(f"Not a folder: {folder}")
        return
    session.add_dir(folder)
    app.say(f"Tools may now work in {folder} too.")


async def _cwd(app: CommandHost, _: str) -> None:
    session = _session(app)
    if session is None:
        return
    lines = [f"Working directory: {session.cwd}"]
    lines += [f"Also allowed: {d}" for d in session.extra_dirs]
    app.say("\n".join(lines))


async def _instructions(app: CommandHost, _: str) -> None:
    session = _session(app)
    if session is None:
        return
    from agent.loop.system_prompt import instruction_files

    found = await asyncio.to_thread(instruction_files, session.cwd)
    if not found:
        app.say("No instruction files were loaded (AGENTS.md, .github/copilot-instructions.md).")
        return
    app.say("Instruction files in the system prompt:\n" + "\n".join(f"  {p}" for p in found))


async def _mcp(app: CommandHost, arg: str) -> None:
    from app.mcp_command import mcp_command  # the screen's widgets load when first used

    await mcp_command(app, arg)


async def _exit(app: CommandHost, _: str) -> None:
    await app.action_quit()


REGISTRY: tuple[Command, ...] = (
    Command("help", "list commands and keys", _help),
    Command("model", "switch model (a picker, or name one)", _model, "[name]"),
    Command("mode", "show or set the mode", _mode, "[mode]"),
    Command("plan", "plan mode: investigate and write a plan first", _plan),
    Command("autopilot", "autopilot mode: work until the task is done", _autopilot),
    Command("clear", "fresh context for the model; earlier turns stay visible", _clear),
    Command("context", "context window use: system prompt, tools, messages", _context),
    Command("compact", "summarise the conversation now to free the context", _compact, "[focus]"),
    Command("usage", "tokens and cost so far, and context use", _context),
    Command("resume", "resume another session (the browser, or an id)", _sessions, "[id]"),
    Command("sessions", "browse sessions", _sessions),
    Command("runs", "the board of every run on this machine (Ctrl+R)", _runs),
    Command("fork", "continue in a new session with this history", _fork),
    Command("rename", "give this session a title", _rename, "<title>"),
    Command("export", "write this session as Markdown or HTML", _export, "[file]"),
    Command("allow-all", "allow every tool in this session (deny rules still apply)", _allow_all),
    Command("add-dir", "let tools work in another folder too", _add_dir, "<path>"),
    Command("cwd", "show the working directory", _cwd),
    Command("instructions", "which instruction files were loaded", _instructions),
    Command("mcp", "MCP servers: show, list; restart, disable, enable NAME", _mcp, "[command]"),
    Command("exit", "quit loopdeck", _exit),
)
_BY_NAME = {c.name: c for c in REGISTRY}


def find(name: str) -> Command | None:
    return _BY_NAME.get(name.lower())


def nearest(name: str) -> str | None:
    """The command closest to a mistyped ``name``."""
    close = difflib.get_close_matches(name.lower(), list(_BY_NAME), n=1, cutoff=0.4)
    if close:
        return close[0]
    starts = [c for c in _BY_NAME if c.startswith(name.lower()[:2])] if name else []
    return starts[0] if starts else None


def parse(text: str) -> tuple[str, str] | None:
    """``(name, argument)`` of a ``/command`` prompt; None when ``text`` is not one
    (a path like ``/usr/bin`` with more slashes is a message, not a command)."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    head, _, arg = text[1:].partition(" ")
    head = head.strip()
    if not head or "/" in head:
        return None
    return head, arg.strip()


async def run(app: CommandHost, text: str) -> bool:
    """Run ``text`` when it is a command (True), known or not; False: a message."""
    parsed = parse(text)
    if parsed is None:
        return False
    name, arg = parsed
    command = find(name)
    if command is None:
        close = nearest(name)
        hint = f" Did you mean /{close}?" if close else " /help lists the commands."
        app.say(f"Unknown command /{name}: not sent to the model.{hint}")
        return True
    await command.handler(app, arg)
    return True


def candidates(token: str) -> list[Candidate]:
    """The completion menu for ``token`` ("/", "/he"…): prefix matches first, then
    commands that contain it."""
    typed = token[1:].lower()
    first = [c for c in REGISTRY if c.name.startswith(typed)]
    then = [c for c in REGISTRY if typed in c.name and c not in first]
    return [
        Candidate(
            insert=f"/{c.name}" + (" " if c.args else ""),
            label=c.usage,
            help=c.help,
            submit=not c.needs_argument,
        )
        for c in first + then
    ]


def system_commands(app: CommandHost) -> Iterator[SystemCommand]:
    """The palette's entries, one per command."""
    from textual.app import SystemCommand

    for command in REGISTRY:
        yield SystemCommand(f"/{command.name}", command.help, _palette_action(app, command))


def _palette_action(app: CommandHost, command: Command) -> Callable[[], None]:
    def act() -> None:
        if command.needs_argument:
            app.prefill(f"/{command.name} ")  # the argument is typed in the prompt
        else:
            app.run_worker(command.handler(app, ""), group="command")

    return act
