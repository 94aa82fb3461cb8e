"""Keeping tool paths inside the workspace, and showing them relative to it."""

from __future__ import annotations

import functools
from pathlib import Path

from agent.tools.base import ToolContext, ToolError

# Directories no search descends into: VCS data, environments and caches are
# noise to the model and slow to walk.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)


def workspace_roots(ctx: ToolContext) -> list[Path]:
    return [ctx.cwd.resolve(), *(d.resolve() for d in ctx.extra_dirs)]


def resolve_in_workspace(ctx: ToolContext, path: str) -> Path:
    """Resolve ``path`` (relative to ``ctx.cwd``) and refuse anything outside the workspace.

    Symlinks are followed first, so a link that points outside is refused too.
    """
    if not path.strip():
        raise ToolError("path is empty")
    try:
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = ctx.cwd / candidate
        resolved = candidate.resolve()
    except (OSError, ValueError, RuntimeError) as exc:
        # ValueError: embedded NUL byte; RuntimeError: symlink loop.
        raise ToolError(f"invalid path {path}: {exc}") from exc
    if not any(resolved.is_relative_to(root) for root in workspace_roots(ctx)):
        raise ToolError(f"path {path} is outside the workspace {ctx.cwd}; add it with --add-dir")
    hidden = next((h for h in ctx.hidden if resolved.is_relative_to(h)), None)
    if hidden is not None:
        raise ToolError(
            f"path {path} is hidden from the agent: {hidden} is one of the sandbox's hidden "
            "paths (credentials, loopdeck's and Copilot's own files); the user can change "
            "them with sandbox_hidden in config.toml"
        )
    return resolved


def hidden_beneath(ctx: ToolContext, folder: Path) -> bool:
    """Whether a hidden path lies beneath ``folder`` (a search there must skip it)."""
    return any(h.is_relative_to(folder) and h != folder for h in ctx.hidden)


def hidden_names(ctx: ToolContext, folder: Path) -> frozenset[str]:
    """The entries of ``folder`` that are hidden paths: a walk prunes them."""
    return frozenset(h.name for h in ctx.hidden if h.parent == folder)


def without_hidden(ctx: ToolContext, folder: Path, names: list[str]) -> list[str]:
    """``names`` (entries of ``folder``) but the hidden ones."""
    if not ctx.hidden:
        return names
    skip = hidden_names(ctx, folder)
    return [n for n in names if n not in skip] if skip else names


@functools.lru_cache(maxsize=32)
def _resolved(path: Path) -> Path:
    # glob and grep show every hit relative to the cwd: resolve it once, not per file.
    return path.resolve()


def display_path(ctx: ToolContext, path: Path) -> str:
    """``path`` relative to the cwd when inside it, so the model can pass it back; else absolute."""
    try:
        rel = path.relative_to(_resolved(ctx.cwd))
    except ValueError:
        return str(path)
    return rel.as_posix() or "."
