"""``Content-Length`` framing, as the Copilot SDK reads and writes it.

A frame is ``Content-Length: N\\r\\n\\r\\n`` followed by N bytes of UTF-8 JSON. The
SDK reads exactly one header line and one blank line, so that is all we write;
when reading, other headers (``Content-Type``) are tolerated.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

MAX_HEADER_LINES = 16


class FramingError(Exception):
    """The byte stream is not a sequence of frames; the connection cannot go on."""


def encode_frame(message: Any) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's body, or None at a clean end of stream (between frames)."""
    length: int | None = None
    for count in range(MAX_HEADER_LINES + 1):
        line = await reader.readline()
        if not line:
            if count == 0:
                return None
            raise FramingError("stream ended inside a frame header")
        if not line.endswith(b"\n"):
            raise FramingError("stream ended inside a frame header")
        text = line.decode("ascii", errors="replace").strip()
        if not text:
            if length is None:
                if count == 0:
                    continue  # tolerate a stray blank line between frames
                raise FramingError("frame header without Content-Length")
            break
        name, sep, value = text.partition(":")
        if not sep:
            raise FramingError(f"malformed header line: {text[:80]!r}")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FramingError(f"bad Content-Length: {value.strip()[:40]!r}") from None
            if length < 0:
                raise FramingError("negative Content-Length")
    else:
        raise FramingError("too many header lines")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise FramingError("stream ended inside a frame body") from None
