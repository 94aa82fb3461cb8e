"""Landlock over its three syscalls (ctypes), and the wrapper that confines a command.

This file imports nothing but the standard library, because the bash tool runs it
as a script (``python -I -S landlock.py --mode … -- /bin/bash -c CMD``): the
wrapper restricts itself, then execs the command, so the rules hold for the command
and everything it starts, and never for loopdeck itself. Doing it in a
``preexec_fn`` instead would run ctypes between ``fork`` and ``exec`` of a
threaded process, which can deadlock.

Rules are best effort for the kernel's ABI: what an older kernel cannot restrict
(truncate before ABI 3, TCP before ABI 4, abstract sockets before ABI 6) is left
unrestricted rather than refused. A kernel without Landlock makes the wrapper
refuse to run the command (exit 126): loopdeck probes first and does not wrap
commands there, so reaching that point means something changed underneath.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Sequence

# The syscall numbers are the same on every architecture loopdeck runs on
# (they were added after the tables were unified).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (include/uapi/linux/landlock.h).
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
# Network rights (ABI 4) and scopes (ABI 6).
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0

READ = EXECUTE | READ_FILE | READ_DIR
# Rights that may be granted on a file that is not a directory.
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE

# What a shell writes outside any workspace: the null sink and friends. Files, so
# only file rights apply; directories (shared memory, pseudo-terminals) get all.
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
DEVICE_DIRS = ("/dev/shm", "/dev/pts")

MODES = ("read-only", "workspace-write")
EXIT_REFUSED = 126


class LandlockError(OSError):
    """Landlock cannot be used here; ``str()`` says why in words."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _syscall(number: int, *args: object) -> int:
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    result = int(libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI. Raises :class:`LandlockError` saying why there is none."""
    try:
        return _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    except OSError as exc:
        raise LandlockError(exc.errno, _why(exc.errno)) from None


def _why(code: int | None) -> str:
    if code == errno.ENOSYS:
        return (
            "the kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK, "
            "or older than 5.13)"
        )
    if code == errno.EOPNOTSUPP:
        return "Landlock is turned off in this kernel (add landlock to the lsm= boot parameter)"
    if code == errno.EPERM:
        return "Landlock syscalls are blocked here (a seccomp filter, e.g. a container's)"
    return f"Landlock is unavailable: {os.strerror(code or 0)}"


def fs_rights(abi: int) -> int:
    """Every filesystem right the kernel with ``abi`` can restrict."""
    rights = (MAKE_SYM << 1) - 1  # EXECUTE … MAKE_SYM, ABI 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def restrict(
    mode: str,
    writable: Sequence[str],
    network: bool,
    abi: int | None = None,
    hidden: Sequence[str] = (),
) -> None:
    """Confine this process (and what it execs) to ``mode``; irreversible.

    Every path may be read and executed but the files beneath ``hidden`` (see
    :func:`read_roots`); only ``writable`` (and the device files a shell needs) may
    be written, and nothing in ``read-only``. Without ``network`` TCP bind and
    connect are refused (ABI 4+), as is reaching abstract Unix sockets outside the
    sandbox (ABI 6+). Missing paths are skipped.
    """
    if mode not in MODES:
        raise ValueError(f"unknown sandbox mode {mode!r}")
    abi = abi_version() if abi is None else abi
    handled = fs_rights(abi)
    attr = _RulesetAttr(handled_access_fs=handled)
    size = 8
    if not network and abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if not network and abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET
        size = 24
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    try:
        if hidden:
            # Every directory may be listed; files may be read and run only beneath
            # the roots that leave the hidden paths out.
            _allow(ruleset, "/", READ_DIR)
            for root in read_roots(hidden):
                _allow(ruleset, root, READ)
        else:
            _allow(ruleset, "/", READ)
        for device in DEVICE_FILES:
            _allow(ruleset, device, (READ_FILE | WRITE_FILE | TRUNCATE) & handled)
        for directory in DEVICE_DIRS:
            _allow(ruleset, directory, handled)
        if mode == "workspace-write":
            for path in writable:
                _allow(ruleset, path, handled)
        libc = _libc()
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(code)}")
        _syscall(_SYS_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def read_roots(hidden: Sequence[str]) -> list[str]:
    """Where reading may be granted so that no file beneath a ``hidden`` path can be
    read. Landlock grants and never denies, and a right on a directory holds for
    everything beneath it; so "/" is split around each hidden path: on the way down
    to it, each sibling of each component is a root, the hidden path and the
    directories above it are not. A hidden path that does not exist yet is left out
    by its name, so it stays hidden if it appears later. A symlink that leads into a
    hidden path, or above one, is left out too (granting it would grant its target).
    """
    targets = {os.path.realpath(h) for h in hidden}
    targets.discard("/")  # hiding everything is not a sandbox mode
    if not targets:
        return ["/"]
    roots: list[str] = []

    def split(directory: str) -> None:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return  # unreadable here: nothing beneath it is granted
        for name in names:
            child = os.path.join(directory, name)
            if child in targets:
                continue
            if any(_within(target, child) for target in targets):
                split(child)
                continue
            real = os.path.realpath(child)
            if any(_within(real, t) or _within(t, real) for t in targets):
                continue
            roots.append(child)

    split("/")
    return roots


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # nothing there to allow (no /dev/shm, an --add-dir that went away)
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        if rights:
            attr = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
            _syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(attr), 0)
    finally:
        os.close(fd)


def wrapper_args(
    mode: str, writable: Sequence[str], network: bool, hidden: Sequence[str] = ()
) -> list[str]:
    """The wrapper's own arguments; the command follows after ``--``."""
    args = ["--mode", mode]
    for path in writable:
        args += ["--write", path]
    for path in hidden:
        args += ["--hide", path]
    if not network:
        args.append("--no-network")
    return args


def _parse(argv: list[str]) -> tuple[str, list[str], bool, list[str], list[str]]:
    mode, writable, hidden, network = "", [], [], True
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag = argv[i]
        if flag == "--no-network":
            network = False
            i += 1
        elif flag in ("--mode", "--write", "--hide") and i + 1 < len(argv):
            if flag == "--mode":
                mode = argv[i + 1]
            elif flag == "--write":
                writable.append(argv[i + 1])
            else:
                hidden.append(argv[i + 1])
            i += 2
        else:
            raise ValueError(f"unknown argument {flag!r}")
    command = argv[i + 1 :]
    if not command:
        raise ValueError("no command after --")
    return mode, writable, network, command, hidden


def main(argv: list[str]) -> int:
    """Restrict, then exec the command; on any failure refuse to run it (exit 126)."""
    try:
        mode, writable, network, command, hidden = _parse(argv)
        restrict(mode, writable, network, hidden=hidden)
        os.execv(command[0], command)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"loopdeck sandbox: the command was not run: {exc}\n")
    return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
