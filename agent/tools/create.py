"""``create``: write a new file (never an existing one), shown as a diff from /dev/null."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

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


def write_new_atomic(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``, all at once or not at all; never over a file.

    The bytes go to a temporary file in the same directory, fsynced, which is then
    linked in under the final name: a hard link, unlike a rename, fails if the name
    exists (FileExistsError). Where the filesystem offers it (Linux, O_TMPFILE) the
    temporary file has no name at all, so a kill mid-write leaves nothing behind;
    elsewhere it is a hidden ``.<name>.*.tmp`` that is removed as soon as it is linked.
    """
    # 0o666: the kernel applies the umask, as for any new file.
    try:
        fd = os.open(path.parent, os.O_WRONLY | os.O_CLOEXEC | _O_TMPFILE, 0o666)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            _write_fd(fd, data)
            folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                # With a dir fd, os.link calls linkat(AT_SYMLINK_FOLLOW): it links the
                # file behind /proc/self/fd, not the magic link itself.
                os.link(f"/proc/self/fd/{fd}", path.name, dst_dir_fd=folder, follow_symlinks=True)
            finally:
                os.close(folder)
        finally:
            os.close(fd)
        return
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            _write_fd(fd, data)
        finally:
            os.close(fd)
        os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# O_TMPFILE where the platform has it; 0 makes the open above fail over to a named temporary file.
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    written = 0
    while written < len(data):
        written += os.write(fd, view[written:])
    os.fsync(fd)

