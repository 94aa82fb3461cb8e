"""Whole-file writes that a crash or a kill cannot leave half done.

The bytes go to a temporary file in the target's directory, fsynced, which then
takes the target's name in one step. Where the filesystem offers it (Linux,
``O_TMPFILE``) the temporary file has no name while it is written, so a kill
mid-write leaves nothing behind; elsewhere it is a hidden ``.<name>.*.tmp``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

# O_TMPFILE where the platform has it; 0 makes the open below fail over to a named file.
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)


def write_new_atomic(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``, all at once or not at all; never over a file.

    The temporary file is hard-linked in under the final name: a link, unlike a
    rename, fails if the name exists (FileExistsError).
    """
    fd = _unnamed(path.parent)
    if fd is not None:
        try:
            _write_fd(fd, data)
            _link_unnamed(fd, path)
        finally:
            os.close(fd)
        return
    tmp = _hidden_name(path)
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


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one rename, keeping its mode (and owner)."""
    st = path.stat()
    fd = _unnamed(path.parent)
    if fd is not None:
        tmp = _hidden_name(path)
        try:
            _write_fd(fd, data)
            _keep_mode(fd, st)
            # Named only for the instant between the link and the rename.
            _link_unnamed(fd, tmp)
        finally:
            os.close(fd)
    else:
        tmp = _hidden_name(path)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            try:
                _write_fd(fd, data)
                _keep_mode(fd, st)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _unnamed(folder: Path) -> int | None:
    """An unnamed file in ``folder`` (0o666 less the umask, as any new file), or None."""
    try:
        return os.open(folder, os.O_WRONLY | os.O_CLOEXEC | _O_TMPFILE, 0o666)
    except OSError:
        return None


def _link_unnamed(fd: int, path: Path) -> None:
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        # With a dir fd os.link calls linkat(AT_SYMLINK_FOLLOW): it links the file
        # behind /proc/self/fd, not the magic link itself.
        os.link(f"/proc/self/fd/{fd}", path.name, dst_dir_fd=folder, follow_symlinks=True)
    finally:
        os.close(folder)


def _hidden_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    written = 0
    while written < len(data):
        written += os.write(fd, view[written:])
    os.fsync(fd)


def _keep_mode(fd: int, st: os.stat_result) -> None:
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(OSError):
            os.fchown(fd, st.st_uid, st.st_gid)
