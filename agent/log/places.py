"""Where sessions live: loopdeck's home and Copilot's, the files of a session's folder,
and folders made private (0700) as they are created. Imports nothing of agent."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

EVENTS_FILE = "events.jsonl"
META_FILE = "session.json"


def loopdeck_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("LOOPDECK_HOME")
    return Path(home).expanduser() if home else Path.home() / ".loopdeck"


def copilot_home(env: Mapping[str, str] | None = None) -> Path:
    """GitHub Copilot CLI's home: read (listed, replayed, forked), never written."""
    env = os.environ if env is None else env
    home = env.get("COPILOT_HOME")
    return Path(home).expanduser() if home else Path.home() / ".copilot"


def make_private_dirs(path: Path) -> None:
    """``mkdir -p`` where every folder it creates is 0700 (``Path.mkdir`` gives the
    parents the umask's mode)."""
    missing: list[Path] = []
    for part in (path, *path.parents):
        if part.exists():
            break
        missing.append(part)
    for part in reversed(missing):
        part.mkdir(exist_ok=True, mode=0o700)
