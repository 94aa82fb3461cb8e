"""Reading the JSON a model is still writing: the value a prefix of it stands for.

A tool call's arguments stream in as pieces of JSON text (``{"command": "gh ap``).
:class:`JsonPrefix` closes what is open (the string, then the arrays and objects)
and parses that; a piece that cannot be closed (a key without its value, half a
``true``) is cut back to the last complete member. Each piece is scanned once, so
reading the value after every piece costs a parse, not a rescan of the whole text.

Pure Python: no UI imports.
"""

from __future__ import annotations

import json
from typing import Any

_CLOSE = {"{": "}", "[": "]"}


class JsonPrefix:
    """JSON text fed piece by piece; :meth:`value` reads what it holds so far."""

    __slots__ = ("_cut_at", "_cut_stack", "_escaped", "_in_string", "_stack", "read_at", "text")

    def __init__(self) -> None:
        self.text = ""
        self.read_at = 0  # length of the text when value() last read it
        self._stack: list[str] = []  # the brackets open at the end of the text
        self._in_string = False
        self._escaped = False
        # Where a cut leaves valid JSON once closed: before a comma, or just after
        # an opening bracket, with the brackets open there.
        self._cut_at = -1
        self._cut_stack = ""

    def feed(self, piece: str) -> JsonPrefix:
        base = len(self.text)
        self.text += piece
        stack = self._stack
        in_string, escaped = self._in_string, self._escaped
        for i, ch in enumerate(piece, base):
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
                continue
            if ch == '"':
                in_string = True
            elif ch in _CLOSE:
                stack.append(ch)
                self._cut_at, self._cut_stack = i + 1, "".join(stack)
            elif ch in "}]":
                if stack:
                    stack.pop()
            elif ch == "," and stack:
                self._cut_at, self._cut_stack = i, "".join(stack)
        self._in_string, self._escaped = in_string, escaped
        return self

    def value(self) -> Any | None:
        """The value written so far, or ``None`` when nothing is usable yet."""
        self.read_at = len(self.text)
        head = self.text
        if self._in_string:
            head = _without_open_escape(head) + '"'
        value = _loads(head + _closers("".join(self._stack)))
        if value is not None or self._cut_at < 0:
            return value
        return _loads(self.text[: self._cut_at] + _closers(self._cut_stack))


def parse_prefix(text: str) -> Any | None:
    """The value the JSON prefix ``text`` has written so far, or ``None``."""
    return JsonPrefix().feed(text).value()


def _closers(stack: str) -> str:
    return "".join(_CLOSE[ch] for ch in reversed(stack))


def _without_open_escape(text: str) -> str:
    """``text`` (inside a string) without an escape cut short at its end (a lone
    ``\\``, or ``\\u00``)."""
    tail = text[-6:]
    slash = tail.rfind("\\")
    if slash < 0:
        return text
    start = len(text) - len(tail) + slash
    # An odd run of backslashes before it makes this one a literal, not an escape.
    run = len(text[:start]) - len(text[:start].rstrip("\\"))
    if run % 2:
        return text
    escape = text[start:]
    whole = len(escape) == 6 if escape[1:2] == "u" else len(escape) >= 2
    return text if whole else text[:start]


def _loads(text: str) -> Any | None:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
