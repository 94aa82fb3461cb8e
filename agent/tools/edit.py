"""``edit``: replace one exact occurrence of a string in a file, shown as a unified diff.

The file keeps its newline style (CRLF files get CRLF in the replacement), its UTF-8
byte-order mark if it had one, and its mode bits; it is rewritten atomically.
"""

from __future__ import annotations

import asyncio
import codecs
import difflib
import os
import re
import stat
from dataclasses import dataclass

from pydantic import Field

from agent.tools.atomic_write import write_atomic
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.beneath import (
    READ_FLAGS,
    WorkspacePath,
    locate,
    opened_parent,
    os_failure,
)
from agent.tools.paths import display_path

DIFF_CONTEXT = 3
# Files larger than this are refused: the edit is done in memory, twice (old and new).
MAX_EDIT_BYTES = 10 * 1024 * 1024
MAX_LISTED_MATCHES = 10
# The whitespace-insensitive search behind the "check indentation" hint is skipped above this.
_MAX_HINT_CHARS = 2 * 1024 * 1024
_VIEW_PREFIX = re.compile(r"^\s*\d+\. ")


class EditArgs(ToolArgs):
    path: str = Field(description="File to edit, relative to the working directory.")
    old_str: str = Field(
        description=(
            "The exact text to replace, including whitespace and indentation. It must occur "
            "exactly once in the file; include surrounding lines to make it unique."
        )
    )
    new_str: str = Field(description="The text to put in place of old_str.")


@dataclass(frozen=True, slots=True)
class PlannedEdit:
    shown: str
    data: bytes
    diff: str
    summary: str
    original: os.stat_result  # the edited file's mode and owner are kept


class EditTool(Tool):
    name = "edit"
    description = (
        "Edit a file by replacing one exact occurrence of old_str with new_str. old_str must "
        "match the file exactly (whitespace and indentation included) and occur exactly once; "
        "add surrounding lines to make it unique. Use create for new files."
    )
    kind = "write"
    Args = EditArgs

    def preview(self, args: EditArgs, ctx: ToolContext) -> str:
        """The unified diff the edit would make, without writing; ToolError as ``run`` would."""
        return plan_edit(args, ctx).diff

    async def run(self, args: EditArgs, ctx: ToolContext) -> ToolResult:
        planned = await asyncio.to_thread(_edit, args, ctx)
        return ToolResult(content=planned.summary, detailed_content=planned.diff)


def plan_edit(args: EditArgs, ctx: ToolContext) -> PlannedEdit:
    """Work out the new file contents and diff, raising ToolError for every refusal."""
    where = locate(ctx, args.path)
    with opened_parent(where, args.path) as parent:
        return _plan_in(parent, where, args, ctx)


def _edit(args: EditArgs, ctx: ToolContext) -> PlannedEdit:
    where = locate(ctx, args.path)
    # Read and replaced through one directory descriptor, opened beneath the workspace root.
    with opened_parent(where, args.path) as parent:
        planned = _plan_in(parent, where, args, ctx)
        try:
            write_atomic(parent, where.name, planned.data, planned.original)
        except OSError as exc:
            raise ToolError(f"could not write {planned.shown}: {exc.strerror or exc}") from exc
    return planned


def _plan_in(parent: int, where: WorkspacePath, args: EditArgs, ctx: ToolContext) -> PlannedEdit:
    shown = display_path(ctx, where.path)
    if not args.old_str:
        raise ToolError(
            "old_str is empty; give the exact text to replace (use create for a new file)"
        )
    if args.old_str == args.new_str:
        raise ToolError("old_str and new_str are the same; the edit would change nothing")
    try:
        # O_NOFOLLOW: the name was resolved already; a symlink here now was swapped in.
        fd = os.open(where.name, READ_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError as exc:
        raise ToolError(f"{args.path} does not exist; use create to make a new file") from exc
    except OSError as exc:
        raise os_failure(exc, args.path) from exc
    try:
        original = os.fstat(fd)
        if stat.S_ISDIR(original.st_mode):
            raise ToolError(f"{args.path} is a directory, not a file")
        if not stat.S_ISREG(original.st_mode):
            raise ToolError(f"{args.path} is not a regular file")
        if original.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                f"{shown} is too large to edit ({original.st_size} bytes; "
                f"the limit is {MAX_EDIT_BYTES})"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_EDIT_BYTES + 1)
    except OSError as exc:
        raise ToolError(f"could not read {shown}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(raw) > MAX_EDIT_BYTES:
        raise ToolError(f"{shown} is too large to edit (the limit is {MAX_EDIT_BYTES} bytes)")
    if b"\0" in raw:
        raise ToolError(f"{shown} is a binary file; edit changes text files only")
    bom = raw.startswith(codecs.BOM_UTF8)
    try:
        text = raw[len(codecs.BOM_UTF8) if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start}); edit changes UTF-8 text files only"
        ) from exc

    old, new = args.old_str, args.new_str
    if _uses_crlf(text):
        # view shows lines without their \r, so the model's strings usually have bare \n;
        # they get the file's \r\n, unless only the bare-\n text matches (a mixed file).
        crlf_old = _to_crlf(old)
        if crlf_old in text or old not in text:
            old, new = crlf_old, _to_crlf(new)
    positions = _find_all(text, old, MAX_LISTED_MATCHES + 1)
    if not positions:
        raise ToolError(_not_found_message(text, args.old_str, shown))
    if len(positions) > 1:
        count = _count_overlapping(text, old)
        lines = ", ".join(str(_line_at(text, p)) for p in positions[:MAX_LISTED_MATCHES])
        more = ", …" if count > MAX_LISTED_MATCHES else ""
        raise ToolError(
            f"old_str occurs {count} times in {shown} (at lines {lines}{more}); it must occur "
            "exactly once. Include more surrounding context in old_str to pick one."
        )
    start = positions[0]
    new_text = text[:start] + new + text[start + len(old) :]
    try:
        data = (codecs.BOM_UTF8 if bom else b"") + new_text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"new_str cannot be written as UTF-8: {exc.reason}") from exc
    diff = unified_diff(text, new_text, f"a/{shown}", f"b/{shown}")
    summary = (
        f"Edited {shown}: replaced {_plural(count_lines(old), 'line')} with "
        f"{_plural(count_lines(new), 'line')} at line {_line_at(text, start)}."
    )
    return PlannedEdit(shown=shown, data=data, diff=diff, summary=summary, original=original)


# --- shared with create ----------------------------------------------------------


def count_lines(text: str) -> int:
    """Lines as an editor counts them: "" is 0, "a" and "a\\n" are 1, "a\\nb" is 2."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def unified_diff(
    old: str, new: str, from_name: str, to_name: str, context: int = DIFF_CONTEXT
) -> str:
    """A git-style unified diff, with "\\ No newline at end of file" where it applies.

    Always has the ``---``/``+++`` header, even when there are no hunks.
    """
    out = [f"--- {from_name}", f"+++ {to_name}"]
    lines = list(
        difflib.unified_diff(_split_keepends(old), _split_keepends(new), n=context, lineterm="")
    )
    for line in lines[2:]:  # difflib's own ---/+++ header; ours is above
        if line.startswith("@@"):
            out.append(line)
        elif line.endswith("\n"):
            out.append(line.removesuffix("\n").removesuffix("\r"))
        else:
            out.append(line.removesuffix("\r"))
            out.append("\\ No newline at end of file")
    return "\n".join(out) + "\n"


# --- helpers ---------------------------------------------------------------------


def _split_keepends(text: str) -> list[str]:
    # Only \n ends a line (str.splitlines would also split on \f, \x1c, \u2028...).
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _uses_crlf(text: str) -> bool:
    crlf = text.count("\r\n")
    return crlf > 0 and crlf >= text.count("\n") - crlf


def _to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _find_all(text: str, needle: str, limit: int) -> list[int]:
    """Start offsets of up to ``limit`` occurrences, overlapping ones included."""
    found: list[int] = []
    start = text.find(needle)
    while start != -1 and len(found) < limit:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def _count_overlapping(text: str, needle: str) -> int:
    count = 0
    start = text.find(needle)
    while start != -1:
        count += 1
        start = text.find(needle, start + 1)
    return count


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _not_found_message(text: str, old_str: str, shown: str) -> str:
    message = f"old_str was not found in {shown}."
    old_lines = [line for line in old_str.split("\n") if line.strip()]
    if old_lines and all(_VIEW_PREFIX.match(line) for line in old_lines):
        return (
            message + " It seems to include the 'N. ' line numbers that view adds; "
            "leave those out and copy only the file's text."
        )
    line = _whitespace_insensitive_match(text, old_str)
    if line is not None:
        return (
            message + f" A match that differs only in whitespace exists at line {line}: check "
            "indentation (tabs vs spaces), trailing spaces and line breaks, and copy the text "
            "exactly as the file has it."
        )
    return (
        message + " It must match the file exactly, including whitespace and indentation; "
        "view the file to copy the current text."
    )


def _whitespace_insensitive_match(text: str, old_str: str) -> int | None:
    """The line where ``old_str`` matches once all whitespace is ignored, if it does."""
    squashed_old = "".join(ch for ch in old_str if not ch.isspace())
    if not squashed_old or len(text) > _MAX_HINT_CHARS:
        return None
    kept = [i for i, ch in enumerate(text) if not ch.isspace()]
    squashed = "".join(text[i] for i in kept)
    index = squashed.find(squashed_old)
    if index == -1:
        return None
    return _line_at(text, kept[index])
