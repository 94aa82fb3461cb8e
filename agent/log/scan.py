"""Reading a log for the session listing, without building every event.

A listing needs a handful of facts per session (first prompt, turns, tools, outcome,
usage). Parsing every line into pydantic events costs most of a listing's time on
Copilot CLI's logs, whose lines are large (a 43 KB system prompt, tool output). Here
each line's type is read from its first bytes (both writers put ``type`` first), and
only lines of the types :func:`agent.log.summary.summarize_events` reads are
parsed (into plain dicts); the rest are skipped unread, and turns and tool results,
which it only counts, are counted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent.events.json_line import read_line

Envelope = dict[str, Any]

# The envelope's type, at the start of the line (a "type" key deeper in the data,
# e.g. a tool request's, never matches here).
_TYPE_FIRST = re.compile(rb'\s*\{\s*"type"\s*:\s*"([^"\\]+)"')
_PREFIX = b'{"type":"'
_AFTER = len(_PREFIX)
_TIMESTAMP_KEY = b'"timestamp"'
_STAMP = re.compile(rb'"timestamp"\s*:\s*"([^"\\]+)"')

# Only counted (their data, tool output above all, is never read): one shared stand-in
# per type takes the place of each such line, which is never parsed.
_COUNTED: dict[bytes, Envelope] = {
    b"tool.execution_complete": {
        "type": "tool.execution_complete",
        "data": {"toolCallId": "", "success": True},
    },
    b"assistant.turn_start": {"type": "assistant.turn_start", "data": {"turnId": ""}},
    b"assistant.turn_end": {"type": "assistant.turn_end", "data": {"turnId": ""}},
}


_NOT_COUNTED = re.compile(rb'"isUserRequested"\s*:\s*true|"agentId"\s*:\s*"[^"]')


def listing_events(path: Path, wanted: frozenset[str]) -> tuple[list[Envelope], str, str]:
    """The envelopes (each line's JSON object) of types in ``wanted`` (tool results
    and turn markers as bare placeholders), and the timestamps of the log's first and
    last whole events (when it began, for a log without session.start, and its latest
    activity)."""
    data = path.read_bytes()
    wanted_types = {etype.encode() for etype in wanted}
    events: list[Envelope] = []
    whole = data.rfind(b"\n") + 1  # after the last newline: nothing, or a torn line
    start = 0
    # Line by line, by offset: a line that is skipped is never copied out of ``data``.
    while start < whole:
        end = data.index(b"\n", start)
        # Both writers start a line with exactly this; anything else takes the regex.
        close = data.find(b'"', start + _AFTER, end) if data.startswith(_PREFIX, start) else -1
        if close != -1:
            etype = data[start + _AFTER : close]
        else:
            match = _TYPE_FIRST.match(data, start, end)
            etype = match.group(1) if match is not None else b"\\"
        if etype in wanted_types:
            stand_in = _COUNTED.get(etype)
            # Counted unread, unless the line says it is not the model's own call: a
            # user's !command, or a sub-agent's (the envelope's agentId).
            if stand_in is not None and not _NOT_COUNTED.search(data, start, end):
                events.append(stand_in)
            else:
                _parse_into(events, data[start:end], wanted)
        elif b"\\" in etype and data[start:end].strip():
            # No type read (or an escaped one): an unusual layout, read whole.
            _parse_into(events, data[start:end], wanted)
        start = end + 1
    last_line = whole - 1  # where the last whole line ends (-1: there is none)
    if data[whole:].strip():
        # Whole but unterminated (kept), or torn by a writer that died (skipped).
        last = _envelope(data[whole:])
        if last is not None:
            last_line = len(data)
            if last["type"] in wanted:
                events.append(last)
    return events, _first_stamp(data, last_line), _last_stamp(data, last_line)


def _envelope(raw: bytes) -> Envelope | None:
    """The line's envelope, or None when it is not one (an unreadable line tells a
    listing nothing)."""
    try:
        obj = read_line(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        return None
    return obj


def _parse_into(events: list[Envelope], raw: bytes, wanted: frozenset[str]) -> None:
    envelope = _envelope(raw)
    if envelope is not None and envelope["type"] in wanted:
        events.append(envelope)


def _first_stamp(data: bytes, limit: int) -> str:
    """The envelope timestamp of the first line (up to ``limit``) that has one."""
    start = 0
    while start <= limit:
        end = data.find(b"\n", start, limit)
        end = limit if end == -1 else end
        found = _stamp(data, start, end)
        if found:
            return found
        start = end + 1
    return ""


def _last_stamp(data: bytes, limit: int) -> str:
    """The envelope timestamp of the last line (up to ``limit``) that has one."""
    end = limit
    while end >= 0:
        start = data.rfind(b"\n", 0, end) + 1
        found = _stamp(data, start, end)
        if found:
            return found
        end = start - 1
    return ""


def _stamp(data: bytes, start: int, end: int) -> str:
    """The envelope timestamp of the line at ``data[start:end]`` ("" when it has
    none). Both writers put it after ``data``, so the last occurrence in a line is
    the envelope's."""
    at = data.rfind(_TIMESTAMP_KEY, start, end)
    if at == -1:
        return ""
    match = _STAMP.match(data, at, end)
    return match.group(1).decode("utf-8", "replace") if match is not None else ""
