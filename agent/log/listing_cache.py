"""What a listing read from logs without loopdeck metadata (Copilot CLI's), kept in
loopdeck's home so that the next listing reads only the logs that changed.

A log is append-only, so its size and modification time say whether an entry still
holds. Entries are tied to the code that made them (a hash of the modules that read a
log into a summary): a change there reads every log again. The cache is only ever a
shortcut: a missing, damaged or unwritable one means the logs are read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import zlib
from pathlib import Path
from typing import Any

from agent.log.places import make_private_dirs
from agent.log.session_row import SessionSummary

_CODE = (
    "store.py",
    "log_lines.py",
    "log_scan.py",
    "session_summary.py",
    "usage.py",
    "listing_cache.py",
)
_FIELDS = [f.name for f in dataclasses.fields(SessionSummary) if f.name not in ("id", "path")]


def _code_version() -> str:
    # A checksum, not a cryptographic hash: it only tells one version of the code from
    # another, and hashlib's import would cost a listing more than reading the logs.
    here = Path(__file__).parent
    parts = []
    for name in _CODE:
        try:
            source = (here / name).read_bytes()
        except OSError:
            source = b""
        parts.append(f"{zlib.crc32(source):08x}{len(source):x}")
    return "-".join(parts)


class ListingCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.version = _code_version()
        self.entries: dict[str, dict[str, Any]] = {}
        self.changed = False
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError, RecursionError):
            return
        if isinstance(data, dict) and data.get("version") == self.version:
            entries = data.get("entries")
            self.entries = entries if isinstance(entries, dict) else {}

    def get(self, session_id: str, log: Path) -> SessionSummary | None:
        entry = self.entries.get(str(log))
        stamp = _stamp(log)
        if not isinstance(entry, dict) or stamp is None or entry.get("stamp") != stamp:
            return None
        fields = entry.get("summary")
        if not isinstance(fields, dict) or set(fields) != set(_FIELDS):
            return None
        try:
            return SessionSummary(id=session_id, path=log, **fields)
        except TypeError:
            return None

    def put(self, log: Path, summary: SessionSummary) -> None:
        stamp = _stamp(log)
        if stamp is None:
            return
        fields = {name: getattr(summary, name) for name in _FIELDS}
        self.entries[str(log)] = {"stamp": stamp, "summary": fields}
        self.changed = True

    def save(self, keep: set[str]) -> None:
        """Write the entries of the logs in ``keep`` (the others are gone)."""
        entries = {key: value for key, value in self.entries.items() if key in keep}
        if not self.changed and len(entries) == len(self.entries):
            return
        data = {"version": self.version, "entries": entries}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            make_private_dirs(self.path.parent)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                # dumps, not dump: json.dump encodes in pure Python, piece by piece.
                out.write(json.dumps(data, separators=(",", ":")))
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()


def _stamp(log: Path) -> list[int] | None:
    try:
        info = log.stat()
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]
