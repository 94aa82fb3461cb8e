"""``create``: write a new file (never an existing one), shown as a diff from /dev/null.

The file appears whole or not at all (see :mod:`agent.tools.atomic_write`).
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from dataclasses import dataclass

from pydantic import Field

from agent.tools.atomic_write import write_new_atomic
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.beneath import (
    PathError,
    WorkspacePath,
    locate,
    opened_parent,
    os_failure,
)
from agent.tools.edit import count_lines, unified_diff
from agent.tools.paths import display_path


class CreateArgs(ToolArgs):
    path: str = Field(
        description=(
            "Path of the new file, relative to the working directory. Missing parent "
            "directories are created. The file must not exist yet."
        )
    )
    file_text: str = Field(description="The full content of the new file.")


@dataclass(frozen=True, slots=True)
class PlannedCreate:
    where: WorkspacePath
    shown: str
    data: bytes
    diff: str
    lines: int


class CreateTool(Tool):
    name = "create"
    description = (
        "Create a new file with the given content; missing parent directories are created. "
        "Fails if the file already exists: use edit to change an existing file."
    )
    kind = "write"
    Args = CreateArgs

    def preview(self, args: CreateArgs, ctx: ToolContext) -> str:
        """The diff from /dev/null that ``run`` would apply, without writing anything."""
        return plan_create(args, ctx).diff

    async def run(self, args: CreateArgs, ctx: ToolContext) -> ToolResult:
        planned = await asyncio.to_thread(plan_create, args, ctx)
        await asyncio.to_thread(_write_new, planned, args.path)
        lines = "1 line" if planned.lines == 1 else f"{planned.lines} lines"
        return ToolResult(
            content=f"Created file {planned.shown} with {lines}.",
            detailed_content=planned.diff,
        )


def plan_create(args: CreateArgs, ctx: ToolContext) -> PlannedCreate:
    where = locate(ctx, args.path)
    shown = display_path(ctx, where.path)
    _refuse_existing(where, args.path)
    try:
        data = args.file_text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"file_text cannot be written as UTF-8: {exc.reason}") from exc
    diff = unified_diff("", args.file_text, "/dev/null", f"b/{shown}")
    return PlannedCreate(
        where=where, shown=shown, data=data, diff=diff, lines=count_lines(args.file_text)
    )


def _refuse_existing(where: WorkspacePath, asked: str) -> None:
    """The friendly refusal for a path already taken; the write itself never overwrites."""
    try:
        with opened_parent(where, asked) as parent:
            st = os.stat(where.name, dir_fd=parent, follow_symlinks=False)
    except PathError as exc:
        if exc.errno == errno.ENOENT:
            return  # no parent yet: the write makes it
        raise
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return
        raise os_failure(exc, asked) from exc
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{asked} is an existing directory; give a file path to create")
    raise os_failure(FileExistsError(errno.EEXIST, "exists"), asked)


def _write_new(planned: PlannedCreate, asked: str) -> None:
    # The parent is opened (and made) beneath the workspace root, and the file linked in
    # there whole: nothing that appeared since the check is overwritten.
    with opened_parent(planned.where, asked, create=True) as parent:
        try:
            write_new_atomic(parent, planned.where.name, planned.data)
        except FileExistsError:
            _refuse_existing(planned.where, asked)
            raise ToolError(f"{asked} already exists; create only makes new files.") from None
        except OSError as exc:
            raise os_failure(exc, asked) from exc
