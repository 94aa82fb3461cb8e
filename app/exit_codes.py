"""The exit codes of the ``loopdeck`` command, shared by every way it runs.

The app, ``-p``, the subcommands and the SDK runtime all end with one of these, so
a script can tell a usage slip (2) from a failed run (1), an autopilot that hit
its continuation cap (3) and an interrupt (130, as a shell reports SIGINT).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_AUTOPILOT_CAP = 3
EXIT_ABORTED = 130
