"""Opening workspace paths through directory descriptors, so nothing outside is touched.

A path is checked and opened in one step, from a descriptor of the workspace root it
lies under: with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`` on Linux 5.6 and
later, else by walking one component at a time with ``O_NOFOLLOW`` and resolving
symlinks by hand without ever leaving the root. Reads and writes then go through the
descriptors that were opened, so a directory swapped for a symlink between a check and
a use cannot send them outside. Symlinks that stay beneath the root still work.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.tools.base import ToolContext, ToolError
from agent.tools.paths import resolve_in_workspace, workspace_roots

_SYS_OPENAT2 = 437  # the same number on every Linux architecture
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
# Above this many symlinks on one path the walk gives up, like the kernel (ELOOP).
_MAX_SYMLINKS = 40
_NAME_MAX = 255  # bytes in one file name, on Linux and macOS alike
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | _CLOEXEC  # O_NONBLOCK: a FIFO must not hang


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


@dataclass(frozen=True, slots=True)
class WorkspacePath:
    """A path inside one workspace root: ``rel`` is ``/``-separated, "" for the root."""

    root: Path
    rel: str

    @property
    def path(self) -> Path:
        return self.root / self.rel if self.rel else self.root

    @property
    def parent_rel(self) -> str:
        return self.rel.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.rel.rpartition("/")[2]


def locate(ctx: ToolContext, asked: str) -> WorkspacePath:
    """Which root ``asked`` lies under, and where beneath it; ToolError if outside or malformed.

    This only names the place: nothing may be trusted until it is opened beneath the root.
    """
    if "\0" in asked:
        raise ToolError(f"path {asked!r} contains a NUL byte; give a plain file path")
    try:
        os.fsencode(asked)
    except UnicodeError as exc:
        raise ToolError(f"path {asked!r} is not valid UTF-8; give a plain file path") from exc
    # Said before any lookup, so the permission preview fails the same way the write would.
    if any(len(os.fsencode(part)) > _NAME_MAX for part in asked.split("/")):
        raise os_failure(OSError(errno.ENAMETOOLONG, "name too long"), asked)
    resolved = resolve_in_workspace(ctx, asked)
    for root in workspace_roots(ctx):
        if resolved.is_relative_to(root):
            rel = resolved.relative_to(root).as_posix()
            return WorkspacePath(root, "" if rel == "." else rel)
    raise ToolError(f"path {asked} is outside the workspace {ctx.cwd}")  # pragma: no cover


# --- opening -----------------------------------------------------------------


@contextlib.contextmanager
def opened(where: WorkspacePath, asked: str, flags: int = READ_FLAGS) -> Iterator[int]:
    """A descriptor of ``where`` opened beneath its root; OS errors become ToolErrors."""
    with _root(where, asked) as root_fd:
        fd = _call(asked, open_beneath, root_fd, where.rel, flags)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def opened_parent(where: WorkspacePath, asked: str, *, create: bool = False) -> Iterator[int]:
    """The directory that holds ``where``, opened beneath its root (made first if ``create``)."""
    if not where.rel:
        raise ToolError(f"{asked} is a workspace directory, not a file")
    with _root(where, asked) as root_fd:
        if create:
            fd = _call(asked, _make_dirs, root_fd, where.parent_rel)
        else:
            fd = _call(asked, open_beneath, root_fd, where.parent_rel or ".", _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _root(where: WorkspacePath, asked: str) -> Iterator[int]:
    fd = _call(asked, os.open, where.root, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def open_beneath(root_fd: int, rel: str, flags: int, mode: int = 0o666) -> int:
    """Open ``rel`` relative to ``root_fd`` without resolving to anything outside it.

    An escape (``..`` above the root, an absolute symlink, a symlink leading out)
    fails with EXDEV, as openat2's RESOLVE_BENEATH does.
    """
    if rel.startswith("/"):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), rel)
    if openat2_available():
        for _ in range(8):  # EAGAIN: a rename raced a ".." lookup; the kernel asks to retry
            try:
                return _openat2(root_fd, rel or ".", flags, mode)
            except BlockingIOError:
                continue
    return _walk(root_fd, rel, flags, mode)


_openat2_state: bool | None = None


def openat2_available() -> bool:
    """Whether this kernel has openat2 (Linux >= 5.6, and not filtered by seccomp)."""
    global _openat2_state
    if _openat2_state is None:
        _openat2_state = False
        if sys.platform == "linux":
            probe = os.open("/", _DIR_FLAGS)
            try:
                os.close(_openat2(probe, ".", _DIR_FLAGS, 0))
                _openat2_state = True
            except OSError:
                pass
            finally:
                os.close(probe)
    return _openat2_state


def force_walk(enabled: bool) -> None:
    """Use the portable walk even where openat2 exists (tests cover both paths)."""
    global _openat2_state
    _openat2_state = None if not enabled else False


_libc: ctypes.CDLL | None = None


def _openat2(dir_fd: int, rel: str, flags: int, mode: int) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    tmpfile = getattr(os, "O_TMPFILE", 0)  # includes O_DIRECTORY's bit, so compare whole
    creating = flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile)
    resolve = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS
    # openat2 refuses a mode unless a file may be created.
    how = _OpenHow(flags | _CLOEXEC, mode if creating else 0, resolve)
    fd = _libc.syscall(
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(rel)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), rel)
    return int(fd)


def _walk(root_fd: int, rel: str, flags: int, mode: int) -> int:
    """openat2's RESOLVE_BENEATH by hand: one component at a time, symlinks read, not followed."""
    parts = deque(p for p in rel.split("/") if p not in ("", "."))
    stack = [os.dup(root_fd)]  # the directories from the root down to where the walk is
    links = 0
    try:
        while parts:
            name = parts.popleft()
            if name == "..":
                if len(stack) == 1:
                    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), rel)
                os.close(stack.pop())
                continue
            last = not parts
            try:
                if last:
                    return os.open(name, flags | os.O_NOFOLLOW | _CLOEXEC, mode, dir_fd=stack[-1])
                stack.append(os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=stack[-1]))
                continue
            except OSError as exc:
                target = _link_target(stack[-1], name, exc)
            links += 1
            if links > _MAX_SYMLINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), rel)
            if target.startswith("/"):
                raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), rel)
            parts.extendleft(reversed([p for p in target.split("/") if p not in ("", ".")]))
        return os.open(".", flags | _CLOEXEC, mode, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def _link_target(dir_fd: int, name: str, failure: OSError) -> str:
    """What the symlink ``name`` points to; re-raises ``failure`` if it is not a symlink."""
    if failure.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        raise failure
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        raise failure from None


def _make_dirs(root_fd: int, rel: str) -> int:
    """Open directory ``rel`` beneath the root, making each missing component on the way."""
    fd = os.dup(root_fd)
    done: list[str] = []
    try:
        for part in (p for p in rel.split("/") if p not in ("", ".")):
            done.append(part)
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
            # Reopened from the root, so a symlinked parent inside the workspace still works
            # and one swapped in meanwhile is resolved beneath the root all the same.
            new = open_beneath(root_fd, "/".join(done), _DIR_FLAGS)
            os.close(fd)
            fd = new
        return fd
    except BaseException:
        os.close(fd)
        raise


def walk_beneath(top: int) -> Iterator[tuple[str, list[str], list[str], int]]:
    """``os.walk`` from the open directory ``top``: (relative dir, dirs, files, dir fd).

    ``os.fwalk`` opens each directory relative to its parent's descriptor and checks it is
    the directory that was listed, so a directory swapped for a symlink is not entered.
    Symlinks are never descended into; prune ``dirs`` in place as with ``os.walk``.
    """
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=top):
        yield os.path.normpath(dirpath), dirnames, filenames, dir_fd


def read_regular(dir_fd: int, name: str) -> bytes | None:
    """The bytes of the regular file ``name`` in ``dir_fd``; None for a symlink, a special
    file or one that cannot be read."""
    try:
        fd = os.open(name, READ_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return f.read()
        except OSError:
            return None


# --- errors ------------------------------------------------------------------


def _call(asked: str, fn: Callable[..., int], *args: object) -> int:
    try:
        return fn(*args)
    except OSError as exc:
        raise os_failure(exc, asked) from exc
    except ValueError as exc:  # a NUL byte or an unencodable name
        raise ToolError(f"invalid path {asked!r}: {exc}") from exc


class PathError(ToolError):
    """An OS refusal of a path, said for the model; ``errno`` says which."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message)
        self.errno = code


def os_failure(exc: OSError, asked: str) -> PathError:
    """The error the model reads for an OS refusal of the path ``asked``."""
    return PathError(_said(exc, asked), exc.errno)


def _said(exc: OSError, asked: str) -> str:
    match exc.errno:
        case errno.ENOENT:
            return f"path {asked} does not exist"
        case errno.EXDEV:
            return (
                f"path {asked} leads outside the workspace through a symbolic link; "
                "add its target with --add-dir"
            )
        case errno.ELOOP:
            return f"path {asked} has a symbolic link loop or a symbolic link in place"
        case errno.ENAMETOOLONG:
            return (
                f"path {asked} is too long: each name may be at most 255 bytes "
                "and the whole path 4096"
            )
        case errno.ENOTDIR:
            return f"path {asked}: a parent path is a file, not a directory"
        case errno.EISDIR:
            return f"{asked} is a directory, not a file"
        case errno.EACCES | errno.EPERM:
            return f"permission denied for {asked}"
        case errno.EEXIST:
            return (
                f"{asked} already exists; create only makes new files. "
                "Use edit to change an existing file."
            )
    return f"cannot use {asked}: {exc.strerror or exc}"
