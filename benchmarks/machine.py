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


# The start of the cold-start child scripts: the clock, the parameters, the originals
# of the App methods the scripts wrap.
HEADLESS_CHILD_HEAD = r"""
import json, sys, time
_t_code = time.monotonic()
_p = json.loads(sys.argv[1])
from textual.app import App
from textual._compositor import CompositorUpdate
_marks = {"code": _t_code}
_orig_display = App._display
_orig_run = App.run
"""

# The shared middle of the cold-start child scripts (run as ``python -c`` with a JSON
# argv[1] holding ``variant``, ``size`` and ``timeout``): force App.run headless at
# that size, kill the child if it hangs, install the script's ``_display`` hook, and
# run a one-widget Textual app for the "bare-textual" floor. The script goes on with
# the indented body of the final ``else:``, which runs loopdeck.
HEADLESS_CHILD_RUN = r"""def _run(self, *args, **kwargs):
    kwargs["headless"] = True
    kwargs["size"] = tuple(_p["size"])
    return _orig_run(self, *args, **kwargs)

import os, threading
_watchdog = threading.Timer(_p["timeout"], lambda: os._exit(3))
_watchdog.daemon = True
_watchdog.start()
App._display = _display
App.run = _run
# With App.run forced headless no terminal is needed: loopdeck's own check stands down.
import app.cli as _cli
_cli.need_terminal = lambda prog, instead: True

if _p["variant"] == "bare-textual":
    from textual.widgets import Static
    class Bare(App):
        def compose(self):
            yield Static("loopdeck benchmark: bare Textual app")
    Bare().run()
else:
"""
