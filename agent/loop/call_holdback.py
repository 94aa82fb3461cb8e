"""Holds back streamed text that may turn out to be a tool call written as text.

A call written in the reply (see :mod:`agent.loop.text_tool_calls`) is shown on its
tool card, not as prose; but it streams in pieces like any text. :class:`CallHoldback`
lets through what is surely prose and keeps the rest from the point where a call may
begin (``<tool_call>``, a JSON fence, a ``{`` first on a line) until it is clear: text
after a finished block that is not another call releases it at once (a Python code
block, JSON in the middle of an explanation); at the end of the reply the parser
decides, and what was not a call is released then.
"""

from __future__ import annotations

from agent.loop.text_tool_calls import FENCE, blocks_from, candidate_starts

# Characters after which the held text may have become clear: a block ending, or
# starting. Without one of them nothing can change, except prose after a finished
# block (released on the next such character, or at the end).
_TRIGGERS = frozenset("<>`{}[]\n")
# Held text is looked at again on every piece only while shorter than this: a long
# call (a file's content) is looked at when a trigger arrives.
_ALWAYS_LOOK = 2048


class CallHoldback:
    """Streamed text in, the part that is surely prose out."""

    def __init__(self) -> None:
        self.held = ""
        self.released = 0  # characters let through so far
        self._line_start = True  # whether the held text begins a line
        self._in_fence = False  # whether the text shown ends inside a code block

    def feed(self, piece: str) -> str:
        """Take the next piece; return what can be shown now."""
        self.held += piece
        if len(self.held) > _ALWAYS_LOOK and _TRIGGERS.isdisjoint(piece):
            return ""
        return self._release(self._hold_point())

    def flush(self) -> str:
        """The reply ended: whatever is still held."""
        return self._release(len(self.held))

    def _hold_point(self) -> int:
        """Where the first block that may still be a call starts, or the end."""
        text = self.held
        origin = 0
        if self._in_fence:  # a code block shown already: its closing fence starts nothing
            close = _closing_fence(text, self._line_start)
            if close is None:
                return _partial_fence_line(text, self._line_start)
            origin = text.find("\n", close)
            if origin < 0:
                return close  # the closing line is not finished yet
            origin += 1
        for start in candidate_starts(text, origin, at_line_start=self._line_start):
            if blocks_from(text, start, final=False) is not None:
                return start
        return len(text)

    def _release(self, upto: int) -> str:
        shown, self.held = self.held[:upto], self.held[upto:]
        if shown:
            self.released += len(shown)
            if _fence_lines(shown, self._line_start) % 2:
                self._in_fence = not self._in_fence
            self._line_start = shown.endswith("\n")
        return shown


def _fence_lines(text: str, line_start: bool) -> int:
    """How many lines of ``text`` are fences (open or close a code block)."""
    lines = text.split("\n")
    count = sum(1 for line in lines[1:] if line.lstrip(" ").startswith(FENCE))
    first = lines[0]
    return count + (1 if line_start and first.lstrip(" ").startswith(FENCE) else 0)


def _closing_fence(text: str, line_start: bool) -> int | None:
    if line_start and text.lstrip(" ").startswith(FENCE):
        return 0
    close = text.find("\n" + FENCE)
    return None if close < 0 else close + 1


def _partial_fence_line(text: str, line_start: bool) -> int:
    """Inside a code block: all may be shown but a last line that may yet close it."""
    last = text.rfind("\n") + 1
    if last == 0 and not line_start:
        return len(text)
    tail = text[last:].lstrip(" ")
    return last if tail and FENCE.startswith(tail) else len(text)
