"""What every benchmark records about the machine and the commit it measured."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        nproc = os.cpu_count() or 0
    return {
        "nproc": nproc,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "tmpdir": tempfile.gettempdir(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": git_describe(),
        "loadavg_start": load_average(),
    }


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def git_describe() -> str | None:
    """The commit measured, with ``-dirty`` when the working tree has changes."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None
