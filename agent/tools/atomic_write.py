"""Whole-file writes that a crash or a kill cannot leave half done.

The bytes go to a temporary file in the target's directory, fsynced, which then
takes the target's name in one step. Where the filesystem offers it (Linux,
``O_TMPFILE``) the temporary file has no name while it is written, so a kill
mid-write leaves nothing behind; elsewhere it is a hidden ``.<name>.*.tmp``.

Every call works inside a directory descriptor (opened beneath the workspace root by
:mod:`agent.tools.beneath`) and names only entries of it, so a directory swapped for
a symlink meanwhile cannot send the write elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat

# O_TMPFILE where the platform has it; 0 makes the open below fail over to a named file.
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_NAMED = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_new_atomic(dir_fd: int, name: str, data: bytes) -> None:
    """Create ``name`` in ``dir_fd`` holding ``data``, all at once or not at all; never
    over a file (or a symlink).

    The temporary file is hard-linked in under the final name: a link, unlike a
    rename, fails if the name exists (FileExistsError).
    """
    fd = _unnamed(dir_fd)
    if fd is not None:
        try:
            _write_fd(fd, data)
            _link_unnamed(fd, dir_fd, name)
        finally:
            os.close(fd)
        return
    tmp = _hidden_name(name)
    fd = os.open(tmp, _NAMED, 0o666, dir_fd=dir_fd)
    try:
        try:
            _write_fd(fd, data)
        finally:
            os.close(fd)
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)


def write_atomic(dir_fd: int, name: str, data: bytes, like: os.stat_result) -> None:
    """Replace ``name`` in ``dir_fd`` with ``data`` in one rename, keeping the mode (and
    owner) of ``like``, the file being replaced.

    The name gets a new file, so another hard link to the old one keeps the old content:
    nothing is ever written into a file that could also live outside the workspace.
    """
    tmp = _hidden_name(name)
    fd = _unnamed(dir_fd)
    if fd is not None:
        try:
            _write_fd(fd, data)
            _keep_mode(fd, like)
            # Named only for the instant between the link and the rename.
            _link_unnamed(fd, dir_fd, tmp)
        finally:
            os.close(fd)
    else:
        fd = os.open(tmp, _NAMED, 0o600, dir_fd=dir_fd)
        try:
            try:
                _write_fd(fd, data)
                _keep_mode(fd, like)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    try:
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _unnamed(dir_fd: int) -> int | None:
    """An unnamed file in ``dir_fd`` (0o666 less the umask, as any new file), or None."""
    if not _O_TMPFILE:
        return None
    try:
        return os.open(".", os.O_WRONLY | os.O_CLOEXEC | _O_TMPFILE, 0o666, dir_fd=dir_fd)
    except OSError:
        return None


def _link_unnamed(fd: int, dir_fd: int, name: str) -> None:
    # With a dir fd os.link calls linkat(AT_SYMLINK_FOLLOW): it links the file
    # behind /proc/self/fd, not the magic link itself.
    os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)


def _hidden_name(name: str) -> str:
    token = secrets.token_hex(6)
    hidden = f".{name}.{token}.tmp"
    # A name near the 255-byte limit has no room for the decoration.
    return hidden if len(os.fsencode(hidden)) <= 255 else f".loopdeck-{token}.tmp"


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
