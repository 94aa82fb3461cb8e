"""The grep tool's earlier ripgrep methods, kept to be measured beside the current one.

- **two-pass**: ``rg --count --null`` for every file's count, then ``rg --json
  --max-count 200`` over the first files in path order, each run through asyncio's
  subprocess pipes, then each shown line re-read by locating its path in the workspace.
- **json+sort**: ``rg --json`` over the tree, every record parsed into a match, every
  match re-read, all of them sorted, while only 200 are shown.

Both give the same text as the tool (the benchmark checks it).
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import json
import os
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

from agent.tools.base import ToolContext, ToolError
from agent.tools.beneath import locate, opened
from agent.tools.grep import MAX_MATCHES, GrepArgs, Match, _lines, _rg_common, format_matches
from agent.tools.paths import SKIP_DIRS


async def two_pass(rg: str, pattern: str, ctx: ToolContext) -> str:
    args = GrepArgs(pattern=pattern)
    count_cmd = [rg, *_rg_common(args), "--count", "--with-filename", "--null"]
    for skipped in sorted(SKIP_DIRS):
        count_cmd += ["--glob", f"!{skipped}"]
    counted = await _run_rg([*count_cmd, "--regexp", pattern, "--", "."], ctx)
    per_file = sorted(
        (os.path.normpath(raw.decode("utf-8", errors="replace")), raw, count)
        for raw, count in parse_rg_counts(counted)
    )
    total = sum(count for _shown, _raw, count in per_file)
    wanted: list[bytes] = []
    covered = 0
    for _shown, raw, count in per_file:
        if covered >= MAX_MATCHES:
            break
        wanted.append(raw)
        covered += count
    if not wanted:
        return format_matches([], 0)
    lines_cmd: list[str | bytes] = [rg, "--json", *_rg_common(args), "--max-count"]
    lines_cmd += [str(MAX_MATCHES), "--regexp", pattern, "--", *wanted]
    found = heapq.nsmallest(MAX_MATCHES, parse_rg_json(await _run_rg(lines_cmd, ctx)))
    shown = await asyncio.to_thread(confirmed, found, ctx)
    return format_matches(shown, max(total, len(found)) - len(found))


def parse_rg_counts(output: bytes) -> list[tuple[bytes, int]]:
    found = []
    for record in output.splitlines():
        raw, sep, count = record.rpartition(b"\0")
        if sep and count.isdigit():
            found.append((raw, int(count)))
    return found


def json_sort(rg: str, pattern: str, root: Path, ctx: ToolContext) -> str:
    cmd = [rg, "--json", *_rg_common(GrepArgs(pattern=pattern))]
    for skipped in sorted(SKIP_DIRS):
        cmd += ["--glob", f"!{skipped}"]
    cmd += ["--regexp", pattern, "--", "."]
    out = subprocess.run(cmd, cwd=root, capture_output=True, check=False).stdout
    matches = sorted(confirmed(parse_rg_json(out), ctx))
    return format_matches(matches[:MAX_MATCHES], len(matches) - MAX_MATCHES)


async def _run_rg(cmd: Sequence[str | bytes], ctx: ToolContext) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=ctx.cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _err = await proc.communicate()
    return out


def parse_rg_json(output: bytes) -> list[Match]:
    matches: list[Match] = []
    for raw in output.splitlines():
        event = json.loads(raw)
        if event.get("type") != "match":
            continue
        data = event["data"]
        path = os.path.normpath(_rg_text(data["path"]))
        text = _rg_text(data["lines"]).removesuffix("\n").removesuffix("\r")
        matches.append(Match(path, int(data["line_number"]), text))
    return matches


def _rg_text(field: dict[str, str]) -> str:
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", errors="replace")


def confirmed(matches: list[Match], ctx: ToolContext) -> list[Match]:
    by_path: dict[str, list[Match]] = {}
    for m in matches:
        by_path.setdefault(m.path, []).append(m)
    kept: list[Match] = []
    for path, found in by_path.items():
        try:
            with opened(locate(ctx, path), path) as fd:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                with os.fdopen(fd, "rb", closefd=False) as f:
                    lines = _lines(f.read())
        except (ToolError, OSError):
            continue
        kept.extend(m for m in found if 0 < m.line <= len(lines) and lines[m.line - 1] == m.text)
    return kept
