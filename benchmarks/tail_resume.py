"""Tail-first resume and replay of a huge session: ``--resume`` and ``replay`` of a
74,000-event / ~230 MB log, cold, against a bare Textual app in the same run.

    python -m benchmarks.tail_resume [--events 74000] [--mib 230] [--repeat 5]
                                     [--size 120x40] [--no-encode]
                                     [--baseline DIR] [--stacks]

1. **The log**: a generated session in the Copilot SDK's event format (every line
   parses with the official parser; checked on one line of each type): user
   prompts, turns with a line of text and a tool call whose output is a few KB
   (2–30 KB, ~13 KB on average), cumulative usage checkpoints, and a compaction
   (``session.compaction_start`` / ``_complete`` with its summary) every 300 turns.
2. **Cold runs**, each a fresh child process, the variants interleaved so a noisy
   neighbour hurts all alike: ``bare-textual`` (a one-widget Textual app: the floor),
   ``resume`` (``loopdeck --resume <id>`` with ``App.run`` forced headless; the
   clock stops at the first frame after ``Timeline.load``, i.e. the tail drawn;
   ``ready`` is the first frame once the session is the app's too: the tail is
   drawn before the session opens, so the two differ), ``new`` (a new
   session in the same app, to its first frame once ready: the reference for what
   opening any session costs), ``replay``
   (``loopdeck replay <log> --speed instant`` until its tail is drawn).
3. **While resuming**: a probe task sleeps 5 ms in a loop from the first frame on
   and records how late it wakes (the longest stall of the event loop until the
   tail is drawn, and until ready); RSS now (``VmRSS``) and at peak (``VmHWM``) at
   the tail frame and when ready. ``--stacks``: a thread samples the main thread's
   stack every 4 ms; each stall over 50 ms is printed with its most sampled frames.

Targets (issue 16): resume and replay to the tail ≤ 3× bare Textual's first frame,
RSS ≤ 150 MiB, no stall over 50 ms. Results: a table on stdout and
``benchmarks/results/tail_resume.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.headless_child import HEADLESS_CHILD
from benchmarks.machine import ROOT, machine
from benchmarks.replay_load import run_cold

RESULT_MARK = "@@TAIL-RESUME-RESULT@@ "
TURNS_PER_COMPACTION = 300
TURNS_PER_PROMPT = 25


class BenchmarkError(RuntimeError):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise BenchmarkError(message)


# --- the log -------------------------------------------------------------------------

_WORDS = [
    "event",
    "index",
    "tail",
    "fold",
    "resume",
    "timeline",
    "session",
    "history",
    "summary",
    "tool",
    "output",
    "file",
    "line",
    "offset",
    "parse",
    "model",
    "turn",
    "compaction",
    "checkpoint",
    "usage",
    "token",
    "window",
]


def _text(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    while size < chars:
        n = rng.randint(3, 14)
        line = f"{rng.randint(1, 9999):>5}  " + " ".join(rng.choice(_WORDS) for _ in range(n))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars]


def generate(home: Path, events: int, mib: float, *, seed: int = 16) -> dict[str, Any]:
    """Write a session of ``events`` events (~``mib`` MiB) into a loopdeck home."""
    from agent.events.schema import (
        AssistantMessageData,
        AssistantTurnEndData,
        AssistantTurnStartData,
        AssistantUsageData,
        Event,
        EventData,
        SessionCompactionCompleteData,
        SessionCompactionStartData,
        SessionStartData,
        ToolExecutionCompleteData,
        ToolExecutionStartData,
        ToolRequest,
        ToolResultPayload,
        UserMessageData,
        WorkingDirectoryContext,
    )
    from agent.events.usage_ledger import UsageLedger

    rng = random.Random(seed)
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    folder = home / "loopdeck" / "session-state" / sid
    folder.mkdir(parents=True)
    path = folder / "events.jsonl"
    ws = home / "ws"
    ws.mkdir(exist_ok=True)
    # ~6.2 events a turn; the tool output carries the bytes.
    turns = max(1, events // 6)
    per_turn = int(mib * 2**20 / turns)
    pool = [_text(rng, 40_000) for _ in range(16)]
    counts: dict[str, int] = {}
    written = [0]
    last: list[str | None] = [None]
    messages = [0]  # the model's history length, for the compaction's messagesRemoved
    ledger = UsageLedger()
    clock = [1_780_000_000.0]

    with path.open("w", encoding="utf-8") as fh:

        def emit(data: EventData) -> None:
            event = Event.new(data, last[0])
            clock[0] += rng.uniform(0.05, 2.0)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(clock[0]))
            event.timestamp = f"{stamp}.{int(clock[0] * 1000) % 1000:03d}Z"
            last[0] = event.id
            fh.write(event.to_json() + "\n")
            counts[event.type] = counts.get(event.type, 0) + 1
            written[0] += 1

        emit(
            SessionStartData(
                session_id=sid,
                copilot_version="0.1.0",
                start_time="2026-06-01T00:00:00.000Z",
                selected_model="scripted:bench",
                context=WorkingDirectoryContext(cwd=str(ws)),
            )
        )
        turn = 0
        while written[0] < events:
            if turn % TURNS_PER_PROMPT == 0:
                emit(UserMessageData(content=f"Prompt {turn}: " + _text(rng, 300)))
                messages[0] += 1
            if turn and turn % TURNS_PER_COMPACTION == 0:
                attempt = str(uuid.uuid4())
                emit(SessionCompactionStartData(trigger="threshold", compaction_attempt_id=attempt))
                emit(
                    SessionCompactionCompleteData(
                        success=True,
                        messages_removed=messages[0],
                        pre_compaction_messages_length=messages[0],
                        summary_content="## Task\n" + _text(rng, 2_000),
                        checkpoint_number=turn // TURNS_PER_COMPACTION,
                        trigger="threshold",
                        compaction_attempt_id=attempt,
                    )
                )
                messages[0] = 1
            turn_id = str(turn)
            call = f"call_{turn}"
            emit(AssistantTurnStartData(turn_id=turn_id))
            emit(
                AssistantMessageData(
                    message_id=str(uuid.uuid4()),
                    content=f"Step {turn}: " + _text(rng, rng.randint(60, 400)),
                    tool_requests=[
                        ToolRequest(
                            tool_call_id=call, name="view", arguments={"path": f"src/m{turn}.py"}
                        )
                    ],
                    turn_id=turn_id,
                )
            )
            emit(
                ToolExecutionStartData(
                    tool_call_id=call,
                    tool_name="view",
                    arguments={"path": f"src/m{turn}.py"},
                    turn_id=turn_id,
                )
            )
            size = min(39_000, max(2_000, int(rng.expovariate(1 / per_turn))))
            start = rng.randrange(0, 40_000 - size)
            emit(
                ToolExecutionCompleteData(
                    tool_call_id=call,
                    success=True,
                    result=ToolResultPayload(content=pool[turn % len(pool)][start : start + size]),
                    turn_id=turn_id,
                )
            )
            messages[0] += 2
            emit(AssistantTurnEndData(turn_id=turn_id))
            ledger.add(
                AssistantUsageData(model="scripted:bench", input_tokens=4_000, output_tokens=50)
            )
            emit(ledger.checkpoint())
            turn += 1
    _check_parser(path)
    return {
        "home": str(home),
        "session_id": sid,
        "path": str(path),
        "events": written[0],
        "bytes": path.stat().st_size,
        "turns": turn,
        "types": counts,
    }


def _check_parser(path: Path) -> None:
    """One line of each type through the official parser."""
    from copilot.generated.session_events import session_event_from_dict

    seen: set[str] = set()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            head = json.loads(line)
            if head["type"] in seen:
                continue
            seen.add(head["type"])
            session_event_from_dict(head)


# --- the resume child ----------------------------------------------------------------

RESUME_CHILD = (
    HEADLESS_CHILD
    + r"""
import asyncio
_lags = []
_stalls = []  # (start, end) of each wait over 50 ms
_samples = []  # (time, the main thread's innermost project frames), with --stacks

def _sample_main():
    import threading, traceback
    main = threading.main_thread().ident
    skip = ("/textual/", "/rich/", "/asyncio/", "/threading.py", "/selectors.py", "<")
    while True:
        time.sleep(0.004)
        frame = sys._current_frames().get(main)
        if frame is None:
            continue
        stack = traceback.extract_stack(frame)
        mine = [f for f in stack if not any(part in f.filename for part in skip)]
        where = [f"{f.filename.rsplit('/', 2)[-2]}/{f.filename.rsplit('/', 1)[-1]}:{f.name}"
                 for f in mine[-2:]]
        _samples.append((time.monotonic(), " < ".join(reversed(where)), stack[-1].name))

if _p.get("stacks"):
    import threading as _threading
    _threading.Thread(target=_sample_main, daemon=True).start()

def _status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None

async def _probe():
    while "ready" not in _marks:
        t = time.monotonic()
        await asyncio.sleep(0.005)
        _lags.append(time.monotonic() - t - 0.005)
        if _lags[-1] > 0.05:
            _stalls.append((t, time.monotonic()))

def _on_frame(self, now):
    if "_bench_probe" not in self.__dict__:
        self._bench_probe = asyncio.get_running_loop().create_task(_probe())
    if "load_end" in _marks and "loaded_frame" not in _marks:
        _marks["loaded_frame"] = now
        _marks["cpu_tail"] = _cpu()
        _marks["rss_kib"] = _status("VmRSS")
        _marks["hwm_kib"] = _status("VmHWM")
        _marks["max_stall"] = max(_lags, default=0.0)
        _marks["probes"] = len(_lags)
        _marks["items"] = len(self.timeline.transcript.items)
        _marks["turns"] = self.timeline.transcript.turns
    # Ready: the session is open (its model, loop and history) and its tail drawn;
    # the tail may be drawn before (tail first), never after.
    if "loaded_frame" in _marks and "ready" not in _marks and self.__dict__.get("session"):
        _marks["ready"] = now
        _marks["cpu_ready"] = _cpu()
        _marks["ready_rss_kib"] = _status("VmRSS")
        _marks["ready_hwm_kib"] = _status("VmHWM")
        _marks["ready_stall"] = max(_lags, default=0.0)
        _marks["ready_turns"] = self.timeline.transcript.turns
        self.call_later(self.exit)

def _setup():
    _when_imported("widgets.timeline", lambda m: _timed(m.Timeline, "load", "load"))

_run_app(_setup)
# Where the main thread was during each stall: its most sampled frames.
_marks["stall_stacks"] = []
for _a, _b in _stalls:
    _seen = {}
    for _t, _where, _leaf in _samples:
        if _a <= _t <= _b:
            _seen[(_where, _leaf)] = _seen.get((_where, _leaf), 0) + 1
    _top = sorted(_seen.items(), key=lambda kv: -kv[1])[:4]
    _marks["stall_stacks"].append(
        {"ms": round((_b - _a - 0.005) * 1000), "at": _a,
         "where": [f"{n}x {w} ({leaf})" for (w, leaf), n in _top]}
    )
print("\n@@TAIL-RESUME-RESULT@@ " + json.dumps(_marks))
"""
)


def run_resume(
    log: dict[str, Any],
    size: tuple[int, int],
    encode: bool,
    *,
    new: bool = False,
    code: str | None = None,
    stacks: bool = False,
) -> dict[str, Any]:
    """``loopdeck --resume`` of the log (``new``: a new session, the reference;
    ``code``: a checkout of another commit to run instead, for a before/after)."""
    home = Path(log["home"])
    path = Path(log["path"])
    resume = [] if new else ["--resume", log["session_id"]]
    params = {
        "variant": "resume",
        "argv": [*resume, "--model", "scripted:demo"],
        "size": list(size),
        "encode": encode,
        "timeout": 300,
        "stacks": stacks,
    }
    env = dict(os.environ)
    env.update(
        LOOPDECK_HOME=str(home / "loopdeck"),
        HOME=str(home),
        PYTHONDONTWRITEBYTECODE="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_OFFLINE_MODE="true",
    )
    if code is not None:
        env["PYTHONPATH"] = code
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", RESUME_CHILD, json.dumps(params)],
            cwd=home / "ws",
            env=env,
            capture_output=True,
            text=True,
            timeout=330,
            stdin=subprocess.DEVNULL,
        )
    finally:
        # Resume appends to the log: cut it back so every run reads the same file.
        with path.open("rb+") as fh:
            fh.truncate(log["bytes"])
    marks: dict[str, Any] | None = None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            marks = json.loads(line[len(RESULT_MARK) :])
            break
    check(marks is not None, f"resume child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    assert marks is not None
    check("loaded_frame" in marks, "resume: the tail was never drawn")
    return {
        "first_frame_s": marks["first_frame"] - start,
        "ready_s": marks["ready"] - start,
        "tail_s": marks["loaded_frame"] - start,
        "load_s": marks["load_end"] - marks["load_start"],
        "rss_kib": marks["rss_kib"],
        "hwm_kib": marks["hwm_kib"],
        "max_stall_s": marks["max_stall"],
        "ready_rss_kib": marks["ready_rss_kib"],
        "ready_hwm_kib": marks["ready_hwm_kib"],
        "ready_stall_s": marks["ready_stall"],
        "probes": marks["probes"],
        "items": marks["items"],
        "turns": marks["turns"],
        "ready_turns": marks["ready_turns"],
        # CPU seconds of the whole process from its start: steadier than the clock
        # on a loaded machine (what the work costs, not how long it waited for a CPU).
        "cpu_tail_s": marks["cpu_tail"],
        "cpu_ready_s": marks["cpu_ready"],
        # With --stacks: what the main thread did in each stall over 50 ms.
        "stalls": [{**stall, "at_s": stall.pop("at") - start} for stall in marks["stall_stacks"]],
    }


# --- the run -------------------------------------------------------------------------


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.tail_resume")
    parser.add_argument("--events", type=int, default=74_000)
    parser.add_argument("--mib", type=float, default=230.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--no-encode", dest="encode", action="store_false")
    parser.add_argument(
        "--baseline", help="a checkout of an earlier commit: its --resume runs side by side"
    )
    parser.add_argument(
        "--stacks",
        action="store_true",
        help="sample the main thread's stack: print where each stall over 50 ms was",
    )
    args = parser.parse_args(argv)
    width, height = (int(x) for x in args.size.split("x"))
    size = (width, height)
    with tempfile.TemporaryDirectory(prefix="loopdeck-tail-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        log = generate(root / "home", args.events, args.mib)
        print(
            f"log: {log['events']:,} events, {log['bytes'] / 2**20:.0f} MiB, {log['turns']:,} "
            f"turns (generated in {time.perf_counter() - started:.1f} s)",
            file=sys.stderr,
        )
        runs: dict[str, list[dict[str, Any]]] = {
            "bare-textual": [],
            "new": [],
            "resume": [],
            "replay": [],
            "baseline": [],
            "baseline-replay": [],
        }
        replay_argv = ["replay", log["path"], "--speed", "instant"]
        for i in range(args.repeat):
            runs["bare-textual"].append(
                run_cold("bare-textual", [], size=size, encode=args.encode, home=root / "bare")
            )
            runs["new"].append(run_resume(log, size, args.encode, new=True))
            runs["resume"].append(run_resume(log, size, args.encode, stacks=args.stacks))
            if args.baseline:
                runs["baseline"].append(
                    run_resume(log, size, args.encode, code=args.baseline, stacks=args.stacks)
                )
            runs["replay"].append(
                run_cold("instant", replay_argv, size=size, encode=args.encode, home=root / "rp")
            )
            if args.baseline:
                runs["baseline-replay"].append(
                    run_cold(
                        "instant",
                        replay_argv,
                        size=size,
                        encode=args.encode,
                        home=root / "rp",
                        code=args.baseline,
                    )
                )
            print(
                f"  run {i + 1}/{args.repeat}: bare {runs['bare-textual'][-1]['first_frame_s']:.3f}"
                f" s, resume tail {runs['resume'][-1]['tail_s']:.3f} s, replay tail "
                f"{runs['replay'][-1]['goal_s']:.3f} s",
                file=sys.stderr,
            )
    bare = _median(runs["bare-textual"], "first_frame_s")
    resume_tail = _median(runs["resume"], "tail_s")
    replay_tail = _median(runs["replay"], "goal_s")
    summary = {
        "bare_first_frame_s": bare,
        "new_session_ready_s": _median(runs["new"], "tail_s"),
        "resume_first_frame_s": _median(runs["resume"], "first_frame_s"),
        "resume_ready_s": _median(runs["resume"], "ready_s"),
        "resume_tail_s": resume_tail,
        "resume_ratio": resume_tail / bare,
        "resume_load_s": _median(runs["resume"], "load_s"),
        "resume_rss_mib": _median(runs["resume"], "rss_kib") / 1024,
        "resume_peak_rss_mib": _median(runs["resume"], "hwm_kib") / 1024,
        "resume_max_stall_ms": max(r["max_stall_s"] for r in runs["resume"]) * 1000,
        "resume_max_stall_median_ms": _median(runs["resume"], "max_stall_s") * 1000,
        "resume_ready_ratio": _median(runs["resume"], "ready_s") / bare,
        "resume_ready_rss_mib": _median(runs["resume"], "ready_rss_kib") / 1024,
        "resume_ready_peak_rss_mib": _median(runs["resume"], "ready_hwm_kib") / 1024,
        "resume_ready_max_stall_ms": max(r["ready_stall_s"] for r in runs["resume"]) * 1000,
        "replay_tail_s": replay_tail,
        "replay_ratio": replay_tail / bare,
        "cpu_bare_s": _median(runs["bare-textual"], "cpu_goal_s"),
        "cpu_new_s": _median(runs["new"], "cpu_ready_s"),
        "cpu_resume_tail_s": _median(runs["resume"], "cpu_tail_s"),
        "cpu_resume_ready_s": _median(runs["resume"], "cpu_ready_s"),
        "cpu_replay_s": _median(runs["replay"], "cpu_goal_s"),
    }
    if runs["baseline"]:
        summary["baseline_tail_s"] = _median(runs["baseline"], "tail_s")
        summary["baseline_ratio"] = summary["baseline_tail_s"] / bare
        summary["baseline_ready_s"] = _median(runs["baseline"], "ready_s")
        summary["baseline_ready_ratio"] = summary["baseline_ready_s"] / bare
        summary["cpu_baseline_ready_s"] = _median(runs["baseline"], "cpu_ready_s")
        summary["baseline_ready_max_stall_ms"] = (
            max(r["ready_stall_s"] for r in runs["baseline"]) * 1000
        )
        summary["baseline_replay_tail_s"] = _median(runs["baseline-replay"], "goal_s")
        summary["baseline_replay_ratio"] = summary["baseline_replay_tail_s"] / bare
        summary["cpu_baseline_resume_s"] = _median(runs["baseline"], "cpu_tail_s")
        summary["cpu_baseline_replay_s"] = _median(runs["baseline-replay"], "cpu_goal_s")
        summary["baseline_rss_mib"] = _median(runs["baseline"], "rss_kib") / 1024
        summary["baseline_peak_rss_mib"] = _median(runs["baseline"], "hwm_kib") / 1024
        summary["baseline_max_stall_ms"] = max(r["max_stall_s"] for r in runs["baseline"]) * 1000
    print(f"\n{'median over ' + str(args.repeat) + ' cold runs':<44} value    target")
    rows = [
        ("bare Textual: first frame", f"{bare * 1000:,.0f} ms", ""),
        ("new session: ready (reference)", f"{summary['new_session_ready_s'] * 1000:,.0f} ms", ""),
        ("resume: first frame", f"{summary['resume_first_frame_s'] * 1000:,.0f} ms", ""),
        ("resume: tail drawn", f"{resume_tail * 1000:,.0f} ms", ""),
        ("resume: tail / bare", f"{summary['resume_ratio']:.2f}×", "≤ 3×"),
        (
            "resume: RSS at the tail (peak)",
            f"{summary['resume_rss_mib']:.0f} ({summary['resume_peak_rss_mib']:.0f}) MiB",
            "≤ 150 MiB",
        ),
        (
            "resume: longest event-loop stall (all runs)",
            f"{summary['resume_max_stall_ms']:.0f} ms",
            "≤ 50 ms",
        ),
        (
            "resume: session open (ready)",
            f"{summary['resume_ready_s'] * 1000:,.0f} ms ({summary['resume_ready_ratio']:.2f}×)",
            "",
        ),
        (
            "resume: RSS when ready (peak)",
            f"{summary['resume_ready_rss_mib']:.0f} "
            f"({summary['resume_ready_peak_rss_mib']:.0f}) MiB",
            "≤ 150 MiB",
        ),
        (
            "resume: longest stall until ready",
            f"{summary['resume_ready_max_stall_ms']:.0f} ms",
            "≤ 50 ms",
        ),
        *(
            [
                (
                    "baseline resume: tail drawn",
                    f"{summary['baseline_tail_s'] * 1000:,.0f} ms "
                    f"({summary['baseline_ratio']:.2f}×)",
                    "",
                ),
                (
                    "baseline resume: ready",
                    f"{summary['baseline_ready_s'] * 1000:,.0f} ms "
                    f"({summary['baseline_ready_ratio']:.2f}×)",
                    "",
                ),
                (
                    "baseline resume: longest stall until ready",
                    f"{summary['baseline_ready_max_stall_ms']:.0f} ms",
                    "",
                ),
                (
                    "baseline resume: RSS at the tail (peak)",
                    f"{summary['baseline_rss_mib']:.0f} "
                    f"({summary['baseline_peak_rss_mib']:.0f}) MiB",
                    "",
                ),
                (
                    "baseline resume: longest stall",
                    f"{summary['baseline_max_stall_ms']:.0f} ms",
                    "",
                ),
            ]
            if runs["baseline"]
            else []
        ),
        ("replay: tail drawn", f"{replay_tail * 1000:,.0f} ms", ""),
        ("replay: tail / bare", f"{summary['replay_ratio']:.2f}×", "≤ 3×"),
        *(
            [
                (
                    "baseline replay: tail drawn",
                    f"{summary['baseline_replay_tail_s'] * 1000:,.0f} ms "
                    f"({summary['baseline_replay_ratio']:.2f}×)",
                    "",
                )
            ]
            if runs["baseline-replay"]
            else []
        ),
    ]
    cpu = [("bare Textual: first frame", summary["cpu_bare_s"])]
    cpu += [
        ("new session: ready", summary["cpu_new_s"]),
        ("resume: tail drawn", summary["cpu_resume_tail_s"]),
        ("resume: ready", summary["cpu_resume_ready_s"]),
        ("replay: tail drawn", summary["cpu_replay_s"]),
    ]
    if runs["baseline"]:
        cpu += [
            ("baseline resume: tail drawn", summary["cpu_baseline_resume_s"]),
            ("baseline resume: ready", summary["cpu_baseline_ready_s"]),
            ("baseline replay: tail drawn", summary["cpu_baseline_replay_s"]),
        ]
    rows += [
        (f"CPU: {label}", f"{value * 1000:,.0f} ms ({value / summary['cpu_bare_s']:.2f}×)", "")
        for label, value in cpu
    ]
    for label, value, target in rows:
        print(f"  {label:<42} {value:>16}   {target}")
    if args.stacks:
        for variant in ("resume", "baseline"):
            for number, run in enumerate(runs[variant], start=1):
                for stall in run["stalls"]:
                    when = f"{stall['ms']} ms stall at {stall['at_s']:.3f} s"
                    print(f"\n{variant} run {number}: {when}")
                    for where in stall["where"]:
                        print(f"    {where}")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    log.pop("home", None)
    log.pop("path", None)
    record = {"machine": machine(), "log": log, "summary": summary, "runs": runs}
    (out / "tail_resume.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
