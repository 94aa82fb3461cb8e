"""Where a streamed Markdown reply can be cut into two documents that render as one.

A long reply is streamed into a Textual ``Markdown`` widget, which is a container
with a widget per block: every frame lays all of them out, so a reply of a few
thousand characters makes each frame slower than the stream. The turn view therefore
freezes the older part of a long reply into one cheap renderable and keeps streaming
only the tail. The cut must not change what either part means, so candidates come
from the parser's own block boundaries, and a cut is taken only if the two halves
render exactly as the whole does (fences, HTML blocks, lists, setext headings and
link reference definitions included).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

MAX_TRIES = 4  # candidate cuts verified per call, newest first


_local = threading.local()


def thread_parser() -> MarkdownIt:
    """This thread's "gfm-like" parser (what Textual's Markdown widget uses).

    Textual's ``Markdown`` builds a new parser on each ``update``/``append`` unless
    given a factory: with linkify that is ~0.3 ms and ~0.4 MB of regex sources in a
    reference cycle, left to the cyclic collector, several times a turn. A parser is
    reused, but only within one thread: linkify keeps state between its calls, and
    Textual parses in its executor's threads while this module parses on the loop's.
    """
    parser: MarkdownIt | None = getattr(_local, "parser", None)
    if parser is None:
        from markdown_it import MarkdownIt  # loaded with the first reply, not at start

        parser = _local.parser = MarkdownIt("gfm-like")
    return parser


class _ThreadParsers:
    """What a Markdown widget's ``parser_factory`` returns: it parses with the parser
    of whichever thread it is called on."""

    def parse(self, src: str, env: dict[str, Any] | None = None) -> list[Token]:
        return thread_parser().parse(src, env)


_THREAD_PARSERS = _ThreadParsers()


def shared_parser() -> MarkdownIt:
    """A ``parser_factory`` for Textual's Markdown: no new parser per update."""
    return cast("MarkdownIt", _THREAD_PARSERS)


def freeze_point(text: str, keep: int) -> int | None:
    """The offset of the last safe cut that leaves at least ``keep`` characters after it.

    A candidate is the start of a top-level block that follows a blank line; it is
    safe if rendering the two halves gives exactly what rendering the whole gives.
    ``None`` when no candidate passes.
    """
    limit = len(text) - keep
    if limit <= 0:
        return None
    parser = thread_parser()
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    candidates = []
    for token in parser.parse(text):
        if token.level != 0 or token.nesting == -1 or not token.map:
            continue
        first = token.map[0]
        if first == 0 or lines[first - 1].strip(" \t"):
            continue  # not after a blank line
        if starts[first] <= limit:
            candidates.append(starts[first])
    whole = None
    for offset in sorted(set(candidates), reverse=True)[:MAX_TRIES]:
        whole = whole if whole is not None else parser.render(text)
        if parser.render(text[:offset]) + parser.render(text[offset:]) == whole:
            return offset
    return None
