"""Permission policy: which tool calls may run, which are refused, which need a human.

Every call has a kind: ``read``, ``write`` or ``shell``. Reads (inside the workspace,
which the tools enforce) are allowed. Writes and shell commands ask, unless a rule
decides: ``--allow-tool 'shell(git:*)'``, ``--allow-tool write``,
``--deny-tool 'shell(rm)'``, ``--allow-all-tools``. A deny rule always wins, even
over ``--allow-all-tools`` and over approvals given during the session.

A shell command is checked segment by segment (``a && b | c; $(d)``): it is allowed
only if every command in it is, and denied if any one of them is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["allow", "deny", "ask"]
Kind = Literal["read", "write", "shell", "custom-tool"]

RULE_KINDS = ("shell", "write")  # besides these, a rule may name a tool that asks
_RULE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*(?:\((.*)\))?\s*$")
# Split a command line into simple commands: control operators and substitutions.
_SEGMENT_SPLIT = re.compile(r"&&|\|\||[;&|\n()]|\$\(|`")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
# Wrappers whose first argument is the real command.
_WRAPPERS = frozenset({"sudo", "env", "nohup", "time", "nice", "xargs", "command", "exec"})


class RuleError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Rule:
    """``kind`` is shell, write, read or a tool name; ``argument`` narrows a shell rule."""

    kind: str
    argument: str | None = None

    @classmethod
    def parse(cls, text: str, tools: Collection[str] | None = None) -> Rule:
        """``tools``: the tool names a rule may name; None accepts any name (an
        embedder's own tools are only known per session)."""
        match = _RULE.match(text)
        if match is None:
            raise RuleError(
                f"cannot read tool rule {text!r}: use e.g. 'shell', 'shell(git:*)', 'write'"
            )
        kind, argument = match.group(1), match.group(2)
        argument = argument.strip() if argument is not None else None
        if argument == "":
            raise RuleError(f"empty argument in tool rule {text!r}")
        if tools is not None and kind not in RULE_KINDS and kind not in tools:
            names = ", ".join([*RULE_KINDS, *tools])
            raise RuleError(
                f"unknown kind {kind!r} in tool rule {text!r}: a rule names one of {names} "
                "(e.g. 'shell', 'shell(git:*)', 'write')"
            )
        if argument is not None and kind != "shell":
            raise RuleError(f"only shell rules take an argument: {text!r}")
        return cls(kind, argument)

    def __str__(self) -> str:
        return f"{self.kind}({self.argument})" if self.argument else self.kind

    def matches_command(self, words: list[str]) -> bool:
        """``git:*`` and ``git`` both match ``git …``; ``git push`` matches ``git push …``."""
        if self.argument is None:
            return True
        pattern = self.argument.removesuffix(":*").split()
        return words[: len(pattern)] == pattern

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.argument is not None:
            out["argument"] = self.argument
        return out


def command_words(command: str) -> list[list[str]]:
    """The simple commands of a shell line, as word lists, wrappers and VAR= dropped."""
    out: list[list[str]] = []
    for segment in _SEGMENT_SPLIT.split(command):
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()  # unbalanced quotes: still check what is there
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS):
            wrapper = words[0] in _WRAPPERS
            words = words[1:]
            while wrapper and words and words[0].startswith("-"):
                words = words[1:]  # the wrapper's own flags
        if words:
            out.append(words)
    return out


def command_identifiers(command: str) -> list[str]:
    """What a session approval remembers: each command's name (``git``, ``pytest``…)."""
    seen: list[str] = []
    for words in command_words(command):
        if words[0] not in seen:
            seen.append(words[0])
    return seen


@dataclass(slots=True)
class PermissionPolicy:
    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    allow_all: bool = False
    # Approved "for the session" by the user: command names, and whether writes are.
    approved_commands: set[str] = field(default_factory=set)
    approved_writes: bool = False
    approved_tools: set[str] = field(default_factory=set)  # custom tools, by name

    @classmethod
    def from_flags(
        cls,
        allow: list[str] | None = None,
        deny: list[str] | None = None,
        allow_all: bool = False,
        *,
        tools: Collection[str] | None = None,
    ) -> PermissionPolicy:
        """``tools``: the tool names rules may name (None: any)."""
        return cls(
            allow=[Rule.parse(r, tools) for r in allow or []],
            deny=[Rule.parse(r, tools) for r in deny or []],
            allow_all=allow_all,
        )

    def decide(
        self, kind: Kind, tool_name: str, command: str | None = None
    ) -> tuple[Verdict, Rule | None]:
        """The verdict for one call, and the rule that decided it (if one did)."""
        if kind == "shell":
            return self._decide_shell(tool_name, command or "")
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

    def _decide_shell(self, tool_name: str, command: str) -> tuple[Verdict, Rule | None]:
        parts = [self._decide_words(tool_name, words) for words in command_words(command) or [[""]]]
        denied = next((part for part in parts if part[0] == "deny"), None)
        if denied is not None:
            return denied  # one denied part denies the whole line
        if any(verdict == "ask" for verdict, _ in parts):
            return "ask", None
        deciding = [rule for _, rule in parts if rule is not None]
        return "allow", deciding[-1] if deciding else None

    def _decide_words(self, tool_name: str, words: list[str]) -> tuple[Verdict, Rule | None]:
        """The verdict for one simple command."""
        for rule in self.deny:
            if rule.kind in ("shell", tool_name) and rule.matches_command(words):
                return "deny", rule
        if self.allow_all or words[0] in self.approved_commands:
            return "allow", None
        for rule in self.allow:
            if rule.kind in ("shell", tool_name) and rule.matches_command(words):
                return "allow", rule
        return "ask", None

    def shell_parts(self, tool_name: str, command: str) -> list[tuple[str, Verdict, Rule | None]]:
        """Each simple command of ``command`` with its own verdict: what a denial of
        ``a && b`` names as the part that was not allowed."""
        out: list[tuple[str, Verdict, Rule | None]] = []
        for words in command_words(command):
            verdict, rule = self._decide_words(tool_name, words)
            out.append((" ".join(words), verdict, rule))
        return out

    def approve_for_session(
        self, kind: Kind, command: str | None = None, tool_name: str | None = None
    ) -> None:
        if kind == "write":
            self.approved_writes = True
        elif kind == "shell" and command:
            self.approved_commands.update(command_identifiers(command))
        elif kind == "custom-tool" and tool_name:
            self.approved_tools.add(tool_name)


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
    arguments: Any = None  # custom-tool
    description: str | None = None  # custom-tool


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """``approve`` once, for the ``session``, or ``deny`` (with optional feedback)."""

    decision: Literal["approve", "session", "deny"]
    feedback: str | None = None


PermissionAsker = Callable[[PermissionPrompt], Awaitable[PermissionAnswer]]
