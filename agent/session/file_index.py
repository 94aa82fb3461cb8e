"""The workspace's files for ``@`` completion, and a fuzzy match over them.

In a git work tree the list is git's (tracked plus untracked files that .gitignore
does not exclude). Elsewhere the tree is walked, skipping what the root .gitignore
names and version-control folders. Folders are listed too (``src/``) so a mention
can attach a whole directory.
"""

from __future__ import annotations

import fnmatch
import heapq
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

MAX_FILES = 200_000  # a home directory by mistake: stop listing, stay responsive
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "node_modules"})


def list_workspace(root: Path) -> list[str]:
    """Relative paths of the workspace's files, then of its folders (``dir/``)."""
    files = _git_files(root)
    if files is None:
        files = _walk(root, _ignore_patterns(root))
    folders: set[str] = set()
    for path in files:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folders.add("/".join(parts[:depth]) + "/")
    return files + sorted(folders)


def _git_files(root: Path) -> list[str] | None:
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", errors="replace").split("\0")
    # Deleted but still tracked files are not offered (asked of git: no stat per file).
    deleted = subprocess.run(
        ["git", "ls-files", "-z", "--deleted"],
        cwd=root,
        capture_output=True,
        timeout=20,
        check=False,
    )
    gone = set(deleted.stdout.decode("utf-8", errors="replace").split("\0"))
    return [n for n in dict.fromkeys(names) if n and n not in gone][:MAX_FILES]


def _ignore_patterns(root: Path) -> list[str]:
    try:
        lines = (root / ".gitignore").read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def _ignored(rel: str, name: str, is_dir: bool, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if pattern.startswith("!"):
            continue  # negations are not honoured without git: err on listing less
        dir_only = pattern.endswith("/")
        pat = pattern.rstrip("/")
        if dir_only and not is_dir:
            continue
        if "/" in pat:
            if fnmatch.fnmatch(rel, pat.lstrip("/")):
                return True
        elif fnmatch.fnmatch(name, pat):
            return True
    return False


def _walk(root: Path, patterns: list[str]) -> list[str]:
    out: list[str] = []
    for current, dirs, files in os.walk(root):
        base = os.path.relpath(current, root)
        prefix = "" if base == "." else base.replace(os.sep, "/") + "/"
        dirs[:] = sorted(
            d for d in dirs if d not in SKIP_DIRS and not _ignored(prefix + d, d, True, patterns)
        )
        for name in sorted(files):
            if not _ignored(prefix + name, name, False, patterns):
                out.append(prefix + name)
        if len(out) >= MAX_FILES:
            break
    return out


def fuzzy(query: str, paths: list[str], limit: int = 50) -> list[str]:
    """The paths matching ``query`` as a subsequence, best first.

    Better: the query found whole in the file name, then anywhere in the path, then
    its letters closer together; shorter paths break ties. The subsequence test is
    one regular expression per query, run in C over every path.
    """
    if not query:
        return sorted(paths, key=lambda p: (p.count("/"), len(p), p))[:limit]
    return [item[3] for item in heapq.nsmallest(limit, _scored(query, paths))]


def _scored(query: str, paths: list[str]) -> list[tuple[int, int, int, str]]:
    needle = query.lower()
    pattern = re.compile(".*?".join(re.escape(c) for c in needle), re.IGNORECASE)
    scored: list[tuple[int, int, int, str]] = []
    for path in paths:
        match = pattern.search(path)
        if match is None:
            continue
        lower = path.lower()
        name = lower.rstrip("/").rsplit("/", 1)[-1]
        if needle in name:
            rank = 0 if name.startswith(needle) else 1
        elif needle in lower:
            rank = 2
        else:
            rank = 3
        scored.append((rank, match.end() - match.start(), len(path), path))
    return scored


class FuzzyIndex:
    """:func:`fuzzy` for one list, typed a letter at a time: a query that extends the
    previous one is matched only against the previous matches (a subsequence of the
    longer query is one of the shorter)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._last: tuple[str, list[str]] | None = None

    def search(self, query: str, limit: int = 50) -> list[str]:
        if not query:
            self._last = None
            return fuzzy(query, self.paths, limit)
        base = self.paths
        if self._last is not None and query.lower().startswith(self._last[0]):
            base = self._last[1]
        scored = _scored(query, base)
        self._last = (query.lower(), [item[3] for item in scored])
        return [item[3] for item in heapq.nsmallest(limit, scored)]
