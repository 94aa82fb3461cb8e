"""What a shell command line would run: every simple command, and where it writes.

Permission rules name commands (``shell(rm)``, ``shell(git:*)``), so a rule is only as
good as the list of commands it is matched against. This module parses the line with a
real bash grammar and reports every simple command in every compound form: lists and
pipelines, subshells and ``{ …; }`` groups, ``if``/``for``/``while``/``until``/``case``/
``select``, function bodies, command and process substitution (also inside strings,
``${x:-…}``, arrays, here-documents and ``[[ … ]]``), and ``!``. Wrappers that run
another command are looked through (``sudo``, ``env``, ``command``, ``builtin``,
``exec``, ``nice``, ``nohup``, ``timeout``, ``time``, ``xargs``, ``stdbuf``,
``setsid``, ``coproc``, ``doas``, ``find -exec``/``-execdir``/``-ok``/``-delete``),
and ``bash|sh|zsh|dash|ksh -c STRING`` and ``eval`` of literal words are parsed again.

A word whose value is known only when the line runs (``$a``, ``$(…)``, a glob, a brace
expansion, ``$'…'``) is ``None``. A command whose *name* is such a word, ``eval`` of
such words, a shell reading commands from its input, or a line that does not parse,
is reported with the name ``None`` and a reason: the caller must not let it pass on a
rule about names.

The parser is tree-sitter's bash grammar (the ``tree-sitter`` and ``tree-sitter-bash``
packages): it is maintained by the tree-sitter project, released as wheels for every
platform, parses the whole bash language we need (``case``, ``[[ ]]``, arithmetic,
arrays, here-documents, process substitution) and never raises: a line it cannot read
comes back with error nodes, which we treat as unknown. ``bashlex`` was the other
candidate; its last release is from 2023 and it raises ``NotImplementedError`` on
``case``, ``$((…))``, ``[[ ]]``, arrays and ``coproc``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent.permissions.shell_words import Word, text_of, word_of
from agent.permissions.shell_wrappers import WRAPPERS, after_wrapper, xargs_words

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# How deep ``bash -c 'bash -c …'`` and ``eval`` may nest before we stop reading.
MAX_DEPTH = 8

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox-sh"})
# Wrappers that run their command with more privilege: a rule must allow the wrapper.
ELEVATING = frozenset({"sudo", "doas", "su"})
# Directory changes: a relative path after one of these is relative to somewhere else.
DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})

# Commands that run a string of shell code: its first argument (trap), the value of
# each ``name=value`` (alias), all their arguments (watch).
_CODE_TAKERS = frozenset({"trap", "alias", "watch"})
_WATCH_OPTIONS_WITH_ARGUMENT = frozenset({"-n", "--interval", "-q", "--equexit"})
# find's primaries that take one argument: an unknown word there cannot become an action.
_FIND_ARGUMENT_PRIMARIES = frozenset(
    {
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-type",
        "-xtype",
        "-size",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-perm",
        "-newer",
        "-anewer",
        "-cnewer",
        "-samefile",
        "-inum",
        "-links",
        "-mtime",
        "-atime",
        "-ctime",
        "-mmin",
        "-amin",
        "-cmin",
        "-used",
        "-maxdepth",
        "-mindepth",
        "-printf",
        "-fstype",
        "-context",
        "-newerXY",
    }
)
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Output redirections; ``>&`` and ``<>`` only when their target is a file.
_OUTPUT_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
# Reserved words the grammar reads as a command name when a compound follows ``time``,
# ``coproc``, ``!`` or a wrapper (``time { rm x; }``): what follows them is a command.
_KEYWORDS_BEFORE_A_COMMAND = frozenset(
    {"{", "}", "!", "if", "then", "elif", "else", "fi", "while", "until", "do", "done", "esac"}
)
_KEYWORDS_MISREAD = frozenset({"case", "for", "select", "in", "function", "[[", "]]", "(("})
_NOT_WORDS = frozenset({"file_redirect", "herestring_redirect", "comment"})


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command the line would run, wrappers looked through.

    ``words``: the name first (as written, after quote removal), then its arguments;
    None where a word is known only when it runs. ``open_ended``: more words may follow
    (``xargs``, an unquoted ``$x``). ``wrappers``: the wrapping commands looked
    through, outermost first, each as it was written (``sudo rm x``). ``reason``: why
    the name is None.
    """

    words: tuple[str | None, ...]
    text: str
    open_ended: bool = False
    wrappers: tuple[SimpleCommand, ...] = ()
    reason: str | None = None

    @property
    def name(self) -> str | None:
        return self.words[0] if self.words else None


@dataclass(frozen=True, slots=True)
class Redirect:
    """An output redirection: ``target`` None when known only at run time."""

    target: str | None
    text: str


@dataclass(slots=True)
class ParsedLine:
    commands: list[SimpleCommand] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    # A cd/pushd/popd (or a command we cannot name) may run before a redirect:
    # relative targets are then relative to a directory we do not know.
    changes_directory: bool = False


def base_name(name: str) -> str:
    """``/bin/rm`` and ``./rm`` name ``rm``."""
    return name.rstrip("/").rsplit("/", 1)[-1] or name


def parse_line(line: str) -> ParsedLine:
    """Every simple command ``line`` would run and every file it redirects output to."""
    out = ParsedLine()
    try:
        _Reader(out).line(line, depth=0)
    except RecursionError:  # words nested past Python's stack: never a reason to allow
        out.commands.append(_unknown(line, "it is nested too deeply to read"))
    return out


@functools.cache
def _parser() -> Parser:
    # Imported here: the parser is needed at the first shell command, not at start-up.
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _unknown(text: str, reason: str, wrappers: tuple[SimpleCommand, ...] = ()) -> SimpleCommand:
    return SimpleCommand((None,), text, open_ended=True, wrappers=wrappers, reason=reason)


class _Reader:
    def __init__(self, out: ParsedLine) -> None:
        self.out = out

    # --- lines and nodes -------------------------------------------------------

    def line(
        self,
        line: str,
        depth: int,
        wrappers: tuple[SimpleCommand, ...] = (),
        *,
        data: bool = False,
    ) -> None:
        """``data``: a string that bash may expand again (a variable's value): only the
        substitutions in it count; what does not parse in it is just text."""
        if depth > MAX_DEPTH:
            self.out.commands.append(_unknown(line, "it nests shells too deep to read", wrappers))
            return
        tree = _parser().parse(line.encode("utf-8", "surrogateescape"))
        if data:
            self.substitutions(tree.root_node, depth, wrappers)
            return
        if tree.root_node.has_error:
            self.out.commands.append(
                _unknown(line.strip(), "the line could not be parsed", wrappers)
            )
        self.walk(tree.root_node, depth, wrappers)

    def walk(self, root: Node, depth: int, wrappers: tuple[SimpleCommand, ...]) -> None:
        """Visit every node, in the order written (a loop: ``a && b && …`` nests deep)."""
        stack = [root]
        while stack:
            node = stack.pop()
            self.visit(node, depth, wrappers)
            stack.extend(reversed(node.children))

    def visit(self, node: Node, depth: int, wrappers: tuple[SimpleCommand, ...]) -> None:
        """One node by itself; its children are visited after it."""
        match node.type:
            case "command":
                self.command(node, depth, wrappers)
            case "declaration_command" | "unset_command":
                self.declaration(node, wrappers)
            case "file_redirect":
                self.redirect(node)
            case "variable_assignment":
                # ``PS4='$(rm x)'``, ``x='a[$(rm x)]'``: bash can run code kept in a
                # variable (prompts, arithmetic); read it as code too.
                value = node.child_by_field_name("value")
                code = word_of(value).value if value is not None else None
                if code is not None and ("$(" in code or "`" in code):
                    self.line(code, depth + 1, wrappers, data=True)
            case "expansion" if "@P" in text_of(node).replace(" ", ""):
                self.out.commands.append(
                    _unknown(text_of(node), "a prompt expansion may run commands", wrappers)
                )

    def substitutions(self, root: Node, depth: int, wrappers: tuple[SimpleCommand, ...]) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type in ("command_substitution", "process_substitution"):
                self.walk(node, depth, wrappers)
            else:
                stack.extend(reversed(node.children))

    def redirect(self, node: Node) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        destination = node.child_by_field_name("destination")
        if destination is None or operator not in _OUTPUT_OPERATORS:
            return
        word = word_of(destination)
        if operator == ">&" and (destination.type == "number" or word.value == "-"):
            return  # ``2>&1``, ``>&-``: a descriptor, not a file
        target = None if word.splits else word.value
        self.out.redirects.append(Redirect(target, text_of(node)))

    def declaration(self, node: Node, wrappers: tuple[SimpleCommand, ...]) -> None:
        # ``export A=1``, ``local x``: the keyword is the name; values are visited next.
        keyword = node.children[0]
        words = [Word(text_of(keyword), text_of(keyword))]
        words += [word_of(child) for child in node.children[1:] if child.is_named]
        self.out.commands.append(_command(words, text_of(node), wrappers))

    def command(self, node: Node, depth: int, wrappers: tuple[SimpleCommand, ...]) -> None:
        words: list[Word] = []
        for child in node.children:
            if child.type == "command_name" and child.named_children:
                words.append(word_of(child.named_children[0]))
            elif words and child.is_named and child.type not in _NOT_WORDS:
                words.append(word_of(child))
        if words:
            self.words(words, text_of(node), depth, wrappers)
        # Substitutions anywhere in the command run too: its children are visited next.

    # --- what a simple command runs --------------------------------------------

    def words(
        self, words: list[Word], text: str, depth: int, wrappers: tuple[SimpleCommand, ...]
    ) -> None:
        """Record the command ``words`` and what it runs in turn."""
        this = _command(words, text, wrappers)
        name = this.name
        if name is None:
            self.out.changes_directory = True  # it may well be ``cd``
            self.out.commands.append(
                _unknown(text, "its command name is known only when it runs", wrappers)
            )
            return
        if words[0].source == name and name in _KEYWORDS_BEFORE_A_COMMAND:
            if words[1:]:
                self.words(words[1:], " ".join(w.source for w in words[1:]), depth, wrappers)
            return
        if words[0].source == name and name in _KEYWORDS_MISREAD:
            self.out.commands.append(_unknown(text, "the line could not be parsed", wrappers))
            return
        bare = base_name(name)
        if bare in DIRECTORY_CHANGES:
            self.out.changes_directory = True
        inner_wrappers = (*wrappers, this)
        rest = words[1:]
        if bare in WRAPPERS:
            inner = after_wrapper(bare, rest)
            if inner is None:
                self.out.commands.append(
                    _unknown(text, f"what {bare} runs is known only when it runs", inner_wrappers)
                )
            elif inner:
                inner_text = " ".join(w.source for w in inner)
                if bare == "xargs":  # xargs puts words read from its input in
                    inner = xargs_words(rest[: len(rest) - len(inner)], inner)
                self.words(inner, inner_text, depth, inner_wrappers)
            else:
                self.out.commands.append(this)  # ``exec >log``, ``time``: nothing else runs
            return
        if bare in SHELLS:
            self.shell(this, rest, text, depth, inner_wrappers)
            return
        if bare in ("source", ".") and (not rest or rest[0].value is None):
            self.out.commands.append(
                _unknown(text, f"{bare} runs a file known only when it runs", inner_wrappers)
            )
            return
        if bare == "su":
            self.su(this, rest, text, depth, inner_wrappers)
            return
        if bare in _CODE_TAKERS:
            self.out.commands.append(this)
            self.code(bare, rest, text, depth, inner_wrappers)
            return
        if bare == "eval":  # looked through like ``bash -c``: what it runs is checked
            if not rest:
                self.out.commands.append(this)
            elif any(w.value is None for w in rest):
                self.out.commands.append(
                    _unknown(text, "eval runs words known only when it runs", inner_wrappers)
                )
            else:
                self.line(" ".join(w.value or "" for w in rest), depth + 1, inner_wrappers)
            return
        self.out.commands.append(this)
        if bare == "find":
            self.find(rest, text, depth, inner_wrappers)

    def shell(
        self,
        this: SimpleCommand,
        rest: list[Word],
        text: str,
        depth: int,
        wrappers: tuple[SimpleCommand, ...],
    ) -> None:
        """``bash -c STRING`` is read as a line; ``bash`` on its input is unknown."""
        has_c = reads_input = option_argument = False
        operands: list[Word] = []
        for index, word in enumerate(rest):
            value = word.value
            if value is None:
                self.out.commands.append(
                    _unknown(text, "the shell's arguments are known only when it runs", wrappers)
                )
                return
            if option_argument:
                option_argument = False
            elif value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                option_argument = True
            elif value == "--":
                operands = rest[index + 1 :]
                break
            elif value.startswith("--"):
                continue
            elif value.startswith(("-", "+")) and len(value) > 1:
                has_c = has_c or (value[0] == "-" and "c" in value[1:])
                reads_input = reads_input or "s" in value[1:]
                # ``-euo pipefail``: ``o`` and ``O`` take the next word.
                option_argument = "o" in value[1:] or "O" in value[1:]
            else:
                operands = rest[index:]
                break
        if has_c:
            if not operands:
                self.out.commands.append(this)  # bash refuses: -c needs a string
            elif operands[0].value is None:  # ``bash -c -- "$x"``
                self.out.commands.append(
                    _unknown(text, "the shell runs a string known only when it runs", wrappers)
                )
            else:
                self.line(operands[0].value, depth + 1, wrappers)
        elif reads_input or not operands:
            self.out.commands.append(
                _unknown(text, "the shell reads the commands to run from its input", wrappers)
            )
        else:
            self.out.commands.append(this)  # ``bash script.sh``: runs a script, by name

    def su(
        self,
        this: SimpleCommand,
        rest: list[Word],
        text: str,
        depth: int,
        wrappers: tuple[SimpleCommand, ...],
    ) -> None:
        """``su -c STRING`` runs STRING; ``su`` alone a shell on its input."""
        for index, word in enumerate(rest):
            if word.value in ("-c", "--command") or (word.value or "").startswith("--command="):
                code = (word.value or "").partition("=")[2] or None
                if code is None and index + 1 < len(rest):
                    code = rest[index + 1].value
                if code is None:
                    break
                self.out.commands.append(this)
                self.line(code, depth + 1, wrappers)
                return
        self.out.commands.append(
            _unknown(text, "su runs a shell on its input, or words known at run time", wrappers)
        )

    def code(
        self,
        bare: str,
        rest: list[Word],
        text: str,
        depth: int,
        wrappers: tuple[SimpleCommand, ...],
    ) -> None:
        """The shell code ``trap``, ``alias`` and ``watch`` run."""
        codes: list[str | None] = []
        if bare == "trap":
            operands = [w for w in rest if w.value not in ("--", "-p", "-l", "-P")]
            codes = [operands[0].value] if len(operands) > 1 else []
        elif bare == "alias":
            codes = [
                w.value.partition("=")[2] if w.value is not None else None
                for w in rest
                if w.value is None or "=" in w.value
            ]
        else:  # watch: its options, then a command line run by ``sh -c``
            index = 0
            while index < len(rest) and (rest[index].value or "").startswith("-"):
                option = (rest[index].value or "").split("=", 1)[0]
                taking = option in _WATCH_OPTIONS_WITH_ARGUMENT and "=" not in (
                    rest[index].value or ""
                )
                index += 2 if taking else 1
            words = rest[index:]
            if words:
                known = all(w.value is not None for w in words)
                codes = [" ".join(w.value or "" for w in words) if known else None]
        for code in codes:
            if code is None:
                self.out.commands.append(
                    _unknown(text, f"{bare} runs code known only when it runs", wrappers)
                )
            else:
                self.line(code, depth + 1, wrappers)

    def find(
        self, rest: list[Word], text: str, depth: int, wrappers: tuple[SimpleCommand, ...]
    ) -> None:
        """``-exec CMD … ;`` runs CMD, ``-delete`` is ``rm``."""
        index = 0
        while index < len(rest):
            word = rest[index]
            previous = rest[index - 1].value if index else None
            if word.value is None and (word.splits or previous not in _FIND_ARGUMENT_PRIMARIES):
                self.out.commands.append(
                    _unknown(text, "find's actions are known only when it runs", wrappers)
                )
                return
            if word.value == "-delete":
                self.out.commands.append(
                    SimpleCommand(("rm",), text, open_ended=True, wrappers=wrappers)
                )
            if word.value in _FIND_EXEC:
                end = next(
                    (i for i in range(index + 1, len(rest)) if rest[i].value in (";", "+")),
                    len(rest),
                )
                inner = [
                    Word(None, w.source) if w.value == "{}" else w for w in rest[index + 1 : end]
                ]
                if inner:
                    inner_text = " ".join(w.source for w in inner)
                    self.words(inner, inner_text, depth, wrappers)
                index = end
            index += 1


def _command(words: list[Word], text: str, wrappers: tuple[SimpleCommand, ...]) -> SimpleCommand:
    """The words as a rule sees them: after the first word that may split, none is known."""
    values: list[str | None] = []
    open_ended = False
    for word in words:
        if open_ended:
            values.append(None)
            continue
        values.append(word.value)
        open_ended = word.splits
    return SimpleCommand(tuple(values), text, open_ended=open_ended, wrappers=wrappers)
