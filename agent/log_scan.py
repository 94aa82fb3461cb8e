"""Reading a log for the session listing, without building every event.

A listing needs a handful of facts per session (first prompt, turns, tools, outcome,
usage). Parsing every line into pydantic events costs most of a listing's time on
Copilot CLI's logs, whose lines are large (a 43 KB system prompt, tool output). Here
each line's type is read from its first bytes (both writers put ``type`` first), and
only lines of the types :func:`agent.session_summary.summarize_events` reads are
parsed (into plain dicts); the rest are skipped unread, and turns and tool results,
which it only counts, are counted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent.log_lines import read_line

Envelope = dict[str, Any]

# The envelope's type, at the start of the line (a "type" key deeper in the data,
# e.g. a tool request's, never matches here).
_TYPE_FIRST = re.compile(rb'\s*\{\s*"type"\s*:\s*"([^"\\]+)"')
_TIMESTAMP_KEY = b'"timestamp"'
_STAMP = re.compile(rb'"timestamp"\s*:\s*"([^"\\]+)"')

# Only counted (their data, tool output above all, is never read): one shared stand-in
# per type takes the place of each such line, which is never parsed.
_COUNTED: dict[str, Envelope] = {
    "tool.execution_complete": {
        "type": "tool.execution_complete",
        "data": {"toolCallId": "", "success": True},
    },
    "assistant.turn_start": {"type": "assistant.turn_start", "data": {"turnId": ""}},
    "assistant.turn_end": {"type": "assistant.turn_end", "data": {"turnId": ""}},
}


_NOT_COUNTED = re.compile(rb'"isUserRequested"\s*:\s*true|"agentId"\s*:\s*"[^"]')


def listing_events(path: Path, wanted: frozenset[str]) -> tuple[list[Envelope], str, str]:
    """The envelopes (each line's JSON object) of types in ``wanted`` (tool results
    and turn markers as bare placeholders), and the timestamps of the log's first and
    last whole events (when it began, for a log without session.start, and its latest
    activity)."""
    data = path.read_bytes()
    events: list[Envelope] = []
    lines = data.split(b"\n")
    torn = lines.pop() if lines else b""  # after the last newline: "" or a torn line
    for raw in lines:
        match = _TYPE_FIRST.match(raw)
        if match is None:
            if raw.strip():
                _parse_into(events, raw, wanted)  # an unusual layout: read it whole
            continue
        etype = match.group(1).decode("utf-8", "replace")
        if etype not in wanted:
            continue
        stand_in = _COUNTED.get(etype)
        # Counted unread, unless the line says it is not the model's own call: a user's
        # !command, or a sub-agent's (the envelope's agentId).
        if stand_in is not None and not _NOT_COUNTED.search(raw):
            events.append(stand_in)
        else:
            _parse_into(events, raw, wanted)
    if torn.strip():
        # Whole but unterminated (kept), or torn by a writer that died (skipped).
        last = _envelope(torn)
        if last is not None:
            lines.append(torn)
            if last["type"] in wanted:
                events.append(last)
    return events, _first_stamp(lines), _last_stamp(lines)


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


def _first_stamp(lines: list[bytes]) -> str:
    """The envelope timestamp of the first line that has one."""
    for raw in lines:
        found = _last_stamp([raw])
        if found:
            return found
    return ""


def _last_stamp(lines: list[bytes]) -> str:
    """The envelope timestamp of the last line that has one. Both writers put it after
    ``data``, so the last occurrence in a line is the envelope's."""
    for raw in reversed(lines):
        at = raw.rfind(_TIMESTAMP_KEY)
        if at == -1:
            continue
        match = _STAMP.match(raw, at)
        if match is not None:
            return match.group(1).decode("utf-8", "replace")
    return ""
