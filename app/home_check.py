"""Is ``$LOOPDECK_HOME`` usable? Checked before anything opens, so that a home that
is a file, sits under a file, or cannot be written is one line and exit 2, not a
traceback from deep inside the first write."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from agent.log.places import loopdeck_home, make_private_dirs

FIX = "set LOOPDECK_HOME to a writable directory"


def home_problem(home: Path, *, write: bool) -> str | None:
    """What is wrong with ``home`` (None: nothing). ``write``: sessions will be written."""
    for part in (home, *home.parents):
        try:
            if not os.path.lexists(part):
                continue
            if not part.is_dir():
                return f"{part} is not a directory"
        except OSError as exc:
            return f"{part}: {exc.strerror or exc}"
        break  # the nearest existing folder is a folder
    if not write:
        return None
    folder = home / "session-state"
    try:
        make_private_dirs(folder)
        # Root can create in a chmod'd folder; a read-only filesystem still says no.
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-test-")
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
    except OSError as exc:
        where = exc.filename or folder
        return f"cannot write {where}: {exc.strerror or exc}"
    return None


def home_error(*, write: bool) -> str | None:
    """The one-line message for an unusable home, or None."""
    home = loopdeck_home()
    problem = home_problem(home, write=write)
    if problem is None:
        return None
    return f"cannot use the session folder {home} ({problem}); {FIX}"
