"""One line of a log as plain JSON, read the way every reader reads it.

Kept apart from the event models (pydantic) so that a reader that needs only a few
fields, the session listing, parses lines without importing them;
:func:`agent.events.schema.event_from_json` builds its events on :func:`read_line`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any


class EventParseError(ValueError):
    """A line that is JSON but not an event envelope."""


# Deeper lines are refused as unreadable: the json module recurses per level (a
# RecursionError near 1,000) and pydantic serializes at most 255. Real events nest
# about a dozen levels.
MAX_DEPTH = 128
_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
# The envelope's own keys; the rest of a line without ``data`` is its data.
ENVELOPE_KEYS = frozenset({"type", "id", "timestamp", "parentId", "ephemeral"})


def read_line(line: str) -> Any:
    """The JSON value of one line. A line that cannot be read raises a ValueError
    (:class:`EventParseError` or ``json.JSONDecodeError``), never anything else."""
    try:
        obj = json.loads(line)
    except RecursionError:
        raise EventParseError("nested too deeply to read") from None
    # Counting brackets is cheap; only a line with many of them is measured.
    if line.count("{") + line.count("[") > MAX_DEPTH and _depth_over(obj, MAX_DEPTH):
        raise EventParseError(f"nested more than {MAX_DEPTH} levels deep")
    if "\\u" in line and _LONE_SURROGATE.search(line):  # the plain search first: cheaper
        obj = _scrub(obj)  # "\\udc00" alone cannot be printed or written as UTF-8
    return obj


def data_of(envelope: Mapping[str, Any], *, known: bool) -> dict[str, Any]:
    """An envelope's ``data`` ({} when it is not an object). A line of an unknown
    type without ``data`` carries its fields beside the envelope's (the ``result``
    line ending ``copilot -p --output-format json``): they are its data."""
    data = envelope.get("data")
    if isinstance(data, dict):
        return data
    if not known and "data" not in envelope:
        return {k: v for k, v in envelope.items() if k not in ENVELOPE_KEYS}
    return {}


def _depth_over(value: Any, limit: int) -> bool:
    """Whether lists and objects in ``value`` nest deeper than ``limit``."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _scrub(value: Any) -> Any:
    """``value`` with lone surrogates in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if isinstance(value, dict):
        return {_scrub(key): _scrub(item) for key, item in value.items()}
    return value
