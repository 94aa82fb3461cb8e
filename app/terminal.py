"""What the command needs of its standard streams, checked before any view opens.

Full-screen views (the app, replay, watch) draw escape codes and read keys, so
both stdin and stdout must be a terminal (:func:`need_terminal`, which says what
to do instead); and a stdout whose reader has gone (``| head``) is pointed at
/dev/null so the exit does not fail flushing into it (:func:`silence_stdout`).
"""

from __future__ import annotations

import os
import sys
from typing import TextIO


def need_terminal(prog: str, instead: str) -> bool:
    """Full-screen views draw escape codes and read keys: both ends must be a terminal."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return True
    which = "stdout" if not sys.stdout.isatty() else "stdin"
    sys.stderr.write(f"{prog}: needs a terminal ({which} is not one); {instead}\n")
    return False


def silence_stdout(stdout: TextIO | None = None) -> None:
    """Point stdout (``stdout``, default ``sys.stdout``) at /dev/null: its reader is
    gone, and exit must not flush into it."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, (stdout or sys.stdout).fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real fd behind sys.stdout (a test's capture)
        pass
