"""One line of segments that gives way gracefully when the terminal is narrow.

Each :class:`Segment` has forms, widest first (the last may be empty: the segment is
then dropped), and for each step to a shorter form a rank: the line is fitted by
taking, again and again, the step with the lowest rank among all segments until the
line fits. A segment with a single form never shrinks. Only if every segment is at
its shortest is the line cut, with an ellipsis, at its end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

SEPARATOR = Text(" │ ", style="dim")


@dataclass(frozen=True)
class Segment:
    """``forms``: widest first. ``ranks[i]``: when form ``i`` gives way to form
    ``i + 1`` (lower gives way earlier). One rank fewer than forms."""

    forms: tuple[Text, ...]
    ranks: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.forms or len(self.ranks) != len(self.forms) - 1:
            raise ValueError("a segment needs one rank per step to a shorter form")

    @classmethod
    def fixed(cls, text: Text | str) -> Segment:
        """A segment that never shrinks."""
        return cls((_text(text),))

    @classmethod
    def shrinking(cls, text: Text | str, *steps: tuple[int, Text | str]) -> Segment:
        """``text``, then each ``(rank, shorter form)`` in turn."""
        return cls((_text(text), *(_text(form) for _, form in steps)), tuple(r for r, _ in steps))


def _text(value: Text | str) -> Text:
    return value if isinstance(value, Text) else Text(value)


def fit(segments: Sequence[Segment], width: int) -> Text:
    """The segments joined by separators, shrunk (lowest rank first) to ``width``."""
    chosen = [0] * len(segments)

    def assembled() -> Text:
        shown = [seg.forms[i] for seg, i in zip(segments, chosen, strict=True) if seg.forms[i]]
        line = Text()
        for n, part in enumerate(shown):
            if n:
                line.append_text(SEPARATOR)
            line.append_text(part)
        return line

    line = assembled()
    while line.cell_len > width:
        steps = [
            (seg.ranks[i], -n)  # on equal ranks the later segment gives way first
            for n, (seg, i) in enumerate(zip(segments, chosen, strict=True))
            if i < len(seg.ranks)
        ]
        if not steps:
            break
        _, minus_n = min(steps)
        chosen[-minus_n] += 1
        line = assembled()
    if line.cell_len > width:
        line.truncate(width, overflow="ellipsis")
    line.no_wrap = True
    return line
