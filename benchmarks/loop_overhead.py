"""Loop overhead: a scripted, zero-latency session of N tool turns, timed end to end.

    python -m benchmarks.loop_overhead [--turns N] [--repeat K] [--profile [VARIANT]]

One ``send_and_wait`` drives N turns that each stream a short text and make one
tool call, then a final text-only turn (N+1 model calls). The clock runs from the
call to ``send_and_wait`` until it returns, which includes draining the writer, so
with persistence every persisted event is on disk when the clock stops.

Four variants run interleaved, ``--repeat`` times each, after one discarded warmup:

* ``noop/disk``    a no-op ``fake_noop`` tool, events.jsonl in a temp store
* ``noop/memory``  the same without a store (``store=None``)
* ``glob/disk``    the real ``glob`` tool on a tiny temp workspace, persisted
* ``glob/memory``  the same without a store

Every run is checked (events.jsonl holds exactly N+1 ``assistant.turn_start``
lines, every tool call succeeded, every persisted event is on disk) so a broken
loop cannot report a fast number. Results: a table on stdout and
``benchmarks/results/loop_overhead.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import agent
from agent.events.schema import Event, Mode, ToolExecutionCompleteData
from agent.log.places import EVENTS_FILE
from agent.log.store import SessionStore
from agent.models.scripted import Script, ScriptedModel
from agent.session.session import Session
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agent.tools.registry import ToolRegistry, default_tools
from benchmarks.machine import load_average, machine

RESULTS = Path(__file__).resolve().parent / "results" / "loop_overhead.json"
PROFILE_OUT = RESULTS.with_suffix(".prof")
TARGET_MS_PER_TURN = 1.0
WARMUP_TURNS = 50
PROMPT = "Run the loop-overhead benchmark."
FINAL_TEXT = "Done."


# --- the tools ---------------------------------------------------------------------


class FakeNoopArgs(ToolArgs):
    pass


class FakeNoopTool(Tool):
    """Does nothing, so the benchmark measures the loop and not the tool."""

    name: ClassVar[str] = "fake_noop"
    description: ClassVar[str] = "Benchmark tool: does nothing and answers 'ok'."
    Args = FakeNoopArgs

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult(content="ok")


def bench_registry(mode: Mode) -> ToolRegistry:
    """The session's real tool set plus ``fake_noop``: schemas cost what they cost live."""
    registry = default_tools(autopilot=mode == "autopilot")
    registry.register(FakeNoopTool())
    return registry


def make_workspace(root: Path) -> None:
    """A tiny workspace for ``glob``: a handful of files in two directories."""
    (root / "pkg").mkdir(parents=True)
    for rel in ("main.py", "util.py", "README.md", "pkg/__init__.py", "pkg/core.py"):
        (root / rel).write_text("# benchmark file\n", encoding="utf-8")


# --- variants and the script -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    tool: str
    arguments: dict[str, Any]
    persist: bool
    expect: str  # every tool result must contain this


VARIANTS: tuple[Variant, ...] = (
    Variant("noop/disk", "fake_noop", {}, persist=True, expect="ok"),
    Variant("noop/memory", "fake_noop", {}, persist=False, expect="ok"),
    Variant("glob/disk", "glob", {"pattern": "**/*.py"}, persist=True, expect="pkg/core.py"),
    Variant("glob/memory", "glob", {"pattern": "**/*.py"}, persist=False, expect="pkg/core.py"),
)


def build_model(turns: int, variant: Variant) -> ScriptedModel:
    """``turns`` turns of a short text and one tool call, then a text-only final turn."""
    tool_turns: list[dict[str, Any]] = [
        {
            "text": f"Step {i}.",
            "tool_calls": [{"name": variant.tool, "arguments": variant.arguments}],
        }
        for i in range(turns)
    ]
    script = Script.model_validate({"turns": [*tool_turns, {"text": FINAL_TEXT}]})
    return ScriptedModel(script, "bench")


# --- one run ----------------------------------------------------------------------


class BenchmarkError(AssertionError):
    """A run that did not do what it should: its timing is meaningless."""


def check(condition: bool, message: str) -> None:
    # Not a bare ``assert``: the checks must survive ``python -O``.
    if not condition:
        raise BenchmarkError(message)


@dataclass(slots=True)
class EventCounter:
    """Subscriber counting what the session emits while the clock runs."""

    total: int = 0
    persisted: int = 0
    turn_starts: int = 0
    tool_failures: int = 0
    tool_outputs: set[str] = field(default_factory=set)

    def __call__(self, event: Event) -> None:
        self.total += 1
        if not event.ephemeral:
            self.persisted += 1
        if event.type == "assistant.turn_start":
            self.turn_starts += 1
        elif isinstance(event.data, ToolExecutionCompleteData):
            if not event.data.success or event.data.result is None:
                self.tool_failures += 1
            else:
                self.tool_outputs.add(event.data.result.content)


@contextlib.contextmanager
def counting_fsync() -> Iterator[list[int]]:
    """Count ``os.fsync`` calls (the writer fsyncs batches holding a turn end)."""
    real = os.fsync
    count = [0]

    def fsync(fd: Any) -> None:
        count[0] += 1
        real(fd)

    os.fsync = fsync
    try:
        yield count
    finally:
        os.fsync = real


@dataclass(slots=True)
class RunResult:
    seconds: float
    cpu_seconds: float  # this process, all threads: less sensitive to noisy neighbours
    emitted: int
    appended: int | None
    file_bytes: int | None
    fsyncs: int


def verify_log(path: Path, turns: int, counter: EventCounter) -> tuple[int, int]:
    """Check events.jsonl right after ``send_and_wait``; return (lines appended, bytes)."""
    raw = path.read_bytes()
    check(raw.endswith(b"\n"), "events.jsonl does not end with a newline")
    lines = raw.decode("utf-8").splitlines()
    types = [json.loads(line)["type"] for line in lines]
    check(types.count("session.start") == 1, "events.jsonl lacks its session.start")
    starts = types.count("assistant.turn_start")
    check(starts == turns + 1, f"events.jsonl has {starts} turn_start lines, want {turns + 1}")
    ends = types.count("assistant.turn_end")
    check(ends == turns + 1, f"events.jsonl has {ends} turn_end lines, want {turns + 1}")
    completes = [
        json.loads(line)["data"]
        for line, t in zip(lines, types, strict=True)
        if t == "tool.execution_complete"
    ]
    check(len(completes) == turns, f"{len(completes)} tool completions, want {turns}")
    check(all(c.get("success") is True for c in completes), "a tool call failed")
    appended = len(lines) - 1  # session.start was written by create(), outside the clock
    check(
        appended == counter.persisted,
        f"{counter.persisted} persisted events emitted but {appended} lines on disk",
    )
    return appended, len(raw)


async def run_once(
    variant: Variant, turns: int, *, profiler: cProfile.Profile | None = None
) -> RunResult:
    model = build_model(turns, variant)
    with tempfile.TemporaryDirectory(prefix="loopdeck-bench-") as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        make_workspace(workspace)
        store = SessionStore(root / "home") if variant.persist else None
        session = await Session.create(
            model=model, cwd=workspace, store=store, registry_factory=bench_registry
        )
        try:
            counter = EventCounter()
            session.subscribe(counter)
            gc.collect()
            with counting_fsync() as fsyncs:
                if profiler is not None:
                    profiler.enable()
                start, cpu_start = time.perf_counter(), time.process_time()
                outcome = await session.send_and_wait(PROMPT)
                seconds = time.perf_counter() - start
                cpu_seconds = time.process_time() - cpu_start
                if profiler is not None:
                    profiler.disable()
            emitted = counter.total
            check(outcome.error is None, f"the loop failed: {outcome.error}")
            check(not outcome.aborted, "the loop was aborted")
            check(outcome.turns == turns + 1, f"{outcome.turns} turns, want {turns + 1}")
            check(outcome.final_text == FINAL_TEXT, f"final text {outcome.final_text!r}")
            check(
                counter.turn_starts == turns + 1,
                f"{counter.turn_starts} turn_start events, want {turns + 1}",
            )
            check(counter.tool_failures == 0, f"{counter.tool_failures} tool calls failed")
            check(
                len(counter.tool_outputs) == 1 and variant.expect in min(counter.tool_outputs),
                f"unexpected tool output: {sorted(counter.tool_outputs)[:3]}",
            )
            appended: int | None = None
            file_bytes: int | None = None
            if store is not None:
                path = store.events_path(session.id)
                check(path.name == EVENTS_FILE and path.is_file(), "no events.jsonl written")
                appended, file_bytes = verify_log(path, turns, counter)
        finally:
            await session.close()
    return RunResult(seconds, cpu_seconds, emitted, appended, file_bytes, fsyncs[0])


# --- statistics and report -----------------------------------------------------------


@dataclass(slots=True)
class VariantSummary:
    name: str
    tool: str
    persist: bool
    turns: int  # model calls per run: N tool turns + the final one
    runs_seconds: list[float] = field(default_factory=list)
    ms_per_turn_median: float = 0.0
    ms_per_turn_min: float = 0.0
    ms_per_turn_max: float = 0.0
    cpu_ms_per_turn_median: float = 0.0
    seconds_median: float = 0.0
    events_emitted: int = 0
    events_emitted_per_second: float = 0.0
    events_appended: int | None = None
    events_appended_per_second: float | None = None
    file_bytes: int | None = None
    fsyncs_median: float = 0.0
    under_target: bool = False


def summarize(variant: Variant, turns: int, runs: list[RunResult]) -> VariantSummary:
    seconds = [r.seconds for r in runs]
    median = statistics.median(seconds)
    model_calls = turns + 1
    summary = VariantSummary(
        name=variant.name,
        tool=variant.tool,
        persist=variant.persist,
        turns=model_calls,
        runs_seconds=[round(s, 6) for s in seconds],
        ms_per_turn_median=median * 1000 / model_calls,
        ms_per_turn_min=min(seconds) * 1000 / model_calls,
        ms_per_turn_max=max(seconds) * 1000 / model_calls,
        cpu_ms_per_turn_median=statistics.median(r.cpu_seconds for r in runs) * 1000 / model_calls,
        seconds_median=median,
        events_emitted=runs[0].emitted,
        events_emitted_per_second=statistics.median(r.emitted / r.seconds for r in runs),
        fsyncs_median=statistics.median(r.fsyncs for r in runs),
    )
    summary.under_target = summary.ms_per_turn_median < TARGET_MS_PER_TURN
    appended = [r.appended for r in runs if r.appended is not None]
    if appended:
        summary.events_appended = appended[0]
        summary.events_appended_per_second = statistics.median(
            a / r.seconds for a, r in zip(appended, runs, strict=True)
        )
        summary.file_bytes = runs[0].file_bytes
    return summary


def _num(value: float | int | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def print_table(summaries: list[VariantSummary]) -> None:
    header = (
        f"{'variant':<12} {'ms/turn med':>11} {'min':>7} {'max':>7} {'cpu med':>7} "
        f"{'events/s':>10} {'appended/s':>10} {'events':>7} {'lines':>7} "
        f"{'file KiB':>9} {'fsyncs':>6}"
    )
    print(header)
    print("-" * len(header))
    for s in summaries:
        kib = None if s.file_bytes is None else s.file_bytes / 1024
        print(
            f"{s.name:<12} {s.ms_per_turn_median:>11.3f} {s.ms_per_turn_min:>7.3f} "
            f"{s.ms_per_turn_max:>7.3f} {s.cpu_ms_per_turn_median:>7.3f} "
            f"{_num(s.events_emitted_per_second):>10} "
            f"{_num(s.events_appended_per_second):>10} {s.events_emitted:>7} "
            f"{_num(s.events_appended, 'd'):>7} {_num(kib, ',.1f'):>9} "
            f"{_num(s.fsyncs_median, 'g'):>6}"
        )


def persistence_cost(summaries: list[VariantSummary]) -> dict[str, float]:
    """Median ms/turn with the store minus without, per tool."""
    by_key = {(s.tool, s.persist): s for s in summaries}
    cost: dict[str, float] = {}
    for tool in dict.fromkeys(s.tool for s in summaries):
        disk, memory = by_key.get((tool, True)), by_key.get((tool, False))
        if disk and memory:
            cost[tool] = disk.ms_per_turn_median - memory.ms_per_turn_median
    return cost


# --- entry points ------------------------------------------------------------------


async def benchmark(turns: int, repeat: int) -> list[VariantSummary]:
    for variant in VARIANTS:  # warmup: imports, schema caches, thread pool
        await run_once(variant, min(turns, WARMUP_TURNS))
    runs: dict[str, list[RunResult]] = {v.name: [] for v in VARIANTS}
    for i in range(repeat):
        # Interleaved so that a noisy neighbour hurts every variant alike.
        for variant in VARIANTS:
            result = await run_once(variant, turns)
            runs[variant.name].append(result)
            print(
                f"  run {i + 1}/{repeat} {variant.name:<12} {result.seconds * 1000:8.1f} ms",
                file=sys.stderr,
            )
    return [summarize(v, turns, runs[v.name]) for v in VARIANTS]


def is_agent_code(filename: str) -> bool:
    return filename.startswith(str(Path(agent.__file__).resolve().parent) + os.sep)


async def profile(variant: Variant, turns: int, top: int) -> None:
    await run_once(variant, min(turns, WARMUP_TURNS))
    profiler = cProfile.Profile()
    result = await run_once(variant, turns, profiler=profiler)
    PROFILE_OUT.parent.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(PROFILE_OUT)
    stats = pstats.Stats(profiler)
    # pstats keeps its table in an attribute typeshed does not declare.
    entries: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = vars(stats)["stats"]
    root = Path(agent.__file__).resolve().parent.parent
    print(
        f"cProfile of one {variant.name} run, {turns} turns: "
        f"{result.seconds * 1000:.1f} ms under the profiler; saved to {PROFILE_OUT}"
    )
    mine = sorted(
        ((key, value) for key, value in entries.items() if is_agent_code(key[0])),
        key=lambda item: item[1][3],
        reverse=True,
    )
    print(f"\ntop {top} agent/ functions by cumulative time")
    print(f"{'ncalls':>9} {'tottime s':>10} {'cumtime s':>10}  function")
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in mine[:top]:
        where = Path(filename).relative_to(root)
        print(f"{nc:>9} {tt:>10.4f} {ct:>10.4f}  {where}:{line}({func})")
    print(f"\ntop {top} functions anywhere by own time")
    print(f"{'ncalls':>9} {'tottime s':>10} {'cumtime s':>10}  function")
    anywhere = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in anywhere[:top]:
        print(f"{nc:>9} {tt:>10.4f} {ct:>10.4f}  {_short(filename)}:{line}({func})")


def _short(filename: str) -> str:
    marker = "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1]
    root = str(Path(agent.__file__).resolve().parent.parent) + os.sep
    return filename.removeprefix(root)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.loop_overhead",
        description="Time the agent loop on a scripted zero-latency session.",
    )
    parser.add_argument("--turns", type=positive_int, default=1000, help="tool turns per run")
    parser.add_argument("--repeat", type=positive_int, default=5, help="timed runs per variant")
    names = [v.name for v in VARIANTS]
    parser.add_argument(
        "--profile",
        nargs="?",
        const="noop/disk",
        choices=names,
        metavar="VARIANT",
        help=f"instead of timing, cProfile one run of VARIANT ({', '.join(names)}; "
        "default noop/disk) and print the hottest functions",
    )
    parser.add_argument("--top", type=positive_int, default=10, help="rows in --profile output")
    args = parser.parse_args(argv)

    if args.profile:
        variant = next(v for v in VARIANTS if v.name == args.profile)
        asyncio.run(profile(variant, args.turns, args.top))
        return 0

    info = machine()
    print(
        f"loop overhead: {args.turns} tool turns + 1 final turn, {args.repeat} runs per variant, "
        f"nproc={info['nproc']}, Python {info['python']}, load {info['loadavg_start']}",
        file=sys.stderr,
    )
    summaries = asyncio.run(benchmark(args.turns, args.repeat))
    info["loadavg_end"] = load_average()
    cost = persistence_cost(summaries)
    print()
    print_table(summaries)
    print()
    for tool, ms in cost.items():
        print(f"persistence cost ({tool}): {ms * 1000:+.0f} µs/turn (median disk - median memory)")
    for s in summaries:
        verdict = "ok" if s.under_target else "OVER"
        print(
            f"target < {TARGET_MS_PER_TURN:g} ms/turn: {s.name:<12} "
            f"{s.ms_per_turn_median:.3f} ms {verdict}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "loop_overhead",
        "machine": info,
        "params": {
            "turns": args.turns,
            "repeat": args.repeat,
            "warmup_turns": WARMUP_TURNS,
            "tools_offered": bench_registry("interactive").names(),
        },
        "target_ms_per_turn": TARGET_MS_PER_TURN,
        "variants": {s.name: asdict(s) for s in summaries},
        "persistence_cost_ms_per_turn": cost,
    }
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
