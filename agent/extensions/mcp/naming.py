"""The name the model calls an MCP tool by: Copilot's ``server-tool``.

Characters outside ``A-Z a-z 0-9 - _`` become ``-`` (non-ASCII letters Punycode-encoded
first), the whole is cut at 64 characters (the providers' limit), and a name already
taken gets a number (``server-tool2``).
"""

from __future__ import annotations

import re
from collections.abc import Collection

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(text: str) -> str:
    if not text.isascii():
        text = text.encode("punycode").decode("ascii")
    return _UNSAFE.sub("-", text)


def tool_name(server: str, tool: str, taken: Collection[str] = ()) -> str:
    base = sanitize(f"{server}-{tool}")[:MAX_NAME]
    name, number = base, 1
    while name in taken:
        number += 1
        suffix = str(number)
        name = base[: MAX_NAME - len(suffix)] + suffix
    return name
