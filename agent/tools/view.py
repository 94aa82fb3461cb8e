"""``view``: read a file with line numbers, or list a directory."""

from __future__ import annotations

import asyncio
import os
import stat

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.beneath import locate, opened
from agent.tools.paths import display_path

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
# Bounds what one call can push into the context even when lines are long.
MAX_OUTPUT_CHARS = 100_000
MAX_DIR_ENTRIES = 1000
BINARY_SNIFF_BYTES = 8192


class ViewArgs(ToolArgs):
    path: str = Field(description="File or directory to view, relative to the working directory.")
    view_range: list[int] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description=(
            "Optional [start, end] line range for a file, 1-based and inclusive; "
            "end -1 means to the end of the file."
        ),
    )


class ViewTool(Tool):
    name = "view"
    description = (
        "View a file or list a directory. Files are shown with line numbers as "
        "'N. text'; use view_range [start, end] to see part of a large file. "
        "Directories list their entries, subdirectories ending with '/'."
    )
    Args = ViewArgs

    async def run(self, args: ViewArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(content=await asyncio.to_thread(_view, args, ctx))


def _view(args: ViewArgs, ctx: ToolContext) -> str:
    where = locate(ctx, args.path)
    # Everything is read through the descriptor opened beneath the workspace root.
    with opened(where, args.path) as fd:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            if args.view_range is not None:
                raise ToolError(f"{args.path} is a directory; view_range applies to files only")
            return _list_dir(fd)
        if not stat.S_ISREG(mode):
            raise ToolError(f"{args.path} is not a regular file")
        rng = (args.view_range[0], args.view_range[1]) if args.view_range else None
        return _read_file(fd, display_path(ctx, where.path), rng)


def _list_dir(directory: int) -> str:
    names: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name == ".git":
                continue
            names.append(entry.name + "/" if _is_dir(entry) else entry.name)
    if not names:
        return "(empty directory)"
    names.sort()
    shown = names[:MAX_DIR_ENTRIES]
    lines = list(shown)
    if len(names) > len(shown):
        lines.append(
            f"[{len(names) - len(shown)} more entries not shown; use glob to find specific files.]"
        )
    return "\n".join(lines)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a symlink loop, or one whose target cannot be looked at
        return False


def _read_file(fd: int, shown_as: str, view_range: tuple[int, int] | None) -> str:
    first, wanted_end = view_range if view_range is not None else (1, -1)
    if first < 1:
        raise ToolError(f"view_range start must be 1 or more, got {first}")
    if wanted_end != -1 and wanted_end < first:
        raise ToolError(
            f"view_range end {wanted_end} is before start {first}; "
            "use -1 to read to the end of the file"
        )
    # Only the lines that can be shown are kept, so a huge file costs a scan, not memory.
    keep_until = first + MAX_LINES - 1
    if wanted_end != -1:
        keep_until = min(keep_until, wanted_end)
    kept: list[str] = []
    total = 0
    with os.fdopen(fd, "rb", closefd=False) as f:
        if b"\0" in f.read(BINARY_SNIFF_BYTES):
            raise ToolError(f"{shown_as} is a binary file; it cannot be shown as text")
        f.seek(0)
        # Splitting on b"\n" only keeps line numbers in step with grep and editors
        # (str.splitlines would also split on form feeds and the like).
        for raw in f:
            total += 1
            if first <= total <= keep_until:
                kept.append(raw.decode("utf-8", errors="replace").rstrip("\r\n"))

    if total == 0:
        if view_range is not None:
            raise ToolError(f"{shown_as} is empty; view_range does not apply")
        return "(empty file)"
    if first > total:
        raise ToolError(f"view_range start {first} is past the end of {shown_as} ({total} lines)")
    end = total if wanted_end == -1 else min(wanted_end, total)

    notes: list[str] = []
    if wanted_end > total:
        notes.append(f"[view_range end {wanted_end} is past the end of the file ({total} lines).]")
    out: list[str] = []
    size = 0
    last = first - 1
    for number, text in enumerate(kept, start=first):
        if size >= MAX_OUTPUT_CHARS:
            break
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f"… [line truncated, {len(text)} chars]"
        line = f"{number}. {text}"
        out.append(line)
        size += len(line) + 1
        last = number
    if last < end:
        notes.append(
            f"[Showing lines {first}-{last} of {total}. "
            f"Use view_range [{last + 1}, {min(end, last + MAX_LINES)}] to see more.]"
        )
    return "\n".join(out + notes)
