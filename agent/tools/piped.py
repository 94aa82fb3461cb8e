"""Running a child process for its output, read in batches rather than write by write.

ripgrep writes each file's results in a write of its own: over thousands of files,
waking for each one (an event-loop callback or a select round per write) costs about
as much as the search. Here a thread reads both pipes every 2 ms, and at once when the
child exits (a pidfd says so), letting the output gather in between in a pipe made
large enough (1 MiB) that the child never waits on it.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_PIPE_BYTES = 1 << 20  # Linux's default limit for an unprivileged pipe (fs.pipe-max-size)
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, Linux only
_GATHER_S = 0.002
_READ = 1 << 20


@dataclass(frozen=True, slots=True)
class Output:
    stdout: bytes
    stderr: bytes
    returncode: int


async def run_piped(cmd: Sequence[str | bytes], cwd: Path) -> Output:
    """Run ``cmd`` to the end and return what it wrote. Cancelling kills it."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        return await asyncio.to_thread(_collect, proc)
    finally:
        # Cancelled while the thread reads: once killed, the process's pipes end, and
        # the thread reaps it and returns.
        if proc.poll() is None:
            proc.kill()


def _collect(proc: subprocess.Popen[bytes]) -> Output:
    assert proc.stdout is not None and proc.stderr is not None
    with proc:  # closes the pipes and waits for the process on the way out
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        got: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
        exit_fd = _exit_fd(proc, out_fd)
        try:
            if exit_fd is None:
                reads = _read_as_written(out_fd, err_fd)
            else:
                reads = _read_gathered(out_fd, err_fd, exit_fd)
            for fd, chunk in reads:
                got[fd].append(chunk)
        finally:
            if exit_fd is not None:
                os.close(exit_fd)
        returncode = proc.wait()
    return Output(b"".join(got[out_fd]), b"".join(got[err_fd]), returncode)


def _read_as_written(*fds: int) -> Iterator[tuple[int, bytes]]:
    """Each pipe's chunks as they come, to the end of both."""
    with selectors.DefaultSelector() as selector:
        for fd in fds:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            for key, _events in selector.select():
                chunk = os.read(key.fd, _READ)
                if chunk:
                    yield key.fd, chunk
                else:
                    selector.unregister(key.fd)


def _read_gathered(out_fd: int, err_fd: int, exit_fd: int) -> Iterator[tuple[int, bytes]]:
    """The pipes' chunks, read every few milliseconds rather than at each write, and
    at once when the process ends (``exit_fd`` becomes readable then)."""
    with selectors.DefaultSelector() as selector:
        selector.register(exit_fd, selectors.EVENT_READ)
        for fd in (out_fd, err_fd):
            os.set_blocking(fd, False)
        while True:
            exited = bool(selector.select(_GATHER_S))
            for fd in (out_fd, err_fd):
                while chunk := _read_now(fd):
                    yield fd, chunk
            if exited:
                break
    # Ended: what is left in the pipes is there to read; an end-of-file then follows.
    yield from _read_as_written(out_fd, err_fd)


def _read_now(fd: int) -> bytes:
    try:
        return os.read(fd, _READ)
    except BlockingIOError:
        return b""


def _exit_fd(proc: subprocess.Popen[bytes], out_fd: int) -> int | None:
    """A descriptor that becomes readable when ``proc`` ends, if output may gather
    meanwhile in a pipe made large enough; else None (read each write as it comes)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if not sys.platform.startswith("linux") or pidfd_open is None:
        return None
    import fcntl

    try:
        fcntl.fcntl(out_fd, _F_SETPIPE_SZ, _PIPE_BYTES)
        fd: int = pidfd_open(proc.pid)
        return fd
    except OSError:  # EPERM past fs.pipe-max-size or the pipe quota; a kernel before 5.3
        return None
