"""Permission policy: which tool calls may run, which are refused, which need a human.

Every call has a kind: ``read``, ``write`` or ``shell``. Reads (inside the workspace,
which the tools enforce) are allowed. Writes and shell commands ask, unless a rule
decides: ``--allow-tool 'shell(git:*)'``, ``--allow-tool write``,
``--deny-tool 'shell(rm)'``, ``--allow-all-tools``. A deny rule always wins, even
over ``--allow-all-tools`` and over approvals given during the session.

An MCP server's tool (kind ``mcp``) always asks unless a rule decides. Rules name it
as Copilot's do: ``server`` (all its tools) or ``server(tool)`` (the tool's own name
on the server).

A shell command is parsed (agent.permissions.shell_commands) into every simple command it would
run, wrappers looked through: it is allowed only if every command in it is, and denied
if any one of them is. A deny rule matches a command by its base name (``/bin/rm`` is
``rm``); an allow rule only as written (``./git`` is not ``git``), and through
``sudo`` only if the rule allows the ``sudo`` form. A command whose name is known only
when it runs is never allowed by a name: it asks (so autopilot and ``-p`` deny it)
unless every command is allowed and no deny rule exists. An output redirection to a
file outside the workspace asks unless ``--allow-all-tools``, and a ``write`` deny
rule denies it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from agent.permissions.shell_commands import (
    ELEVATING,
    Redirect,
    SimpleCommand,
    base_name,
    parse_line,
)

Verdict = Literal["allow", "deny", "ask"]
Kind = Literal["read", "write", "shell", "custom-tool", "mcp"]
Match = Literal["yes", "maybe", "no"]

RULE_KINDS = ("shell", "write")  # besides these, a rule may name a tool that asks
_RULE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*(?:\((.*)\))?\s*$")
# Where output may always go: nothing lands in a file.
_HARMLESS_TARGET = re.compile(
    r"^/dev/(null|zero|full|stdout|stderr|tty|fd/\d+)$|^/proc/self/fd/\d+$"
)
_EMPTY = SimpleCommand(("",), "")


class RuleError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Rule:
    """``kind`` is shell, write, read or a tool name; ``argument`` narrows a shell rule."""

    kind: str
    argument: str | None = None

    @classmethod
    def parse(
        cls, text: str, tools: Collection[str] | None = None, servers: Collection[str] = ()
    ) -> Rule:
        """``tools``: the tool names a rule may name; None accepts any name (an
        embedder's own tools are only known per session). ``servers``: the MCP
        servers configured, which a rule names alone or with one of their tools."""
        match = _RULE.match(text)
        if match is None:
            raise RuleError(
                f"cannot read tool rule {text!r}: use e.g. 'shell', 'shell(git:*)', 'write'"
            )
        kind, argument = match.group(1), match.group(2)
        argument = argument.strip() if argument is not None else None
        if argument == "":
            raise RuleError(f"empty argument in tool rule {text!r}")
        known = kind in RULE_KINDS or kind in servers
        if tools is not None and not known and kind not in tools:
            names = ", ".join([*RULE_KINDS, *tools, *sorted(servers)])
            raise RuleError(
                f"unknown kind {kind!r} in tool rule {text!r}: a rule names one of {names} "
                "(e.g. 'shell', 'shell(git:*)', 'write')"
            )
        if argument is not None and kind != "shell" and kind not in servers:
            raise RuleError(f"only shell and MCP server rules take an argument: {text!r}")
        return cls(kind, argument)

    def __str__(self) -> str:
        return f"{self.kind}({self.argument})" if self.argument else self.kind

    def match(self, command: SimpleCommand, *, by_base_name: bool) -> Match:
        """``git:*`` and ``git`` both match ``git …``; ``git push`` matches ``git push …``.

        ``maybe`` when a word the rule names is known only when the command runs.
        """
        if self.argument is None:
            return "yes"
        result: Match = "yes"
        for index, want in enumerate(self.argument.removesuffix(":*").split()):
            if index >= len(command.words):
                return "maybe" if command.open_ended else "no"
            got = command.words[index]
            if got is None:
                result = "maybe"
                continue
            if index == 0 and by_base_name:
                got, want = base_name(got), base_name(want)
            if got != want:
                return "no"
        return result

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.argument is not None:
            out["argument"] = self.argument
        return out


class ShellPart(NamedTuple):
    """One simple command (or output redirection) of a line, with its own verdict."""

    text: str
    verdict: Verdict
    rule: Rule | None
    note: str = ""  # why no name rule decides it, or where it writes
    # "unknown": a name or word known only at run time; "outside": a redirection out.
    cause: Literal["", "unknown", "outside"] = ""


def allow_form(command: SimpleCommand) -> SimpleCommand:
    """What an allow rule must match: the command, or the ``sudo …`` around it."""
    return next((w for w in command.wrappers if base_name(w.name or "") in ELEVATING), command)


def command_identifiers(command: str) -> list[str]:
    """What a session approval remembers: each command's name (``git``, ``pytest``…)."""
    seen: list[str] = []
    for parsed in parse_line(command).commands:
        name = allow_form(parsed).name
        if name and name not in seen:
            seen.append(name)
    return seen


def writes_files(command: str) -> bool:
    """Whether the line redirects output into a file (not /dev/null)."""
    return any(
        r.target is None or not _HARMLESS_TARGET.match(r.target)
        for r in parse_line(command).redirects
    )


@dataclass(slots=True)
class PermissionPolicy:
    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    allow_all: bool = False
    # Approved "for the session" by the user: command names, and whether writes are.
    approved_commands: set[str] = field(default_factory=set)
    approved_writes: bool = False
    approved_tools: set[str] = field(default_factory=set)  # custom and MCP tools, by name

    @classmethod
    def from_flags(
        cls,
        allow: list[str] | None = None,
        deny: list[str] | None = None,
        allow_all: bool = False,
        *,
        tools: Collection[str] | None = None,
        servers: Collection[str] = (),
    ) -> PermissionPolicy:
        """``tools``: the tool names rules may name (None: any); ``servers``: the
        configured MCP servers' names."""
        return cls(
            allow=[Rule.parse(r, tools, servers) for r in allow or []],
            deny=[Rule.parse(r, tools, servers) for r in deny or []],
            allow_all=allow_all,
        )

    def decide(
        self,
        kind: Kind,
        tool_name: str,
        command: str | None = None,
        workspace: Sequence[Path] = (),
        mcp: tuple[str, str] | None = None,
    ) -> tuple[Verdict, Rule | None]:
        """The verdict for one call, and the rule that decided it (if one did).

        ``workspace``: the working directory first, then added directories; a shell
        command's output redirected elsewhere needs more than the command's rule.
        ``mcp``: an MCP tool's server and its own name on it.
        """
        if kind == "shell":
            return self._decide_shell(tool_name, command or "", workspace)
        if kind == "mcp":
            return self._decide_mcp(tool_name, mcp or ("", tool_name))
        for rule in self.deny:
            if rule.kind in (kind, tool_name):
                return "deny", rule
        if kind == "read" or self.allow_all:
            return "allow", None
        if kind == "write" and self.approved_writes:
            return "allow", None
        if kind == "custom-tool" and tool_name in self.approved_tools:
            return "allow", None
        for rule in self.allow:
            if rule.kind in (kind, tool_name):
                return "allow", rule
        return "ask", None

    def _decide_mcp(self, tool_name: str, origin: tuple[str, str]) -> tuple[Verdict, Rule | None]:
        server, tool = origin

        def names_it(rule: Rule) -> bool:
            return rule.kind == server and rule.argument in (None, tool)

        for rule in self.deny:
            if names_it(rule):
                return "deny", rule
        if self.allow_all or tool_name in self.approved_tools:
            return "allow", None
        for rule in self.allow:
            if names_it(rule):
                return "allow", rule
        return "ask", None

    def _decide_shell(
        self, tool_name: str, command: str, workspace: Sequence[Path]
    ) -> tuple[Verdict, Rule | None]:
        parts = self.shell_parts(tool_name, command, workspace)
        if not parts:
            parts = [self._decide_command(tool_name, _EMPTY)]
        denied = next((part for part in parts if part.verdict == "deny"), None)
        if denied is not None:
            return "deny", denied.rule  # one denied part denies the whole line
        if any(part.verdict == "ask" for part in parts):
            return "ask", None
        deciding = [part.rule for part in parts if part.rule is not None]
        return "allow", deciding[-1] if deciding else None

    def shell_parts(
        self, tool_name: str, command: str, workspace: Sequence[Path] = ()
    ) -> list[ShellPart]:
        """Each simple command of ``command`` (and each redirection that needs a
        verdict of its own) with its verdict: what a denial of ``a && b`` names."""
        parsed = parse_line(command)
        parts = [self._decide_command(tool_name, c) for c in parsed.commands]
        for redirect in parsed.redirects:
            part = self._decide_redirect(redirect, workspace, parsed.changes_directory)
            if part is not None:
                parts.append(part)
        return parts

    def _applies(self, rule: Rule, tool_name: str) -> bool:
        return rule.kind in ("shell", tool_name)

    def _decide_command(self, tool_name: str, command: SimpleCommand) -> ShellPart:
        """The verdict for one simple command."""
        text = command.text
        if command.name is None:
            note = command.reason or "its command name is known only when it runs"
            for rule in self.deny:
                if self._applies(rule, tool_name) and rule.argument is None:
                    return ShellPart(text, "deny", rule, note, "unknown")
            if any(self._applies(rule, tool_name) for rule in self.deny):
                return ShellPart(text, "ask", None, note, "unknown")  # it may be what they deny
            broad = next(
                (r for r in self.allow if self._applies(r, tool_name) and r.argument is None),
                None,
            )
            if self.allow_all or broad is not None:
                return ShellPart(text, "allow", broad, note, "unknown")
            return ShellPart(text, "ask", None, note, "unknown")
        maybe: Rule | None = None
        for rule in self.deny:
            if not self._applies(rule, tool_name):
                continue
            for form in (command, *command.wrappers):
                found = rule.match(form, by_base_name=True)
                if found == "yes":
                    return ShellPart(text, "deny", rule)
                if found == "maybe":
                    maybe = maybe or rule
        if maybe is not None:
            note = f"words the rule {maybe} names are known only when it runs"
            return ShellPart(text, "ask", None, note, "unknown")
        allowing = allow_form(command)
        if self.allow_all or allowing.name in self.approved_commands:
            return ShellPart(text, "allow", None)
        for rule in self.allow:
            if self._applies(rule, tool_name) and rule.match(allowing, by_base_name=False) == "yes":
                return ShellPart(text, "allow", rule)
        return ShellPart(text, "ask", None)

    def _decide_redirect(
        self, redirect: Redirect, workspace: Sequence[Path], moved: bool
    ) -> ShellPart | None:
        """None when the redirection stays inside the workspace (or goes to /dev/null)."""
        target = redirect.target
        if target is not None and _HARMLESS_TARGET.match(target):
            return None
        place = _place(target, workspace, moved)
        if place is None:
            note = "it writes to a file whose place is known only when it runs"
        elif any(place.is_relative_to(root.resolve()) for root in workspace):
            return None
        else:
            note = f"it writes {place}, outside the workspace"
        for rule in self.deny:
            if rule.kind == "write":
                return ShellPart(redirect.text, "deny", rule, note, "outside")
        verdict: Verdict = "allow" if self.allow_all else "ask"
        return ShellPart(redirect.text, verdict, None, note, "outside")

    def approve_for_session(
        self, kind: Kind, command: str | None = None, tool_name: str | None = None
    ) -> None:
        if kind == "write":
            self.approved_writes = True
        elif kind == "shell" and command:
            self.approved_commands.update(command_identifiers(command))
        elif kind in ("custom-tool", "mcp") and tool_name:
            self.approved_tools.add(tool_name)


def _place(target: str | None, workspace: Sequence[Path], moved: bool) -> Path | None:
    """Where a redirection writes, symlinks followed; None when it cannot be told."""
    if target is None:
        return None
    path = Path(target)
    if not path.is_absolute():
        if moved or not workspace:
            return None  # relative to a directory a ``cd`` chose
        path = workspace[0] / path
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return None


# --- what a human is asked ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PermissionPrompt:
    """Everything a UI needs to ask: what will run or change, exactly."""

    request_id: str
    tool_call_id: str
    tool_name: str
    kind: Kind
    intention: str
    command: str | None = None  # shell
    path: str | None = None  # write
    diff: str | None = None  # write
    arguments: Any = None  # custom-tool, mcp
    description: str | None = None  # custom-tool, mcp
    server_name: str | None = None  # mcp: the server
    server_tool: str | None = None  # mcp: the tool's own name on it


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """``approve`` once, for the ``session``, or ``deny`` (with optional feedback)."""

    decision: Literal["approve", "session", "deny"]
    feedback: str | None = None


PermissionAsker = Callable[[PermissionPrompt], Awaitable[PermissionAnswer]]
