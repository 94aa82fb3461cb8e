"""``grep``: regex search over files, with ripgrep when present and pure Python otherwise.

Both searches see the same files (hidden files included, ignore files not read,
:data:`SKIP_DIRS` pruned, symlinks not followed, binary files skipped) and their
matches go through the same formatting, so the model gets the same answer either way.
"""

from __future__ import annotations

import asyncio
import heapq
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from agent.system.ripgrep import find_rg
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.beneath import (
    READ_FLAGS,
    WorkspacePath,
    locate,
    open_beneath,
    opened,
    read_regular,
    walk_beneath,
)
from agent.tools.glob import glob_to_regex
from agent.tools.paths import SKIP_DIRS, display_path, hidden_beneath, without_hidden
from agent.tools.piped import run_piped

MAX_MATCHES = 200
MAX_MATCH_CHARS = 500
_CHUNK = 1 << 16


@dataclass(frozen=True, order=True, slots=True)
class Match:
    path: str
    line: int
    text: str


class GrepArgs(ToolArgs):
    pattern: str = Field(description="Regular expression to search for, matched line by line.")
    path: str | None = Field(
        default=None,
        description="File or directory to search; defaults to the working directory.",
    )
    glob: str | None = Field(
        default=None,
        description=(
            "Only search files matching this glob, e.g. '*.py' (matched against the file "
            "name) or 'src/**/*.ts' (matched against the path)."
        ),
    )
    ignore_case: bool | None = Field(default=None, description="Match case-insensitively.")


class GrepTool(Tool):
    name = "grep"
    description = (
        "Search file contents with a regular expression. Returns 'file:line:text' for each "
        "matching line, sorted by file and line. Skips binary files, .git, .venv, "
        "node_modules and cache directories."
    )
    Args = GrepArgs

    def __init__(self, rg_path: str | Literal["auto"] | None = "auto") -> None:
        """``rg_path``: "auto" finds ``rg`` on PATH, None forces the Python search."""
        self._rg_path = rg_path

    def ripgrep(self) -> str | None:
        if self._rg_path != "auto":
            return self._rg_path
        return find_rg()

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolResult:
        if not args.pattern:
            raise ToolError("pattern is empty")
        shown_path = args.path or "."
        where = locate(ctx, shown_path)
        is_file = await asyncio.to_thread(_root_is_file, where, shown_path)
        rg = self.ripgrep()
        # ripgrep would read what is hidden beneath the root: the walk below skips it.
        if rg is not None and not hidden_beneath(ctx, where.path):
            root_arg = display_path(ctx, where.path)
            found = await _search_rg(rg, args, root_arg, is_file, ctx)
            shown = await asyncio.to_thread(confirmed, found.shown, where, shown_path, root_arg)
            # Lines that moved between ripgrep's read and ours leave the count as is.
            return ToolResult(content=format_matches(shown, found.total - len(found.shown)))
        matches = await asyncio.to_thread(_search_python, args, where, shown_path, ctx)
        first = heapq.nsmallest(MAX_MATCHES, matches)
        return ToolResult(content=format_matches(first, len(matches) - len(first)))


def format_matches(shown: list[Match], more: int = 0) -> str:
    """The first matches in (path, line) order, then how many more were found."""
    if not shown:
        return "No matches found."
    lines = []
    for m in sorted(shown):
        text = m.text if len(m.text) <= MAX_MATCH_CHARS else m.text[:MAX_MATCH_CHARS] + "…"
        lines.append(f"{m.path}:{m.line}:{text}")
    if more > 0:
        lines.append(f"[{more} more matches not shown; narrow the pattern, path or glob.]")
    return "\n".join(lines)


# --- pure Python ---------------------------------------------------------------


def _root_is_file(where: WorkspacePath, asked: str) -> bool:
    with opened(where, asked) as fd:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return False
        if not stat.S_ISREG(mode):
            raise ToolError(f"{asked} is not a regular file or directory")
        with os.fdopen(fd, "rb", closefd=False) as f:
            while chunk := f.read(_CHUNK):
                if b"\0" in chunk:
                    raise ToolError(f"{asked} is a binary file; grep searches text files only")
    return True


def _search_python(
    args: GrepArgs, where: WorkspacePath, asked: str, ctx: ToolContext
) -> list[Match]:
    try:
        regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    except (re.error, OverflowError) as exc:
        raise ToolError(f"invalid regex {args.pattern!r}: {exc}") from exc
    base = display_path(ctx, where.path)
    keep = _glob_filter(args.glob)
    matches: list[Match] = []
    # Every directory and file is opened relative to its parent's descriptor, never
    # through a symlink, so nothing outside the workspace is read.
    with opened(where, asked) as top:
        if stat.S_ISREG(os.fstat(top).st_mode):
            with os.fdopen(top, "rb", closefd=False) as f:
                return _search_bytes(regex, f.read(), base)
        for rel_dir, dirnames, filenames, dir_fd in walk_beneath(top):
            here = Path(os.path.normpath(where.path / rel_dir))
            dirnames[:] = [d for d in without_hidden(ctx, here, dirnames) if d not in SKIP_DIRS]
            filenames = without_hidden(ctx, here, filenames)
            shown_dir = os.path.normpath(os.path.join(base, rel_dir)).replace(os.sep, "/")
            prefix = "" if shown_dir == "." else shown_dir + "/"
            for name in filenames:
                shown = prefix + name
                if not keep(shown, name):
                    continue
                data = read_regular(dir_fd, name)
                if data is not None:
                    matches.extend(_search_bytes(regex, data, shown))
    return matches


def _glob_filter(glob: str | None) -> Callable[[str, str], bool]:
    if not glob:
        return lambda _path, _name: True
    regex = glob_to_regex(glob)
    # Like ripgrep: a glob without '/' names files anywhere, one with '/' is a path.
    if "/" in glob:
        return lambda path, _name: regex.fullmatch(path) is not None
    return lambda _path, name: regex.fullmatch(name) is not None


def _search_bytes(regex: re.Pattern[str], data: bytes, shown: str) -> list[Match]:
    if b"\0" in data:
        return []
    found = []
    for number, line in enumerate(_lines(data), start=1):
        if regex.search(line):
            found.append(Match(shown, number, line))
    return found


def _lines(data: bytes) -> list[str]:
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def confirmed(matches: list[Match], where: WorkspacePath, asked: str, root_arg: str) -> list[Match]:
    """The matches whose line is really there when the file is read beneath the workspace.

    ripgrep opens paths by name, so a directory swapped for a symlink mid-search could
    show it a file outside; each file it reports is read again through descriptors,
    from the searched directory's own, and only lines found there are kept, as read
    there. ``root_arg`` is the searched path as ripgrep was given it (``where``).
    """
    by_path: dict[str, list[Match]] = {}
    for m in matches:
        by_path.setdefault(m.path, []).append(m)
    prefix = "" if root_arg == "." else root_arg.rstrip("/") + "/"
    kept: list[Match] = []
    try:
        with opened(where, asked) as top:
            top_is_dir = stat.S_ISDIR(os.fstat(top).st_mode)
            for path, found in by_path.items():
                if top_is_dir:
                    if not path.startswith(prefix):
                        continue
                    data = _read_beneath(top, path[len(prefix) :])
                else:
                    data = _read_fd(top) if path == os.path.normpath(root_arg) else None
                if data is not None:
                    kept.extend(_same_lines(found, data))
    except (ToolError, OSError):
        return []
    return kept


def _read_beneath(top: int, rel: str) -> bytes | None:
    try:
        fd = open_beneath(top, rel, READ_FLAGS)
    except OSError:
        return None
    try:
        return _read_fd(fd)
    finally:
        os.close(fd)


def _read_fd(fd: int) -> bytes | None:
    size = os.fstat(fd)
    if not stat.S_ISREG(size.st_mode):
        return None
    chunks = []
    offset = 0
    while chunk := os.pread(fd, max(size.st_size + 1 - offset, _CHUNK), offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _same_lines(found: list[Match], data: bytes) -> list[Match]:
    # Split as _lines does, decoding only the lines asked about (UTF-8 never has a
    # newline byte inside a character, so the decoded lines are the same).
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    kept = []
    for m in found:
        if not 0 < m.line <= len(lines):
            continue
        line = lines[m.line - 1].decode("utf-8", errors="replace").removesuffix("\r")
        # ripgrep's line keeps its CR (and gains one more when the last line, ending
        # in CR, has no newline): the line shown is the one read here.
        said = m.text.removesuffix("\r")
        if line == said or line == said.removesuffix("\r"):
            kept.append(Match(m.path, m.line, line))
    return kept


# --- ripgrep -------------------------------------------------------------------

_LISTING = ["--line-number", "--with-filename", "--heading", "--null", "--color", "never"]
_MATCH_LINE = re.compile(rb"[0-9]+:")
_COUNT = re.compile(rb"\0([0-9]+)")


@dataclass(frozen=True, slots=True)
class RgFound:
    shown: list[Match]  # the first MAX_MATCHES matches in (path, line) order
    total: int  # matching lines in all files


def rg_command(rg: str, args: GrepArgs, root_arg: str, root_is_file: bool) -> list[str]:
    """The counting run: matching lines per file (``path NUL count``), nothing else."""
    cmd = [rg, *_rg_common(args), "--count", "--with-filename", "--null"]
    if args.glob and not root_is_file:
        cmd += ["--glob", args.glob]
    # Later globs win in ripgrep, so the skips come after the user's glob.
    for skipped in sorted(SKIP_DIRS):
        cmd += ["--glob", f"!{skipped}"]
    cmd += ["--regexp", args.pattern, "--", root_arg]
    return cmd


def _rg_common(args: GrepArgs) -> list[str]:
    cmd = ["--no-config", "--hidden", "--no-ignore", "--crlf", "--no-messages"]
    if args.ignore_case:
        cmd.append("--ignore-case")
    return cmd


async def _run_rg(cmd: Sequence[str | bytes], args: GrepArgs, ctx: ToolContext) -> bytes:
    result = await run_piped(cmd, ctx.cwd)
    # 0: matches, 1: none, 2: an error; --no-messages leaves only fatal ones such
    # as a bad regex, not unreadable files.
    if result.returncode not in (0, 1):
        message = result.stderr.decode("utf-8", errors="replace").strip()
        raise ToolError(
            f"grep failed for pattern {args.pattern!r}: {message or f'exit {result.returncode}'}"
        )
    return result.stdout


async def _search_rg(
    rg: str, args: GrepArgs, root_arg: str, root_is_file: bool, ctx: ToolContext
) -> RgFound:
    """Two ripgrep runs: one counts the matching lines of every file (nothing but a
    count per file crosses the pipe), the other lists the lines of only the first
    files in path order, enough to fill what is shown.

    One run listing every line would spare a process, but past a few megabytes of
    listing, reading it costs more than the second run; and stopping a long listing
    to count instead walks the tree twice, just when it was nearly done."""
    counted = await _run_rg(rg_command(rg, args, root_arg, root_is_file), args, ctx)
    total = sum(map(int, _COUNT.findall(counted)))
    wanted: list[bytes] = []
    covered = 0
    # "path NUL count": NUL is below every byte of a path, so these sort by path
    # (bytes order is code point order for UTF-8).
    for record in heapq.nsmallest(MAX_MATCHES, counted.splitlines()):
        raw, sep, count = record.rpartition(b"\0")
        if covered >= MAX_MATCHES:
            break
        if sep and count.isdigit():
            wanted.append(raw)
            covered += int(count)
    if not wanted:
        return RgFound([], total)
    # At most MAX_MATCHES lines from any one file: a file's first lines are the ones shown.
    lines_cmd: list[str | bytes] = [rg, *_rg_common(args), *_LISTING, "--max-count"]
    lines_cmd += [str(MAX_MATCHES), "--regexp", args.pattern, "--", *wanted]
    shown = first_matches(parse_rg_listing(await _run_rg(lines_cmd, args, ctx)))
    return RgFound(shown, max(total, len(shown)))


def parse_rg_listing(output: bytes) -> list[bytes]:
    """ripgrep's ``--heading --null`` listing: per file ``path NUL`` then ``N:text``
    lines, files apart by an empty line (a listed line is never empty). Returns each
    file's block, in path order (NUL is below every byte of a path).

    A file ripgrep finds a NUL byte in after some matches ends with a notice, not a
    line: binary, it is left out, as the Python search and ripgrep's count leave it."""
    files = []
    for block in output.removesuffix(b"\n").split(b"\n\n"):
        head = block.find(b"\0")
        last = max(block.rfind(b"\n"), head) + 1
        if head >= 0 and _MATCH_LINE.match(block, last):
            files.append(block)
    return sorted(files)


def first_matches(files: list[bytes]) -> list[Match]:
    """The first MAX_MATCHES lines of the listed files, given in path order."""
    shown: list[Match] = []
    for block in files:
        raw, _, body = block.partition(b"\0")
        path = os.path.normpath(raw.decode("utf-8", errors="replace"))
        wanted = MAX_MATCHES - len(shown)
        for line in body.split(b"\n", wanted)[:wanted]:
            number, _, text = line.partition(b":")
            if not number.isdigit():
                continue
            shown.append(Match(path, int(number), text.decode("utf-8", errors="replace")))
        if len(shown) >= MAX_MATCHES:
            break
    return shown
