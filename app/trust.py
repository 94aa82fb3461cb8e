"""Trusted folders: where loopdeck may load the workspace's own MCP servers
(``.mcp.json``, ``.github/mcp.json``), whose commands would otherwise run just
because a repository was cloned and opened.

The answers live in ``trusted-folders.json`` in loopdeck's config folder
(``{"trusted": [...], "declined": [...]}``): a folder is trusted when it or a folder
above it is listed as trusted. The terminal app asks once per folder (the
repository's root) before it starts; ``-p`` never asks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

FILE_NAME = "trusted-folders.json"
Decision = Literal["trusted", "declined"]


class TrustedFolders:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of_user(cls, env: Mapping[str, str] | None = None) -> TrustedFolders:
        from agent.models.select import user_config_dir

        return cls(user_config_dir(os.environ if env is None else env) / FILE_NAME)

    def decision(self, folder: Path) -> Decision | None:
        """``trusted`` (it or a folder above it), ``declined`` (itself), or not asked."""
        folder = folder.resolve()
        lists = self._read()
        if any(folder.is_relative_to(Path(p)) for p in lists["trusted"]):
            return "trusted"
        if str(folder) in lists["declined"]:
            return "declined"
        return None

    def record(self, folder: Path, decision: Decision) -> None:
        lists = self._read()
        key = str(folder.resolve())
        for name in ("trusted", "declined"):
            if key in lists[name]:
                lists[name].remove(key)
        lists[decision].append(key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(lists, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    def _read(self) -> dict[str, list[str]]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = {}  # none yet, or unreadable: nothing trusted
        lists: dict[str, list[str]] = {"trusted": [], "declined": []}
        if isinstance(raw, dict):
            for name in lists:
                value = raw.get(name)
                if isinstance(value, list):
                    lists[name] = [str(v) for v in value if isinstance(v, str)]
        return lists
