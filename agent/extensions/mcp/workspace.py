"""The workspace's MCP configuration files, as Copilot CLI finds them: ``.mcp.json``
and ``.github/mcp.json`` in the working directory and each folder above it up to the
repository's root (the folder holding ``.git``; outside a repository, the working
directory alone). Listed farthest first, so that a closer file, merged later, wins.
``.vscode/mcp.json`` is VS Code's (key ``servers``) and is not read.
"""

from __future__ import annotations

from pathlib import Path

FILE_NAMES = (".mcp.json", ".github/mcp.json")


def repository_root(cwd: Path) -> Path | None:
    """The closest folder at or above ``cwd`` that holds ``.git``; None outside one."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def workspace_root(cwd: Path) -> Path:
    """The folder a user trusts for the workspace's MCP servers: the repository's
    root, or ``cwd`` outside a repository."""
    cwd = cwd.resolve()
    return repository_root(cwd) or cwd


def workspace_files(cwd: Path) -> list[Path]:
    """The workspace's MCP files that exist, farthest from ``cwd`` first."""
    cwd = cwd.resolve()
    root = workspace_root(cwd)
    folders = [cwd]
    for folder in cwd.parents:
        if not folder.is_relative_to(root):
            break
        folders.append(folder)
    found: list[Path] = []
    for folder in reversed(folders):
        # In one folder, .github/mcp.json is read after .mcp.json (so it wins there).
        found += [folder / name for name in FILE_NAMES if (folder / name).is_file()]
    return found
