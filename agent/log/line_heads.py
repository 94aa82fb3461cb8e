"""A log's lines of one type, found by the head of each line, without parsing them.

Every writer of ``events.jsonl`` puts the type first (``{"type":"…"``), so the lines
of a type are the lines that start with its head. Resume draws a long log's tail
numbered as in the whole log, so it counts the turns before that tail this way:
over hundreds of megabytes, ripgrep counts them in its own process (on another core,
while this one loads the app); without ripgrep, this process reads and counts the
file a chunk at a time.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from agent.system.ripgrep import find_rg

LINE_HEAD = b'{"type":"'  # how writers start a line (the type first)
COUNT_CHUNK = 4 << 20  # bytes read at a time when counting in this process
RG_MIN_BYTES = 8 << 20  # below this, counting in this process beats starting ripgrep
RG_TIMEOUT = 60.0  # seconds ripgrep is given before the count falls back to this process

_TYPE_NAME = re.compile(r"[A-Za-z0-9_.]+")


def _needle(etype: str) -> bytes:
    return b"\n" + LINE_HEAD + etype.encode() + b'"'


def count_before(path: Path, etype: str, stop: int) -> int:
    """Lines of ``etype`` that start before byte ``stop``, counted in this process."""
    needle = _needle(etype)
    keep = len(needle) - 1
    # A line starting just before ``stop`` has its head after it: read that far.
    limit = stop + keep - 1
    chunk = bytearray(COUNT_CHUNK + keep)
    view = memoryview(chunk)
    # Read (the copy runs without the GIL) and counted a chunk at a time: a mapping
    # would fault every page of a log of hundreds of MB in one by one.
    with path.open("rb", buffering=0) as fh:
        found = 1 if stop > 0 and fh.read(keep) == needle[1:] else 0
        fh.seek(0)
        filled, done = 0, 0
        while done < limit:
            got = fh.readinto(view[filled : min(len(chunk), filled + limit - done)])
            done += got
            filled += got
            if got and filled < len(chunk) and done < limit:
                continue
            found += chunk.count(needle, 0, filled)
            if not got or done >= limit:
                break
            # The last bytes again at the start: a head across the seam.
            view[:keep] = view[filled - keep : filled]
            filled = keep
    return found


def last_before(path: Path, etype: str, stop: int) -> int:
    """The byte offset of the last line of ``etype`` that starts before ``stop`` (-1:
    none), searched back from ``stop`` a chunk at a time."""
    needle = _needle(etype)
    limit = stop + len(needle) - 2  # as in count_before
    with path.open("rb") as fh:
        end = stop
        while end > 0:
            begin = max(0, end - COUNT_CHUNK)
            fh.seek(begin)
            # Chunks overlap by a head.
            data = fh.read(min(end + len(needle) - 1, limit) - begin)
            at = data.rfind(needle)
            if at >= 0:
                return begin + at + 1
            end = begin
        fh.seek(0)
        return 0 if stop > 0 and fh.read(len(needle) - 1) == needle[1:] else -1


def start_count(path: Path, etype: str, before: int | None = None) -> RipgrepCount | None:
    """ripgrep counting the lines of ``etype`` in ``path``, when the part to count
    (``before`` bytes; the whole file by default) is long enough to be worth a
    process. None: count in this process (:func:`count_before`)."""
    if before is None:
        try:
            before = path.stat().st_size
        except OSError:
            return None
    return RipgrepCount.start(path, etype) if before >= RG_MIN_BYTES else None


class RipgrepCount:
    """ripgrep counting the lines of a type in a whole file, in its own process:
    started at once, its result taken when needed (:meth:`total`)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._total: int | None = None
        self._done = False

    @classmethod
    def start(cls, path: Path, etype: str, rg: str | None = None) -> RipgrepCount | None:
        """None when there is no ripgrep (or it cannot be started, or the type is not a
        plain name): the caller counts in this process instead."""
        rg = rg or find_rg()
        if rg is None or not _TYPE_NAME.fullmatch(etype):
            return None
        # Line-anchored; a type's dots matched literally. --text: a NUL byte in a log
        # must not make ripgrep call it binary and stop; no encoding sniffed either.
        pattern = '^\\{"type":"' + etype.replace(".", "\\.") + '"'
        argv = [rg, "--no-config", "--text", "--encoding", "none", "--count"]
        try:
            process = subprocess.Popen(
                [*argv, "--regexp", pattern, "--", str(path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None
        return cls(process)

    def total(self) -> int | None:
        """The count (None: ripgrep failed or took too long; it is stopped)."""
        if self._done:
            return self._total
        self._done = True
        try:
            out, _ = self._process.communicate(timeout=RG_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return None
        code = self._process.returncode
        if code == 1 and not out.strip():
            self._total = 0  # no line of that type
        elif code == 0 and out.strip().isdigit():
            self._total = int(out)
        return self._total

    def cancel(self) -> None:
        if not self._done:
            self._done = True
            self._process.kill()
            self._process.communicate()
