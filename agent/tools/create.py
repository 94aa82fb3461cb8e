"""``create``: write a new file (never an existing one), shown as a diff from /dev/null.

The file appears whole or not at all (see :mod:`agent.tools.atomic_write`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from agent.tools.atomic_write import write_new_atomic
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.edit import count_lines, unified_diff
from agent.tools.paths import display_path, resolve_in_workspace


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
    path: Path
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
    target = resolve_in_workspace(ctx, args.path)
    shown = display_path(ctx, target)
    _refuse_existing(target, args.path)
    try:
        data = args.file_text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"file_text cannot be written as UTF-8: {exc.reason}") from exc
    diff = unified_diff("", args.file_text, "/dev/null", f"b/{shown}")
    return PlannedCreate(
        path=target, shown=shown, data=data, diff=diff, lines=count_lines(args.file_text)
    )


def _refuse_existing(target: Path, asked: str) -> None:
    if target.is_dir():
        raise ToolError(f"{asked} is an existing directory; give a file path to create")
    if target.exists() or target.is_symlink():
        raise ToolError(
            f"{asked} already exists; create only makes new files. "
            "Use edit to change an existing file."
        )


def _write_new(planned: PlannedCreate, asked: str) -> None:
    try:
        planned.path.parent.mkdir(parents=True, exist_ok=True)
        write_new_atomic(planned.path, planned.data)
    except FileExistsError as exc:
        if planned.path.parent.is_dir():
            _refuse_existing(planned.path, asked)
        raise ToolError(f"cannot create {asked}: a parent path is a file, not a directory") from exc
    except NotADirectoryError as exc:
        raise ToolError(f"cannot create {asked}: a parent path is a file, not a directory") from exc
    except OSError as exc:
        raise ToolError(f"cannot create {asked}: {exc.strerror or exc}") from exc
