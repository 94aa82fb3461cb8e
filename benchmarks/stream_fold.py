"""Folding a ``copilot -p --output-format json`` stream: time, memory, rows.

    python -m benchmarks.stream_fold [--repeat K] [--inner N] [--scale S]
                                     [--baseline DIR]

The input is the real stream in tests/fixtures/copilot-real/sdkrepo-* (1,125 lines,
434 KiB; 654 of them tool-call argument deltas). Three logs are measured:

* ``stream``: the file as Copilot CLI printed it;
* ``persisted``: the same session without its ephemeral lines and the ``result``
  line, i.e. what a session-state file holds: the floor the streaming events add to;
* ``stream×S``: the stream repeated S times (default 20, ~8.5 MiB) — does the cost
  stay linear?

For each: ``read_events`` (every line parsed into its pydantic model) and ``fold``
(the transcript), timed separately, N times in a row in a fresh child process (the
median of those N is that child's figure), and, in one more untimed pass,
``tracemalloc``'s peak over read + fold and the size of what stays (the folded
transcript). Also the rows the fold makes: top-level blocks and raw rows.

``--baseline DIR`` runs the same children on another source tree (e.g. a checkout
of the commit before) interleaved with this one, so both are measured side by side
under the same load; ratios are this tree over the baseline. Results: a table on
stdout and ``benchmarks/results/stream_fold.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.machine import load_average, machine

ROOT = Path(__file__).resolve().parent.parent
STREAM = (
    ROOT
    / "tests"
    / "fixtures"
    / "copilot-real"
    / "sdkrepo-phase1-task-20260730-0156-2144"
    / "events.jsonl"
)
RESULTS = ROOT / "benchmarks" / "results" / "stream_fold.json"

# Runs in the child, with the tree to measure first on sys.path.
CHILD = r"""
import collections, gc, json, statistics, sys, time, tracemalloc
from pathlib import Path
from agent.transcript.blocks import RawBlock
from agent.log.store import read_events, with_unreadable_rows
from agent.transcript.fold import fold

path, inner = Path(sys.argv[1]), int(sys.argv[2])
read_ms, fold_ms = [], []
for _ in range(inner):
    gc.collect()
    t0 = time.perf_counter()
    events = with_unreadable_rows(read_events(path))
    t1 = time.perf_counter()
    transcript = fold(events, replay=True)
    t2 = time.perf_counter()
    read_ms.append((t1 - t0) * 1000)
    fold_ms.append((t2 - t1) * 1000)
del events, transcript
gc.collect()
tracemalloc.start()
events = with_unreadable_rows(read_events(path))
transcript = fold(events, replay=True)
_, peak = tracemalloc.get_traced_memory()
del events
gc.collect()
kept, _ = tracemalloc.get_traced_memory()
tracemalloc.stop()
raw = collections.Counter(b.type for b in transcript.items if isinstance(b, RawBlock))
print(json.dumps({
    "read_ms": statistics.median(read_ms),
    "fold_ms": statistics.median(fold_ms),
    "peak_kib": peak / 1024,
    "kept_kib": kept / 1024,
    "blocks": len(transcript.items),
    "raw_rows": sum(raw.values()),
    "raw_types": dict(raw.most_common()),
    "output_tokens": transcript.output_tokens,
}))
"""


def build_logs(folder: Path, scale: int) -> dict[str, Path]:
    text = STREAM.read_text("utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    persisted = [
        line
        for line in lines
        if not json.loads(line).get("ephemeral") and json.loads(line).get("type") != "result"
    ]
    logs = {"stream": STREAM}
    logs["persisted"] = folder / "persisted.jsonl"
    logs["persisted"].write_text("\n".join(persisted) + "\n", "utf-8")
    logs[f"stream×{scale}"] = folder / "scaled.jsonl"
    logs[f"stream×{scale}"].write_text(("\n".join(lines) + "\n") * scale, "utf-8")
    return logs


def run_child(tree: Path, log: Path, inner: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(log), str(inner)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("read_ms", "fold_ms", "peak_kib", "kept_kib"):
        values = [r[key] for r in runs]
        out[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    for key in ("blocks", "raw_rows", "raw_types", "output_tokens"):
        out[key] = runs[-1][key]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="child processes per log")
    parser.add_argument("--inner", type=int, default=5, help="timed runs in each child")
    parser.add_argument("--scale", type=int, default=20, help="copies in the scaled log")
    parser.add_argument("--baseline", type=Path, help="another source tree, measured alike")
    args = parser.parse_args(argv)
    trees = {"this": ROOT}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    report: dict[str, Any] = {"machine": machine(), "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        logs = build_logs(Path(tmp), args.scale)
        runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for _ in range(args.repeat):  # interleaved: a noisy moment hits every variant
            for log_name, log in logs.items():
                for tree_name, tree in trees.items():
                    runs.setdefault((log_name, tree_name), []).append(
                        run_child(tree, log, args.inner)
                    )
        sizes = {name: log.stat().st_size for name, log in logs.items()}
    report["machine"]["loadavg_end"] = load_average()
    print(f"load {report['machine']['loadavg_start']} → {report['machine']['loadavg_end']}")
    header = (
        f"{'log':<12} {'tree':<9} {'KiB':>6} {'read ms':>16} {'fold ms':>16}"
        f" {'peak KiB':>9} {'kept KiB':>9} {'rows':>6} {'raw':>5}"
    )
    print(header)
    for (log_name, tree_name), tree_runs in runs.items():
        s = summarize(tree_runs)
        report["results"][f"{log_name}/{tree_name}"] = {**s, "file_kib": sizes[log_name] / 1024}

        def span(key: str, s: dict[str, Any] = s) -> str:
            v = s[key]
            return f"{v['median']:.1f} ({v['min']:.0f}–{v['max']:.0f})"

        print(
            f"{log_name:<12} {tree_name:<9} {sizes[log_name] / 1024:>6.0f} {span('read_ms'):>16}"
            f" {span('fold_ms'):>16} {s['peak_kib']['median']:>9.0f}"
            f" {s['kept_kib']['median']:>9.0f} {s['blocks']:>6} {s['raw_rows']:>5}"
        )
    if "baseline" in trees:
        print("\nratios, this tree / baseline (medians):")
        for log_name in logs:
            this = report["results"][f"{log_name}/this"]
            base = report["results"][f"{log_name}/baseline"]
            ratios = ", ".join(
                f"{key} {this[key]['median'] / base[key]['median']:.2f}"
                for key in ("read_ms", "fold_ms", "peak_kib", "kept_kib")
            )
            print(f"  {log_name:<12} {ratios}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2, ensure_ascii=False), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
