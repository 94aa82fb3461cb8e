"""``glob``: find files whose path matches a pattern such as ``**/*.py``."""

from __future__ import annotations

import asyncio
import os
import re
import stat
from pathlib import Path

from pydantic import Field

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.beneath import WorkspacePath, locate, opened, walk_beneath
from agent.tools.paths import SKIP_DIRS, display_path, without_hidden

MAX_FILES = 500
_MAGIC = frozenset("*?[{")


class GlobArgs(ToolArgs):
    pattern: str = Field(
        description=(
            "Glob pattern, e.g. '**/*.py' or 'src/*.{ts,tsx}'. '*' stays within one "
            "directory, '**' spans any number of directories."
        )
    )
    path: str | None = Field(
        default=None, description="Directory to search in; defaults to the working directory."
    )


class GlobTool(Tool):
    name = "glob"
    description = (
        "Find files by path pattern (supports '*', '?', '[abc]', '{a,b}' and '**'). "
        "Returns matching file paths relative to the working directory, sorted. "
        "Skips .git, .venv, node_modules and cache directories."
    )
    Args = GlobArgs

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolResult:
        pattern = args.pattern.strip()
        if not pattern:
            raise ToolError("pattern is empty")
        base, rest = _split_literal_prefix(pattern)
        # An absolute pattern carries its own directory, so it overrides path.
        if pattern.startswith("/"):
            root_arg = base
        elif base == ".":
            root_arg = args.path or "."
        else:
            root_arg = os.path.join(args.path or ".", base)
        where = locate(ctx, root_arg)
        found = await asyncio.to_thread(_walk_matches, where, root_arg, rest, ctx)
        if not found:
            hint = ""
            if "/" not in pattern and "**" not in pattern:
                hint = (
                    f" '*' does not cross directories; try '**/{pattern}' to search subdirectories."
                )
            return ToolResult(content="No files matched." + hint)
        shown = sorted(display_path(ctx, p) for p in found)
        lines = shown[:MAX_FILES]
        if len(shown) > MAX_FILES:
            lines.append(
                f"[{len(shown) - MAX_FILES} more files not shown; narrow the pattern or path.]"
            )
        return ToolResult(content="\n".join(lines))


def _split_literal_prefix(pattern: str) -> tuple[str, str]:
    """Split ``src/app/**/*.py`` into the directory to walk (``src/app``) and the rest."""
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if _MAGIC & set(part):
            break
        literal.append(part)
    base = "/".join(literal)
    if pattern.startswith("/") and not base:
        base = "/"
    return base or ".", "/".join(parts[len(literal) :])


def _walk_matches(where: WorkspacePath, asked: str, rest: str, ctx: ToolContext) -> list[Path]:
    regex = glob_to_regex(rest)
    # Without '**' a pattern cannot reach deeper than its own number of segments.
    max_depth = None if "**" in rest else rest.count("/")
    found: list[Path] = []
    root = where.path
    with opened(where, asked) as top:
        if not stat.S_ISDIR(os.fstat(top).st_mode):
            raise ToolError(f"{asked} is not a directory")
        for rel_dir, dirnames, filenames, _ in walk_beneath(top):
            prefix = "" if rel_dir == "." else rel_dir + "/"
            depth = 0 if rel_dir == "." else rel_dir.count("/") + 1
            if ctx.hidden:  # never listed, never entered
                here = Path(os.path.normpath(root / rel_dir))
                dirnames[:] = without_hidden(ctx, here, dirnames)
                filenames = without_hidden(ctx, here, filenames)
            if max_depth is not None and depth >= max_depth:
                dirnames.clear()
            else:
                dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for name in filenames:
                if regex.fullmatch(prefix + name):
                    found.append(root / (prefix + name))
    return found


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob to a regex for ``fullmatch`` against a ``/``-separated path."""
    return re.compile(_translate(pattern), re.DOTALL)


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        segment_start = i == 0 or pat[i - 1] == "/"
        whole_segment = segment_start and pat[i + 2 : i + 3] in ("", "/")
        if c == "*" and pat.startswith("**", i) and whole_segment:
            if i + 2 == n:
                out.append(".*")
                i += 2
            else:
                out.append("(?:[^/]*/)*")
                i += 3
            continue
        if c == "*":
            out.append("[^/]*")
            while i < n and pat[i] == "*":
                i += 1
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[" and (close := pat.find("]", i + 2)) != -1:
            body = pat[i + 1 : close]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = close + 1
            continue
        elif c == "{" and (close := _matching_brace(pat, i)) != -1:
            alternatives = _split_top_level(pat[i + 1 : close])
            out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
            i = close + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _matching_brace(pat: str, start: int) -> int:
    depth = 0
    for j in range(start, len(pat)):
        if pat[j] == "{":
            depth += 1
        elif pat[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top_level(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in body:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        current.append(ch)
    parts.append("".join(current))
    return parts
