"""The real app in a pseudo-terminal, for tests that need a terminal of their own."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType


class AppInPty:
    """``python ARGV…`` run in ``cwd`` on a new pseudo-terminal. Its output is read
    into :attr:`seen` (read, or the app would block writing to a full terminal);
    leaving the ``with`` kills it if it has not exited, and closes the terminal."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        import pty

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec at once, nothing of pytest runs here
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, *argv], env)
        self.seen = b""
        self.status: int | None = None  # the wait status, once reaped

    def read_until(self, done: Callable[[bytes], bool], timeout: float) -> None:
        """Read until ``done(seen)``, the terminal closes, or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while not done(self.seen) and time.monotonic() < deadline:
            if not self._read(0.2):
                return

    def wait_exit(self, timeout: float) -> int | None:
        """Keep reading until the app exits; its wait status, or None at ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.status is None and time.monotonic() < deadline:
            self._read(0.1)
            reaped, code = os.waitpid(self.pid, os.WNOHANG)
            self.status = code if reaped else None
        return self.status

    def _read(self, wait: float) -> bool:
        """One read if output is waiting; False once the terminal is closed."""
        if select.select([self.fd], [], [], wait)[0]:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # the child closed the terminal
                return False
            if not chunk:
                return False
            self.seen += chunk
        return True

    def __enter__(self) -> AppInPty:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.status is None:  # not reaped: something failed before it exited
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        os.close(self.fd)
