"""Board benchmark: the CPU ``loopdeck runs`` uses and how late its frames are, with
N live runs writing their logs.

    python -m benchmarks.board [--runs 20] [--seconds 20] [--repeat 3] [--rate 1.0]

A feeder process (``--feeder``, started by the benchmark) opens N sessions in a temp
LOOPDECK_HOME the way a loopdeck writer does (each folder's writer lock held, so
the board sees N live writers) and appends to each log a turn after another: a
``user.message`` first, then per turn ``assistant.turn_start``, an
``assistant.message`` whose text carries the wall time it was written, a tool
started and completed, a usage checkpoint and ``assistant.turn_end`` — ``--rate``
turns per second per run (20 runs at 1/s: ~140 lines a second). It holds a tool
open for a while each turn, so the board's tool clocks run.

The board runs in this process, headless, at 120×40 (frames encoded as a terminal
would get them), for ``--seconds``. Measured:

- **CPU**: this process's CPU time (user + system, all threads) over the window,
  as a share of one core. The feeder's is reported apart (it is the load, not the board).
- **frame lag**: for each displayed frame, each run whose text changed since the
  previous frame: the frame's time minus the wall time its text was written
  (append → read on a poll → folded → frame). The poll interval (0.5 s) bounds it
  from above on its own: half of it is the expected mean.
- **event-loop lag**: a task sleeps 10 ms in a loop; how late it wakes.

Results: a table (median, p95, max of each, over all repeats) and
``benchmarks/results/board.json``.
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
from pathlib import Path
from typing import Any

from benchmarks.machine import ROOT, machine

SIZE = (120, 40)
PROBE_S = 0.010
TICK = "tick "


def _stamp() -> str:
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        + f".{int(time.time() * 1000) % 1000:03d}Z"
    )


def feeder(home: Path, runs: int, rate: float) -> None:
    """Write N live runs' logs until stdin closes (the benchmark's end)."""
    import threading

    from agent.log.lock import SessionLock

    root = home / "session-state"
    logs = []
    locks = []
    for n in range(runs):
        sid = f"{n:08x}-bench-0000-0000-000000000000"
        folder = root / sid
        locks.append(SessionLock.acquire(folder, sid, create=True))
        (folder / "session.json").write_text(
            json.dumps({"maxAutopilotContinues": 5, "contextWindow": 128000})
        )
        out = (folder / "events.jsonl").open("a", buffering=1)
        logs.append(out)
        _line(
            out,
            "session.start",
            {
                "sessionId": sid,
                "producer": "loopdeck",
                "copilotVersion": "1",
                "startTime": _stamp(),
                "selectedModel": "bench-model",
                "context": {"cwd": f"/work/repo{n}"},
            },
        )
        _line(out, "user.message", {"content": f"benchmark task {n}", "agentMode": "autopilot"})
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print("ready", flush=True)
    turn = 0
    period = 1.0 / rate / runs  # one run's turn after another
    next_at = time.monotonic()
    inputs = [0] * runs
    while not stop.is_set():
        n = turn % runs
        t = turn // runs + 1
        out = logs[n]
        call = f"c{t}"
        if t > 1:  # the last turn's tool ends, and the turn with it
            done = {"toolCallId": f"c{t - 1}", "success": True, "result": {"content": "ok\n" * 20}}
            _line(out, "tool.execution_complete", done)
            _line(out, "assistant.turn_end", {"turnId": str(t - 1)})
        _line(out, "assistant.turn_start", {"turnId": str(t)})
        _line(
            out,
            "assistant.message",
            {
                "messageId": f"m{t}",
                "content": f"{TICK}{time.time():.6f}",
                "toolRequests": [
                    {"toolCallId": call, "name": "bash", "arguments": {"command": "make test"}}
                ],
            },
        )
        inputs[n] += 4000
        _line(
            out,
            "session.usage_checkpoint",
            {
                "providerModelMetrics": [
                    {
                        "modelId": "bench-model",
                        "metrics": {
                            "requests": {"cost": 0.01 * t, "count": t},
                            "usage": {"inputTokens": inputs[n], "outputTokens": 100 * t},
                        },
                    }
                ]
            },
        )
        _line(
            out,
            "tool.execution_start",
            {"toolCallId": call, "toolName": "bash", "arguments": {"command": "make test"}},
        )
        turn += 1
        next_at += period
        stop.wait(max(0.0, next_at - time.monotonic()))
    for lock in locks:
        lock.release()


def _line(out: Any, etype: str, data: dict[str, Any]) -> None:
    out.write(
        json.dumps(
            {"type": etype, "data": data, "id": "x", "timestamp": _stamp(), "parentId": None}
        )
        + "\n"
    )


async def _measure(home: Path, seconds: float) -> dict[str, Any]:
    from rich.console import Console
    from textual._compositor import CompositorUpdate

    from agent.log.runs import LOOPDECK, RunBoard
    from app.runs import RunsApp, RunsScreen

    frames: list[float] = []
    frame_lags: list[float] = []
    seen: dict[str, str] = {}

    board = RunBoard([(home / "session-state", LOOPDECK)])
    screen = RunsScreen(board, notify="off")

    class BenchApp(RunsApp):
        def _display(self, screen_: Any, renderable: Any) -> None:
            shown = renderable is not None and not self._batch_count
            if shown and isinstance(renderable, CompositorUpdate):
                renderable.render_segments(self.console)  # what a terminal would be sent
            super()._display(screen_, renderable)
            if shown:
                now = time.time()
                frames.append(now)
                for view in screen.views:
                    text = view.row.last_text
                    if text.startswith(TICK) and seen.get(view.session_id) != text:
                        seen[view.session_id] = text
                        frame_lags.append(now - float(text[len(TICK) :]))

    app = BenchApp(screen)
    app.console = Console(
        width=SIZE[0], height=SIZE[1], force_terminal=True, color_system="truecolor"
    )
    loop_lags: list[float] = []
    result: dict[str, Any] = {}

    async def pilot(pilot_: Any) -> None:
        await asyncio.sleep(2.0)  # the first read of every log is not what is measured
        frame_lags.clear()
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        frames_before = len(frames)
        end = start_wall + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            await asyncio.sleep(PROBE_S)
            loop_lags.append(max(0.0, time.perf_counter() - t0 - PROBE_S))
        wall = time.perf_counter() - start_wall
        result["cpu_share"] = (time.process_time() - start_cpu) / wall
        result["frames_per_s"] = (len(frames) - frames_before) / wall
        result["rows"] = len(screen.views)
        result["live_rows"] = sum(1 for v in screen.views if v.writer_alive)
        app.exit(0)

    await app.run_async(headless=True, size=SIZE, auto_pilot=pilot)
    result["frame_lags"] = list(frame_lags)
    result["loop_lags"] = loop_lags
    return result


def _summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return {"median": statistics.median(ordered), "p95": p95, "max": ordered[-1], "n": len(ordered)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", type=float, default=1.0, help="turns per second per run")
    parser.add_argument("--feeder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.feeder is not None:
        feeder(args.feeder, args.runs, args.rate)
        return 0
    runs: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.board",
                    "--feeder",
                    str(home),
                    "--runs",
                    str(args.runs),
                    "--rate",
                    str(args.rate),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            assert child.stdout is not None and child.stdin is not None
            if child.stdout.readline().strip() != "ready":
                child.kill()
                raise SystemExit("the feeder did not start")
            feeder_cpu = _cpu_of(child.pid)
            os.environ["LOOPDECK_HOME"] = str(home)
            try:
                run = asyncio.run(_measure(home, args.seconds))
            finally:
                run_feeder_cpu = _cpu_of(child.pid) - feeder_cpu
                child.stdin.close()
                child.wait(timeout=30)
            run["feeder_cpu_share"] = run_feeder_cpu / (args.seconds + 2.0)
            if run["live_rows"] != args.runs:
                raise SystemExit(f"the board showed {run['live_rows']} live runs, not {args.runs}")
            runs.append(run)
    frame = _summary([x for r in runs for x in r["frame_lags"]])
    loop = _summary([x for r in runs for x in r["loop_lags"]])
    cpu = statistics.median(r["cpu_share"] for r in runs)
    fps = statistics.median(r["frames_per_s"] for r in runs)
    feed = statistics.median(r["feeder_cpu_share"] for r in runs)
    print(f"{args.runs} live runs, {args.rate:g} turn/s each, {args.seconds:g} s × {args.repeat}")
    print(
        f"board CPU (share of one core), median of runs: {cpu * 100:.1f}%   "
        f"(feeder: {feed * 100:.1f}%)"
    )
    print(f"frames per second: {fps:.1f}")
    print(
        f"frame lag (append → frame): median {frame['median'] * 1000:.0f} ms, "
        f"p95 {frame['p95'] * 1000:.0f} ms, max {frame['max'] * 1000:.0f} ms (n={frame['n']})"
    )
    print(
        f"event-loop lag: median {loop['median'] * 1000:.1f} ms, p95 {loop['p95'] * 1000:.1f} ms, "
        f"max {loop['max'] * 1000:.1f} ms"
    )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "board.json").write_text(
        json.dumps(
            {
                "machine": machine(),
                "args": vars(args) | {"feeder": None},
                "cpu_share_median": cpu,
                "frames_per_s_median": fps,
                "feeder_cpu_share_median": feed,
                "frame_lag": frame,
                "loop_lag": loop,
                "runs": [{k: v for k, v in r.items() if not k.endswith("lags")} for r in runs],
            },
            indent=2,
        )
    )
    return 0


def _cpu_of(pid: int) -> float:
    """A process's CPU seconds so far (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    raise SystemExit(main())
