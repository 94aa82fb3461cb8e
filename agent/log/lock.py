"""One writer per session: an advisory lock on ``writer.lock`` in the session folder.

Two processes appending to one ``events.jsonl`` fork its parent chain, so a
session is written by one process at a time. The writer holds an exclusive
``flock`` on ``writer.lock`` from the moment it creates or resumes the session
until it closes it; the OS drops the lock when the process dies, however it dies,
so a lock is never left behind. The file also names its holder (pid, host,
command line) for the message a refused writer prints; those details are only
informational: the flock decides, so a stale file or a reused pid cannot block
anyone. Readers (watch, replay, export, listings) never take the lock.

The file is never removed while in use: removing it would let a second process
lock a new file of the same name while the first still holds the old one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agent.log.places import make_private_dirs
from agent.log.store import SessionStore, pid_alive

LOCK_FILE = "writer.lock"
_COMMAND_CHARS = 160
# A writer holding the flock writes its details straight after; a refused writer
# that finds them missing or stale gives it this long before it names nobody.
_DETAILS_WAIT = 1.0


@dataclass(frozen=True, slots=True)
class LockHolder:
    pid: int
    host: str
    command: str = ""
    since: str = ""
    # When the process started (Linux), so a reused pid is not taken for the holder.
    started: str | None = None

    def describe(self) -> str:
        where = "" if self.host == socket.gethostname() else f" on {self.host}"
        parts = [f"pid {self.pid}{where}"]
        if self.command:
            parts.append(self.command)
        if self.since:
            parts.append(f"since {_local_time(self.since)}")
        return ", ".join(parts)

    def alive(self) -> bool:
        """Whether the process that wrote this still runs (always true for another host:
        it cannot be checked from here)."""
        if self.host != socket.gethostname():
            return True
        if not pid_alive(self.pid):
            return False
        return self.started is None or _process_start(self.pid) in (None, self.started)


class SessionInUse(Exception):
    """Another process writes this session; the message names it."""

    def __init__(self, session_id: str, holder: LockHolder | None) -> None:
        self.session_id = session_id
        self.holder = holder
        who = holder.describe() if holder is not None else "its details are not known"
        short = session_id[:8]
        super().__init__(
            f"session {short} is in use by another loopdeck process ({who}). "
            "One process writes a session at a time: finish or stop that one first "
            f"(loopdeck watch {short} follows it meanwhile)."
        )


class SessionLock:
    """The held lock of one session; :meth:`release` (or process death) frees it."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, folder: Path, session_id: str, *, create: bool = False) -> SessionLock:
        """Lock ``folder``'s session for this process, or raise :class:`SessionInUse`.

        ``create`` makes the folder (0700) for a new session; for an existing one a
        missing folder is an error (FileNotFoundError).
        """
        if create:
            make_private_dirs(folder)
        path = folder / LOCK_FILE
        while True:
            # Not inherited by tools' subprocesses (os.open's fds are close-on-exec):
            # a background job left running must not keep the session locked.
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SessionInUse(session_id, _wait_for_holder(path)) from None
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, path):
                break
            # The file was replaced between open and lock (the session was deleted and
            # made again): the lock that counts is on the file there now.
            os.close(fd)
        lock = cls(fd, path)
        with contextlib.suppress(OSError):  # they only serve another process's message
            lock._write_details()
        return lock

    def _write_details(self) -> None:
        assert self._fd is not None
        details = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": _command_line(),
            "since": datetime.now().astimezone().isoformat(timespec="seconds"),
            "started": _process_start(os.getpid()),
        }
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, json.dumps(details).encode("utf-8"), 0)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Free the lock (again is a no-op). The details are cleared first, so a
        listing never names a process that let go."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_holder(folder: Path) -> LockHolder | None:
    """The details in ``folder``'s lock file (None when empty, missing or damaged).

    Reads only: says who wrote them last, not whether they still hold the lock.
    """
    try:
        data = json.loads((folder / LOCK_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    pid, host = data.get("pid"), data.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not isinstance(host, str):
        return None
    started = data.get("started")
    return LockHolder(
        pid=pid,
        host=host,
        command=_text(data.get("command")),
        since=_text(data.get("since")),
        started=started if isinstance(started, str) else None,
    )


def in_use_by(folder: Path) -> LockHolder | None:
    """For listings: the live process that holds ``folder``'s session, if any.

    Judged from the details alone (a listing never takes the lock): the file is
    cleared on release, and a holder that died is recognised by its pid (and its
    start time, in case the pid was reused).
    """
    holder = read_holder(folder)
    return holder if holder is not None and holder.alive() else None


def _wait_for_holder(path: Path) -> LockHolder | None:
    """The holder's details, waiting briefly for a writer that has just locked."""
    deadline = time.monotonic() + _DETAILS_WAIT
    while True:
        holder = read_holder(path.parent)
        if holder is not None and holder.alive():
            return holder
        if time.monotonic() >= deadline:
            return None  # stale details name a process that is gone: name nobody
        time.sleep(0.01)


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def _command_line() -> str:
    argv = [Path(sys.argv[0]).name if sys.argv else "loopdeck", *sys.argv[1:]]
    text = shlex.join(argv)
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 1] + "…"


def _process_start(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks after boot (Linux), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _local_time(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%H:%M:%S")
    except (ValueError, OverflowError):
        return stamp


def delete_session(store: SessionStore, session_id: str) -> None:
    """Remove a session's folder, holding its lock meanwhile: a session a process is
    writing is not pulled from under it (SessionInUse). A folder that leads out of the
    store is refused (ForeignSession) before its lock file could be made there."""
    store.check_owned(session_id)
    lock = SessionLock.acquire(store.session_dir(session_id), session_id)
    try:
        store.delete(session_id)
    finally:
        lock.release()
