"""A shell word's value as bash would see it, when that can be known before it runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

_BRACE_EXPANSION = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Word:
    """One word as written: ``value`` None when known only at run time; ``splits`` when
    it may become zero or several words (an unquoted expansion, a glob, a brace)."""

    value: str | None
    source: str
    splits: bool = False


def text_of(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def word_of(node: Node) -> Word:
    source = text_of(node)
    parts = _pieces(node)
    if parts is None:
        unquoted_expansion = node.type in ("simple_expansion", "expansion", "command_substitution")
        splits = unquoted_expansion or node.type in ("concatenation", "brace_expression")
        return Word(None, source, splits=splits)
    value = "".join(text for text, _quoted in parts)
    unquoted = "".join(text if not quoted else "\0" * len(text) for text, quoted in parts)
    if any(c in _GLOB_CHARS for c in unquoted) or _BRACE_EXPANSION.search(unquoted):
        return Word(None, source, splits=True)
    if unquoted.startswith("~"):
        return Word(None, source)  # a home directory: known, but not to a rule
    return Word(value, source)


def _pieces(node: Node) -> list[tuple[str, bool]] | None:
    """The word's text as (text, quoted) pieces, or None if it is known only when it runs."""
    match node.type:
        case "word" | "number" | "extglob_pattern":
            return _unescape(text_of(node))
        case "raw_string":
            return [(text_of(node)[1:-1], True)]
        case "string":
            pieces: list[tuple[str, bool]] = []
            for child in node.children:
                if child.type == '"':
                    continue
                if child.type == "string_content":
                    pieces.append((_unescape_in_quotes(text_of(child)), True))
                elif not child.is_named and child.type == "$":
                    pieces.append(("$", True))
                else:
                    return None
            return pieces
        case "concatenation":
            out: list[tuple[str, bool]] = []
            for child in node.children:
                got = _pieces(child)
                if got is None:
                    return None
                out += got
            return out
        case _:
            return None


def _unescape(text: str) -> list[tuple[str, bool]]:
    """An unquoted word: ``\\x`` is a quoted ``x``; a backslash-newline is nothing."""
    out: list[tuple[str, bool]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":
                out.append((text[index + 1], True))
            index += 2
            continue
        out.append((char, False))
        index += 1
    return out


def _unescape_in_quotes(text: str) -> str:
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)
