"""Where a streamed Markdown reply can be cut into two documents that render as one.

A long reply is streamed into a Textual ``Markdown`` widget, which is a container
with a widget per block: every frame lays all of them out, so a reply of a few
thousand characters makes each frame slower than the stream. The turn view therefore
freezes the older part of a long reply into one cheap renderable and keeps streaming
only the tail. The cut must not change what either part means.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


def freeze_point(text: str, keep: int) -> int | None:
    """The offset of the last safe cut that leaves at least ``keep`` characters after it.

    A cut is safe at the start of a line that follows a blank line, outside fenced
    code, and that starts a new block at column 0 which is not a list item (a cut
    there would split one list into two) and not an indented continuation. ``None``
    when there is no such place.
    """
    limit = len(text) - keep
    if limit <= 0:
        return None
    best: int | None = None
    fence: str | None = None  # the fence that opened the code block we are in
    previous_blank = False
    offset = 0
    for line in text.splitlines(keepends=True):
        if offset > limit:
            break
        stripped = line.rstrip("\r\n")
        opener = _FENCE.match(stripped)
        if fence is not None:
            # Closed by a bare fence of the same character, at least as long.
            mark = opener.group(1) if opener else ""
            bare = not stripped.strip().strip(fence[0])
            if mark[:1] == fence[0] and len(mark) >= len(fence) and bare:
                fence = None
            previous_blank = False
        else:
            if (
                previous_blank
                and offset > 0
                and stripped[:1] not in ("", " ", "\t")
                and not _LIST_ITEM.match(stripped)
            ):
                best = offset
            if opener:
                fence = opener.group(1)
            previous_blank = not stripped.strip()
        offset += len(line)
    return best
