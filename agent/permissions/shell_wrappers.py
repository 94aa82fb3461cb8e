"""The command a wrapper runs: ``sudo -u x CMD``, ``timeout 5 CMD``, ``xargs -I{} CMD``."""

from __future__ import annotations

import re

from agent.permissions.shell_words import Word

# Options that take a separate argument, per wrapper (the rest are flags).
_OPTIONS_WITH_ARGUMENT: dict[str, frozenset[str]] = {
    "sudo": frozenset(
        {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "-R", "--user", "--group"}
    ),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "exec": frozenset({"-a"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "xargs": frozenset(
        {
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--eof",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        }
    ),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "setsid": frozenset(),
    "nohup": frozenset(),
    "builtin": frozenset(),
    "command": frozenset(),
    "coproc": frozenset(),
    "busybox": frozenset(),  # ``busybox rm x`` is rm
    "toybox": frozenset(),
}
WRAPPERS = frozenset(_OPTIONS_WITH_ARGUMENT)
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def xargs_words(options: list[Word], inner: list[Word]) -> list[Word]:
    """The command xargs runs: its input's words replace ``-I`` strings, or follow."""
    marks = {"{}"}
    for index, word in enumerate(options):
        value = word.value or ""
        if value in ("-I", "--replace") and index + 1 < len(options):
            marks.add(options[index + 1].value or "{}")
        elif value.startswith(("-I", "-i", "--replace=")) and len(value) > 2:
            marks.add(value.split("=", 1)[1] if "=" in value else value[2:])
    words = [Word(None, w.source) if any(m in (w.value or "") for m in marks) else w for w in inner]
    return [*words, Word(None, "…", splits=True)]


def after_wrapper(wrapper: str, rest: list[Word]) -> list[Word] | None:
    """The command a wrapper runs ([] when none; None when it cannot be told)."""
    takes_argument = _OPTIONS_WITH_ARGUMENT[wrapper]
    index = 0
    while index < len(rest):
        value = rest[index].value
        if value is None:
            return None
        if value == "--":
            index += 1
            break
        if wrapper in ("sudo", "env", "doas") and _ASSIGNMENT.match(value):
            index += 1
            continue
        if wrapper == "command" and value in ("-v", "-V"):
            return []  # only tells what the name is
        if wrapper == "env" and (value in ("-S", "--split-string") or value.startswith("-S")):
            return None  # env splits a string into the command: rare, refuse to guess
        if not value.startswith("-") or value == "-":
            break
        if wrapper == "nice" and value[1:].isdigit():
            index += 1  # ``nice -5 cmd``
            continue
        option = value.split("=", 1)[0]
        index += 2 if option in takes_argument and "=" not in value else 1
    if wrapper == "coproc" and len(rest) > index + 1 and rest[index + 1].source == "{":
        index += 1  # ``coproc NAME { …; }``
    if wrapper == "timeout":
        if index >= len(rest) or rest[index].value is None:
            return None if index < len(rest) else []
        index += 1  # the duration
    return rest[index:]
