"""Replay load: open a long recorded session and time the first frame, headless.

    python -m benchmarks.replay_load [--events N] [--repeat K] [--cold-repeat K]
                                     [--sizes 5000,20000,50000] [--size WxH]
                                     [--max-mounted N] [--no-encode] [--no-baseline]
                                     [--no-memory] [--no-cold] [--profile [--top T]]

A realistic ``events.jsonl`` of exactly N events (default 50,000) is generated into a
temp dir with ``Event.new(...).to_json()`` and fixed, increasing timestamps: typed
user messages, tool turns (``assistant.turn_start``, sometimes ``assistant.reasoning``,
``assistant.message`` with ``toolRequests``, ``tool.execution_start``/``_complete``
with results of a few hundred bytes, some of several KB, ``assistant.turn_end``),
final answers in Markdown, autopilot nudges and ``session.task_complete``.

1. **instant** (``ReplayScreen(path, speed=0)``: jump to the end). The clock starts
   just before ``ViewerApp(ReplayScreen(...))`` is constructed, in-process, and stops
   at the first frame displayed (``App._display`` hooked) once the screen is at the
   last event, every tail widget (and its children) is mounted and the timeline is
   scrolled to the bottom. Split into index build (``EventIndex.build``), Textual
   start-up, window parse (``EventIndex.read``), fold (``Timeline.load`` minus creating
   the views), creating the views, and mounting + layout + paint. Also: events parsed,
   top-level blocks and widgets at that frame.
2. **speed 1** (``ReplayScreen(path, speed=1)``: plays from the start). Clock to the
   first frame, and to the first frame showing a block (minus the recorded wait before
   that event, which playback honours).
3. **memory** (two fresh child processes per size, each after a warm-up on a small
   log): one traces with ``tracemalloc`` (the index alone, in bytes per event; then a
   whole load, current and peak at the tail frame; "shown" is that minus the index;
   then, for comparison, ``read_events`` + ``fold`` of the whole file), the other is
   untraced and reads ``VmRSS`` and ``VmHWM`` (reset first) at the tail frame.
4. **cold start** (fresh child processes): ``loopdeck replay PATH --speed instant``
   (and the default speed 1) through ``app.cli.main`` with ``App.run`` forced headless,
   from spawning the process to the first frame and to the tail frame; checks that
   ``litellm`` is not imported. A one-widget Textual app gives the floor.

In-process runs follow one discarded warm-up; instant and speed-1 runs are
interleaved. Headless Textual does not turn frames into escape codes; the benchmark
does that work anyway (``--no-encode`` to skip). Results: a table on stdout and
``benchmarks/results/replay_load.json``. ``--profile`` instead runs one instant load
under cProfile and prints the hottest functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import datetime
import functools
import gc
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.headless_child import HEADLESS_CHILD
from benchmarks.machine import load_average, machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "replay_load.json"
PROFILE_OUT = RESULTS.with_suffix(".prof")
RESULT_MARK = "@@REPLAY-BENCH-RESULT@@ "

TARGET_FIRST_FRAME_S = 1.0
DEFAULT_EVENTS = 50_000
DEFAULT_SIZES = (5_000, 20_000, 50_000)
DEFAULT_SIZE = (120, 40)
WARMUP_EVENTS = 2_000
MIN_EVENTS = 100
SEED = 20261130
MODEL = "gpt-5-mini"
START = datetime.datetime(2026, 1, 5, 9, 0, 0, tzinfo=datetime.UTC)
FIRST_PROMPT_GAP_S = 0.25  # session.start -> first user.message


class BenchmarkError(AssertionError):
    """A run that did not do what it should: its timing is meaningless."""


def check(condition: bool, message: str) -> None:
    # Not a bare ``assert``: the checks must survive ``python -O``.
    if not condition:
        raise BenchmarkError(message)


# =====================================================================================
# The session: a realistic events.jsonl of exactly N events
# =====================================================================================

_FILES = (
    "agent/loop/turn_loop.py",
    "agent/session/session.py",
    "agent/log/store.py",
    "agent/transcript/fold.py",
    "agent/log/replay.py",
    "app/app.py",
    "app/viewer.py",
    "widgets/timeline.py",
    "widgets/turn_view.py",
    "widgets/tool_card.py",
    "tests/loop/test_loop.py",
    "tests/test_store.py",
    "tests/transcript/test_transcript.py",
    "pyproject.toml",
    "README.md",
)
_TEXT = (
    "the loop emits one event per change and the writer appends it in batches so a "
    "crash never loses more than the batch being written while the reader tolerates "
    "a torn last line blank lines and unknown types each fold step touches only the "
    "blocks it changes found through dicts keyed by turn id message id and call id"
)
_WORDS = tuple(_TEXT.split(" "))
_CODE = (
    "def apply(self, event: Event) -> list[Change]:",
    '    """Fold one event in; return the blocks it added or updated."""',
    "    self.events += 1",
    "    ts = parse_timestamp(event.timestamp)",
    "    match event.data:",
    "        case UserMessageData() as d:",
    "            changes = self._user_message(d, ts)",
    "        case AssistantTurnStartData() as d:",
    "            changes = self._turn_start(d, ts)",
    "    return _dedupe(changes)",
    "",
    "async def send_and_wait(self, prompt: str) -> Outcome:",
    "    await self.send(prompt)",
    "    return await self._idle.wait()",
)


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[:1].upper() + text[1:] + "."


def _prose(rng: random.Random, chars: int) -> str:
    parts: list[str] = []
    size = 0
    while size < chars:
        s = _sentence(rng, rng.randint(6, 18))
        parts.append(s)
        size += len(s) + 1
    return " ".join(parts)


def _code_lines(rng: random.Random, chars: int, *, numbered: bool = False) -> str:
    lines: list[str] = []
    size, start = 0, rng.randint(1, 400)
    while size < chars:
        line = rng.choice(_CODE)
        if numbered:
            line = f"{start + len(lines):>5}\t{line}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _tool_call(rng: random.Random) -> tuple[str, dict[str, Any], str, bool]:
    """(name, arguments, result content, success) of one realistic tool call."""
    roll = rng.random()
    # Result sizes: mostly a few hundred bytes, a quarter 1-4 KB, a few 6-12 KB.
    size_roll = rng.random()
    size = (
        rng.randint(150, 700)
        if size_roll < 0.70
        else rng.randint(1_000, 4_000)
        if size_roll < 0.95
        else rng.randint(6_000, 12_000)
    )
    path = rng.choice(_FILES)
    if roll < 0.35:
        args = {"path": path, "offset": rng.randint(1, 300), "limit": 200}
        return "view", args, _code_lines(rng, size, numbered=True), True
    if roll < 0.50:
        args = {"pattern": rng.choice(["def apply", "EventIndex", "timestamp", "TODO"])}
        lines = [
            f"{rng.choice(_FILES)}:{rng.randint(1, 900)}: {rng.choice(_CODE).strip()}"
            for _ in range(max(1, size // 70))
        ]
        return "grep", args, "\n".join(lines), True
    if roll < 0.60:
        args = {"pattern": rng.choice(["**/*.py", "tests/**/*.py", "*.toml"])}
        lines = [rng.choice(_FILES) for _ in range(max(1, size // 22))]
        return "glob", args, "\n".join(lines), True
    if roll < 0.85:
        cmd = rng.choice(
            [
                "pytest -q tests/test_store.py",
                "ruff check .",
                "git diff --stat",
                "python -m mypy agent",
                "ls -la agent",
            ]
        )
        ok = rng.random() < 0.85
        out = _code_lines(rng, size) + ("\n12 passed in 0.84s" if ok else "\n1 failed, 11 passed")
        return "bash", {"command": cmd}, out, ok
    old = rng.choice(_CODE).strip() or "pass"
    args = {"path": path, "old_str": old, "new_str": old + "  # changed"}
    return "edit", args, f"Edited {path}: replaced 1 occurrence (1 line).", True


@dataclass(slots=True)
class _Turn:
    tools: int  # tool calls requested (0: a final answer)
    reasoning: bool = False
    task_complete: bool = False  # the last tool call is task_complete

    @property
    def size(self) -> int:
        # turn_start, [reasoning], message, start+complete per tool, [task_complete], turn_end
        return 3 + self.reasoning + 2 * self.tools + self.task_complete


@dataclass(slots=True)
class _User:
    nudge: bool = False
    autopilot: bool = False

    size = 1


def _plan_send(rng: random.Random) -> list[_User | _Turn]:
    """One typed message and what it set off: tool turns, an answer or a task_complete."""
    autopilot = rng.random() < 0.35
    plan: list[_User | _Turn] = [_User(autopilot=autopilot)]

    def tool_turns(k: int) -> None:
        for _ in range(k):
            plan.append(_Turn(1 if rng.random() < 0.75 else rng.randint(2, 3), rng.random() < 0.3))

    tool_turns(rng.randint(3, 20))
    if not autopilot:
        plan.append(_Turn(0, rng.random() < 0.3))
        return plan
    for _ in range(rng.choice((0, 0, 1, 2))):  # the model stopped early: nudged on
        plan.append(_Turn(0))
        plan.append(_User(nudge=True, autopilot=True))
        tool_turns(rng.randint(1, 6))
    plan.append(_Turn(1, task_complete=True))
    return plan


def _plan_exact(remaining: int) -> list[_User | _Turn]:
    """A last send of exactly ``remaining`` (>= 15) events: tool turns and an answer."""
    plan: list[_User | _Turn] = [_User()]
    rest = remaining - 1 - 3  # the message, and the final answer's turn
    while rest > 9:
        plan.append(_Turn(1))
        rest -= 5
    # 5..9 left: one more tool turn of exactly that size
    plan.append(_Turn(tools=(rest - 3) // 2, reasoning=(rest - 3) % 2 == 1))
    plan.append(_Turn(0))
    return plan


def generate_session(path: Path, events: int, *, seed: int = SEED) -> dict[str, Any]:
    """Write ``events`` valid envelopes to ``path``; return counts of what was written."""
    from agent.events.schema import (
        AssistantMessageData,
        AssistantReasoningData,
        AssistantTurnEndData,
        AssistantTurnStartData,
        Event,
        EventData,
        SessionStartData,
        SessionTaskCompleteData,
        ToolExecutionCompleteData,
        ToolExecutionStartData,
        ToolRequest,
        ToolResultPayload,
        UserMessageData,
        WorkingDirectoryContext,
    )

    check(events >= MIN_EVENTS, f"--events must be at least {MIN_EVENTS}")
    rng = random.Random(seed)
    session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    clock = [START]
    last_id: list[str | None] = [None]
    lines: list[str] = []
    counts: dict[str, int] = {}

    def emit(data: EventData, after_s: float) -> None:
        clock[0] += datetime.timedelta(seconds=after_s)
        event = Event.new(data, last_id[0])
        event.id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        event.timestamp = clock[0].isoformat(timespec="milliseconds").replace("+00:00", "Z")
        last_id[0] = event.id
        lines.append(event.to_json())
        counts[event.type] = counts.get(event.type, 0) + 1

    def new_id() -> str:
        return uuid.UUID(int=rng.getrandbits(128), version=4).hex

    emit(
        SessionStartData(
            session_id=session_id,
            copilot_version="0.1.0",
            start_time=START.isoformat().replace("+00:00", "Z"),
            selected_model=MODEL,
            context=WorkingDirectoryContext(cwd="/home/dev/ws/loopdeck", branch="main"),
        ),
        0.0,
    )
    model_calls = 0
    first = True

    def send(plan: list[_User | _Turn]) -> None:
        nonlocal model_calls, first
        for step in plan:
            if isinstance(step, _User):
                if step.nudge:
                    emit(
                        UserMessageData(
                            content="Continue: the task is not complete yet.",
                            agent_mode="autopilot",
                            is_autopilot_continuation=True,
                        ),
                        0.05,
                    )
                else:
                    gap = FIRST_PROMPT_GAP_S if first else rng.choice((4.0, 15.0, 60.0, 600.0))
                    emit(
                        UserMessageData(
                            content=_prose(rng, rng.randint(40, 400)),
                            agent_mode="autopilot" if step.autopilot else "interactive",
                        ),
                        gap,
                    )
                first = False
                continue
            turn_id = str(model_calls)
            model_calls += 1
            emit(AssistantTurnStartData(turn_id=turn_id, model=MODEL), 0.02)
            if step.reasoning:
                emit(
                    AssistantReasoningData(
                        reasoning_id=new_id(), content=_prose(rng, rng.randint(150, 800))
                    ),
                    rng.uniform(0.5, 3.0),
                )
            calls = [_tool_call(rng) for _ in range(step.tools)]
            if step.task_complete:
                summary = _prose(rng, rng.randint(80, 300))
                calls[-1] = ("task_complete", {"summary": summary}, "Task marked complete.", True)
            requests = [
                ToolRequest(tool_call_id=f"call_{new_id()[:24]}", name=name, arguments=args)
                for name, args, _out, _ok in calls
            ]
            if step.tools:
                text = _prose(rng, rng.randint(0, 240)) if rng.random() < 0.6 else ""
            else:  # a final answer in Markdown
                text = (
                    f"## Summary\n\n{_prose(rng, rng.randint(200, 900))}\n\n"
                    f"- {_sentence(rng, 8)}\n- {_sentence(rng, 10)}\n\n"
                    f"```python\n{_code_lines(rng, rng.randint(80, 500))}\n```\n"
                )
            emit(
                AssistantMessageData(
                    message_id=new_id(),
                    content=text,
                    tool_requests=requests or None,
                    turn_id=turn_id,
                    model=MODEL,
                    output_tokens=rng.randint(20, 900),
                ),
                rng.uniform(0.8, 8.0),
            )
            for request, (name, args, out, ok) in zip(requests, calls, strict=True):
                emit(
                    ToolExecutionStartData(
                        tool_call_id=request.tool_call_id,
                        tool_name=name,
                        arguments=args,
                        turn_id=turn_id,
                    ),
                    0.01,
                )
                emit(
                    ToolExecutionCompleteData(
                        tool_call_id=request.tool_call_id,
                        success=ok,
                        result=ToolResultPayload(content=out),
                        turn_id=turn_id,
                        model=MODEL,
                    ),
                    rng.uniform(0.02, 4.0 if name == "bash" else 0.3),
                )
                if name == "task_complete":
                    emit(SessionTaskCompleteData(summary=args["summary"], success=True), 0.001)
            emit(AssistantTurnEndData(turn_id=turn_id, model=MODEL), 0.01)

    def size(plan: list[_User | _Turn]) -> int:
        return sum(step.size for step in plan)

    remaining = events - 1
    while remaining:
        plan = _plan_send(rng)
        if remaining - size(plan) < 15:
            plan = _plan_exact(remaining)
        send(plan)
        remaining -= size(plan)
    check(len(lines) == events, f"generated {len(lines)} events, want {events}")
    data = "\n".join(lines) + "\n"
    path.write_text(data, encoding="utf-8")
    return {
        "events": len(lines),
        "bytes": len(data.encode("utf-8")),
        "turns": counts.get("assistant.turn_start", 0),
        "types": dict(sorted(counts.items())),
        "recorded_s": (clock[0] - START).total_seconds(),
    }


# =====================================================================================
# Measuring one load, in-process
# =====================================================================================


class Probe:
    """Times the phases of a load by wrapping a few methods (restored afterwards)."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self.spans: dict[str, float] = {}
        self.parsed = 0

    @contextlib.contextmanager
    def installed(self) -> Iterator[Probe]:
        import app.viewer
        from app.viewer import ReplayScreen
        from widgets.timeline import Timeline

        # The class the viewer builds (an A/B comparison may swap it).
        EventIndex = vars(app.viewer)["EventIndex"]

        originals = {
            (EventIndex, "read"): EventIndex.read,
            (Timeline, "load"): Timeline.load,
            (Timeline, "_mount_range"): Timeline._mount_range,
            (ReplayScreen, "on_mount"): ReplayScreen.on_mount,
        }
        probe = self

        def timed(
            key: str, fn: Callable[..., Any], *, first_mark: str | None = None, count: bool = False
        ) -> Callable[..., Any]:
            @functools.wraps(fn)  # Textual counts a handler's parameters
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                if first_mark and first_mark not in probe.marks:
                    probe.marks[first_mark] = start
                out = fn(*args, **kwargs)
                end = time.perf_counter()
                probe.spans[key] = probe.spans.get(key, 0.0) + end - start
                probe.marks[key + "_end"] = end
                if count:
                    probe.parsed += len(out)
                return out

            return wrapper

        EventIndex.read = timed("read", EventIndex.read, count=True)
        Timeline.load = timed("load", Timeline.load)  # type: ignore[method-assign]
        Timeline._mount_range = timed("views", Timeline._mount_range)  # type: ignore[method-assign]
        ReplayScreen.on_mount = timed(  # type: ignore[method-assign]
            "on_mount", ReplayScreen.on_mount, first_mark="on_mount_start"
        )
        try:
            yield self
        finally:
            for (owner, name), fn in originals.items():
                setattr(owner, name, fn)


def _tail_settled(screen: Any) -> bool:
    """Every top-level view of the timeline, and everything in it, is mounted."""
    timeline = screen.timeline
    views = list(timeline._views.values())
    return bool(views) and all(
        v.is_mounted and getattr(v, "_ready", True) and all(c.is_mounted for c in v.query("*"))
        for v in views
    )


def _viewer_app_class() -> type:
    from textual._compositor import CompositorUpdate

    from app.viewer import ViewerApp

    class BenchViewerApp(ViewerApp):
        """ViewerApp that records displayed frames (and encodes them, headless)."""

        def __init__(self, screen: Any, *, encode: bool, goal: Callable[[Any], bool]) -> None:
            super().__init__(screen)
            self.encode_frames = encode
            self.goal = goal
            self.frames: list[float] = []
            self.goal_frame: float | None = None
            self.goal_cpu: float | None = None
            self.goal_state: dict[str, Any] = {}
            self.reached = asyncio.Event()

        def _display(self, screen: Any, renderable: Any) -> None:
            shown = renderable is not None and not self._batch_count
            if (
                shown
                and self.encode_frames
                and self.is_headless
                and isinstance(renderable, CompositorUpdate)
            ):
                # What a real driver does before writing: the frame as escape codes.
                renderable.render_segments(self.console)
            super()._display(screen, renderable)
            if not shown:
                return
            now = time.perf_counter()
            self.frames.append(now)
            if self.goal_frame is None and self.goal(self._viewer):
                self.goal_frame = now
                self.goal_cpu = time.process_time()
                self.goal_state = _shown_state(self._viewer)
                self.reached.set()

    return BenchViewerApp


def _shown_state(screen: Any) -> dict[str, Any]:
    timeline = screen.timeline
    return {
        "position": screen.position,
        "events": len(screen.index),
        "blocks_in_window": len(timeline.transcript.items),
        "blocks_mounted": timeline.mounted_blocks,
        "widgets": sum(1 for _ in screen.query("*")),
        "turn_views": sum(1 for _ in screen.query("TurnView")),
        "tool_cards": sum(1 for _ in screen.query("ToolCard")),
        "at_bottom": timeline.scroll_y >= timeline.max_scroll_y,
        "first_turn_shown": timeline.transcript.turns
        - sum(1 for b in timeline.transcript.items if type(b).__name__ == "TurnBlock")
        + 1,
    }


def instant_goal(screen: Any) -> bool:
    timeline = screen.timeline
    return (
        screen.position == len(screen.index)
        and _tail_settled(screen)
        and timeline.scroll_y >= timeline.max_scroll_y  # anchored: the last line in view
    )


def first_block_goal(screen: Any) -> bool:
    return screen.position > 0 and _tail_settled(screen)


async def measure_load(
    path: Path,
    *,
    speed: float,
    size: tuple[int, int],
    encode: bool,
    timeout: float = 60.0,
    on_goal: Callable[[Any], None] | None = None,
    max_mounted: int | None = None,
) -> dict[str, Any]:
    """One load: construct the viewer, run it headless, stop at the goal frame."""
    from app.viewer import ReplayScreen

    app_class = _viewer_app_class()
    goal = instant_goal if speed <= 0 else first_block_goal
    probe = Probe()
    gc.collect()
    with probe.installed():
        t0, cpu0 = time.perf_counter(), time.process_time()
        screen = ReplayScreen(path, speed=speed)
        t_index = time.perf_counter()
        if max_mounted:
            screen.timeline.max_mounted = max_mounted
        app = app_class(screen, encode=encode, goal=goal)
        async with app.run_test(size=size):
            try:
                await asyncio.wait_for(app.reached.wait(), timeout)
            except TimeoutError:
                raise BenchmarkError(f"no goal frame within {timeout:g}s (speed {speed})") from None
            if on_goal is not None:
                on_goal(app)
            screen.playing = False  # stop a speed-1 player before shutting down
    check(app.goal_frame is not None and app.frames, "no frame was displayed")
    m, s = probe.marks, probe.spans
    out: dict[str, Any] = {
        "total_s": app.goal_frame - t0,
        "total_cpu_s": app.goal_cpu - cpu0,  # this process, all threads
        "first_frame_s": app.frames[0] - t0,
        "index_s": t_index - t0,
        "startup_s": m.get("on_mount_start", t0) - t_index,  # Textual: app, driver, screen
        "parsed_events": probe.parsed,
        **app.goal_state,
    }
    if speed <= 0:
        check("load_end" in m, "Timeline.load never ran")
        out["parse_s"] = s.get("read", 0.0)
        out["fold_s"] = s["load"] - s.get("views", 0.0)
        out["views_s"] = s.get("views", 0.0)
        out["on_mount_s"] = s["on_mount"]
        # From the end of jump_to (views handed to mount_all) to the goal frame.
        out["mount_paint_s"] = app.goal_frame - m["on_mount_end"]
        check(app.goal_state["position"] == len(screen.index), "not at the end of the log")
        check(app.goal_state["at_bottom"], "the tail frame is not scrolled to the bottom")
    else:
        first = next(i for i, t in enumerate(screen.index.types) if t == "user.message")
        out["recorded_wait_s"] = _playback_wait(screen.index.times, first, speed)
        out["first_block_s"] = out.pop("total_s")
        out["first_block_cpu_s"] = out.pop("total_cpu_s")
        out["first_block_minus_wait_s"] = out["first_block_s"] - out["recorded_wait_s"]
    return out


def _playback_wait(times: list[float | None], upto: int, speed: float) -> float:
    from agent.log.replay import pacing

    return sum(pacing(times[i - 1], times[i], speed).seconds for i in range(1, upto + 1))


# =====================================================================================
# Memory: one fresh child per size
# =====================================================================================


def _proc_status_kib(field_name: str) -> int | None:
    """A ``/proc/self/status`` field in KiB (VmRSS, VmHWM); None where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset VmHWM (Linux: ``5`` to clear_refs) so the peak is the load's own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


async def child_memory(p: dict[str, Any]) -> dict[str, Any]:
    """One size, one mode, in a fresh process: ``rss`` (untraced) or ``traced``.

    The two modes run in separate processes: tracemalloc's own bookkeeping would
    inflate RSS, and a second load in one process would reuse what the first freed.
    """
    from agent.log.replay import EventIndex

    path, size, encode = Path(p["path"]), tuple(p["size"]), p["encode"]
    # Warm-up on a small log: imports, Textual's CSS and one-time caches.
    await measure_load(Path(p["warmup"]), speed=0, size=size, encode=encode)
    gc.collect()
    out: dict[str, Any] = {}
    seen: dict[str, Any] = {}

    if p["mode"] == "rss":
        out["rss_base_kib"] = _proc_status_kib("VmRSS")
        out["hwm_reset"] = _reset_peak_rss()

        def at_frame(app: Any) -> None:
            seen["rss"], seen["hwm"] = _proc_status_kib("VmRSS"), _proc_status_kib("VmHWM")

        load = await measure_load(path, speed=0, size=size, encode=encode, on_goal=at_frame)
        out.update(
            rss_at_frame_kib=seen["rss"],
            peak_rss_kib=seen["hwm"] if out["hwm_reset"] else None,
            total_s=load["total_s"],
        )
        return out

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    index = EventIndex.build(path)
    idx_current, idx_peak = tracemalloc.get_traced_memory()
    out["index_bytes"] = idx_current - base
    out["index_peak_bytes"] = idx_peak - base
    out["events"] = len(index)
    del index
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]

    def at_goal(app: Any) -> None:
        current, peak = tracemalloc.get_traced_memory()
        seen["current"], seen["peak"] = current - base, peak - base

    load = await measure_load(path, speed=0, size=size, encode=encode, on_goal=at_goal)
    tracemalloc.stop()
    out.update(
        traced_current_bytes=seen["current"],
        traced_peak_bytes=seen["peak"],
        parsed_events=load["parsed_events"],
        blocks_mounted=load["blocks_mounted"],
        widgets=load["widgets"],
    )
    # What the index does not account for: the parsed window, the fold, the widgets.
    out["shown_bytes"] = out["traced_current_bytes"] - out["index_bytes"]

    if p["baseline"]:  # for comparison: what parsing and folding everything costs
        from agent.log.store import read_events
        from agent.transcript.fold import fold

        gc.collect()
        start = time.perf_counter()
        transcript = fold(read_events(path).events, replay=True)
        out["full_parse_fold_s"] = time.perf_counter() - start
        del transcript
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        result = read_events(path)
        transcript = fold(result.events, replay=True)
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out["full_parse_current_bytes"] = current - base
        out["full_parse_peak_bytes"] = peak - base
        del result, transcript
    return out


def child_main(params_json: str) -> int:
    params = json.loads(params_json)
    result = asyncio.run(child_memory(params))
    print("\n" + RESULT_MARK + json.dumps(result))
    sys.stdout.flush()
    return 0


def _parse_result(done: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            result: dict[str, Any] = json.loads(line[len(RESULT_MARK) :])
            return result
    tail = (done.stderr or done.stdout)[-2000:]
    raise BenchmarkError(f"{what} failed (exit {done.returncode}):\n{tail}")


def run_memory_child(params: dict[str, Any], timeout: float = 600.0) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.replay_load", "--child", json.dumps(params)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return _parse_result(done, "memory child")


# =====================================================================================
# Cold start: ``loopdeck replay`` in a fresh process
# =====================================================================================

# Runs as ``python -c``: nothing from benchmarks/ is imported, so only the app is timed.
# argv[1]: {variant, argv, size, encode, timeout}.
COLD_CHILD = (
    HEADLESS_CHILD
    + r"""
def _settled(screen):
    views = list(screen.timeline._views.values())
    return bool(views) and all(
        v.is_mounted and getattr(v, "_ready", True) and all(c.is_mounted for c in v.query("*"))
        for v in views
    )

def _goal(app):
    screen = getattr(app, "_viewer", None)
    if screen is None:
        return True  # the bare Textual app
    if _p["variant"] == "instant":
        return screen.position == len(screen.index) and _settled(screen)
    return screen.position > 0 and _settled(screen)

def _on_frame(self, now):
    if "goal" not in _marks and _goal(self):
        _marks["goal"] = now
        _marks["cpu_goal"] = _cpu()
        viewer = getattr(self, "_viewer", None)
        if viewer is not None:
            _marks["position"] = viewer.position
            _marks["events"] = len(viewer.index)
            _marks["blocks_mounted"] = viewer.timeline.mounted_blocks
            viewer.playing = False
        _marks["litellm_at_goal"] = any(
            m == "litellm" or m.startswith("litellm.") for m in sys.modules
        )
        self.call_later(self.exit)

def _setup():
    _when_imported("agent.log.replay", lambda m: _timed(m.EventIndex, "build", "index"))

_run_app(_setup)
print("\n@@REPLAY-BENCH-RESULT@@ " + json.dumps(_marks))
"""
)


def run_cold(
    variant: str,
    argv: list[str],
    *,
    size: tuple[int, int],
    encode: bool,
    home: Path,
    timeout: float = 120.0,
    code: str | None = None,
) -> dict[str, Any]:
    """One cold child (``code``: a checkout of another commit to run instead)."""
    params = {
        "variant": variant,
        "argv": argv,
        "size": list(size),
        "encode": encode,
        "timeout": timeout,
    }
    env = dict(os.environ)
    env.update(
        LOOPDECK_HOME=str(home / "loopdeck"),
        COPILOT_HOME=str(home / "copilot"),
        HOME=str(home),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if code is not None:
        env["PYTHONPATH"] = code
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", COLD_CHILD, json.dumps(params)],
        cwd=code or ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        stdin=subprocess.DEVNULL,
    )
    exited = time.monotonic()
    marks = _parse_result(done, f"cold-start child ({variant})")
    check("first_frame" in marks and "goal" in marks, f"{variant}: no goal frame")
    out = {
        "interpreter_s": marks["code"] - start,
        "first_frame_s": marks["first_frame"] - start,
        "goal_s": marks["goal"] - start,
        "process_s": exited - start,
        "litellm_loaded": bool(marks.get("litellm_loaded") or marks.get("litellm_at_goal")),
        "modules": marks.get("modules"),
        "cpu_goal_s": marks.get("cpu_goal"),  # CPU seconds of the process, start to goal
    }
    if "index_start" in marks:
        # Interpreter start to the viewer being built: Textual, app.cli, app.viewer imports.
        out["imports_s"] = marks["index_start"] - marks["code"]
        out["index_s"] = marks["index_end"] - marks["index_start"]
        out["index_end_s"] = marks["index_end"] - start
    if "position" in marks:
        # Instant replay indexes the log's tail first (EventIndex.build_tail): no
        # index_* marks then, but the goal frame's state is there all the same.
        out["position"], out["events"] = marks["position"], marks["events"]
        out["blocks_mounted"] = marks["blocks_mounted"]
    return out


# =====================================================================================
# Report
# =====================================================================================


def med(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k, v in runs[0].items() if isinstance(v, int | float) and not isinstance(v, bool)]
    out: dict[str, Any] = {"n": len(runs)}
    for key in keys:
        values = [r[key] for r in runs if r.get(key) is not None]
        out[key] = {
            "median": statistics.median(values),
            "min": min(values),
            "max": max(values),
        }
    for key, value in runs[0].items():
        if isinstance(value, bool):
            out[key] = [r[key] for r in runs]
    return out


def _ms(stat: dict[str, Any] | None) -> str:
    return "-" if not stat else f"{stat['median'] * 1000:,.0f}"


def _spread_ms(stat: dict[str, Any] | None) -> str:
    return "-" if not stat else f"{stat['min'] * 1000:,.0f}–{stat['max'] * 1000:,.0f}"


def _kib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:,.0f}"


def print_report(results: dict[str, Any]) -> list[str]:
    failures: list[str] = []
    session = results["session"]
    print(
        f"\nsession: {session['events']:,} events, {session['bytes'] / 2**20:.1f} MiB, "
        f"{session['turns']:,} turns"
    )
    inst, play = results["instant"], results["speed1"]
    print("\nin-process, median ms (min–max) over", inst["n"], "runs")
    rows = [
        ("instant: construct -> tail frame", inst["total_s"]),
        ("  (CPU time of the process)", inst["total_cpu_s"]),
        ("  index build (EventIndex.build)", inst["index_s"]),
        ("  Textual start-up (to on_mount)", inst["startup_s"]),
        ("  jump_to: parse window (read)", inst["parse_s"]),
        ("  jump_to: fold window", inst["fold_s"]),
        ("  jump_to: create views", inst["views_s"]),
        ("  mount + layout + paint", inst["mount_paint_s"]),
        ("instant: first frame (any)", inst["first_frame_s"]),
        ("speed 1: first frame", play["first_frame_s"]),
        ("speed 1: first block frame", play["first_block_s"]),
        ("  (CPU time of the process)", play["first_block_cpu_s"]),
        ("  of which recorded wait", play["recorded_wait_s"]),
    ]
    for label, stat in rows:
        print(f"  {label:<36} {_ms(stat):>8}   ({_spread_ms(stat)})")
    g = results["instant_shown"]
    print(
        f"  at the tail frame: {g['parsed_events']:,} events parsed of {g['events']:,}, "
        f"{g['blocks_in_window']} blocks folded, {g['blocks_mounted']} mounted, "
        f"{g['widgets']} widgets ({g['turn_views']} turns, {g['tool_cards']} tool cards)"
    )
    total = inst["total_s"]["median"]
    verdict = "ok" if total < TARGET_FIRST_FRAME_S else "OVER"
    print(
        f"  target < {TARGET_FIRST_FRAME_S:g} s to the tail frame: {total * 1000:,.0f} ms", verdict
    )

    mem = results.get("memory") or {}
    if mem:
        print(
            "\nmemory at the tail frame, KiB (fresh children per size: tracemalloc in one, "
            "RSS in another)"
        )
        header = (
            f"  {'events':>7} {'file MiB':>8} {'index':>7} {'B/event':>7} {'shown':>7} "
            f"{'traced':>7} {'peak':>7} {'RSS':>7} {'RSS +':>7} {'VmHWM':>7} {'parsed':>6} "
            f"{'widgets':>7} {'full parse':>10}"
        )
        print(header)
        for n, r in mem.items():
            full = r.get("full_parse_current_bytes")
            rss, base, hwm = r["rss_at_frame_kib"], r["rss_base_kib"], r["peak_rss_kib"]
            print(
                f"  {int(n):>7,} {r['file_bytes'] / 2**20:>8.1f} {_kib(r['index_bytes']):>7} "
                f"{r['index_bytes'] / r['events']:>7.0f} {_kib(r['shown_bytes']):>7} "
                f"{_kib(r['traced_current_bytes']):>7} {_kib(r['traced_peak_bytes']):>7} "
                f"{rss:>7,} {rss - base:>7,} {'-' if hwm is None else format(hwm, ','):>7} "
                f"{r['parsed_events']:>6,} {r['widgets']:>7} {_kib(full):>10}"
            )
        print(
            "  index: EventIndex alone; shown: the rest of what the load keeps (window, fold,"
            " widgets); full parse: read_events + fold of the whole file, for comparison"
        )
    cold = results.get("cold") or {}
    if cold:
        print("\ncold start, process spawn -> frame, median ms (min–max)")
        for name, s in cold.items():
            litellm = any(s.get("litellm_loaded", []))
            print(
                f"  {name:<16} first frame {_ms(s['first_frame_s']):>6} "
                f"({_spread_ms(s['first_frame_s'])})   goal {_ms(s['goal_s']):>6} "
                f"({_spread_ms(s['goal_s'])})   interpreter {_ms(s['interpreter_s']):>4}"
                f"{'' if 'index_s' not in s else '   imports ' + _ms(s['imports_s'])}"
                f"{'' if 'index_s' not in s else '   index ' + _ms(s['index_s'])}"
                f"   {'litellm LOADED' if litellm else 'no litellm'}"
            )
            if litellm:
                failures.append(f"litellm was imported before the frame ({name})")
        print("  goal: the tail frame (instant), the first block's frame (speed 1)")
    return failures


# =====================================================================================
# Entry points
# =====================================================================================


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def bench_in_process(path: Path, warmup: Path, args: argparse.Namespace) -> dict[str, Any]:
    common = {"size": args.size, "encode": args.encode, "max_mounted": args.max_mounted}
    await measure_load(warmup, speed=0, **common)
    await measure_load(warmup, speed=1, **common)
    instant: list[dict[str, Any]] = []
    speed1: list[dict[str, Any]] = []
    for i in range(args.repeat):
        # Interleaved so that a noisy neighbour hurts both alike.
        r = await measure_load(path, speed=0, **common)
        instant.append(r)
        p = await measure_load(path, speed=1, **common)
        speed1.append(p)
        _log(
            f"  run {i + 1}/{args.repeat}: instant {r['total_s'] * 1000:7.1f} ms "
            f"(index {r['index_s'] * 1000:.0f}), speed 1 first frame "
            f"{p['first_frame_s'] * 1000:.1f} ms, first block {p['first_block_s'] * 1000:.1f} ms"
        )
    shown_keys = (
        "parsed_events",
        "events",
        "position",
        "blocks_in_window",
        "blocks_mounted",
        "widgets",
        "turn_views",
        "tool_cards",
        "first_turn_shown",
    )
    return {
        "instant": summarize(instant),
        "speed1": summarize(speed1),
        "instant_shown": {k: instant[-1][k] for k in shown_keys},
        "speed1_shown": {k: speed1[-1][k] for k in shown_keys},
        "instant_runs": instant,
        "speed1_runs": speed1,
    }


def bench_cold(path: Path, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    variants = {
        "bare-textual": ("bare-textual", []),
        "replay instant": ("instant", ["replay", str(path), "--speed", "instant"]),
        "replay speed 1": ("speed1", ["replay", str(path)]),
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for i in range(args.cold_repeat):
        for name, (variant, argv) in variants.items():
            r = run_cold(variant, argv, size=args.size, encode=args.encode, home=tmp)
            runs[name].append(r)
            _log(
                f"  cold {i + 1}/{args.cold_repeat} {name:<15} first frame "
                f"{r['first_frame_s'] * 1000:6.0f} ms, goal {r['goal_s'] * 1000:6.0f} ms"
            )
    for name in ("replay instant",):
        for r in runs[name]:
            check(r["position"] == r["events"], f"{name}: the tail was not shown")
    return {name: summarize(rs) | {"runs": rs} for name, rs in runs.items()}


def bench_memory(
    sizes: list[int], files: dict[int, Path], warmup: Path, args: argparse.Namespace
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in sizes:
        params = {
            "path": str(files[n]),
            "warmup": str(warmup),
            "size": list(args.size),
            "encode": args.encode,
            "baseline": args.baseline,
        }
        r = run_memory_child(params | {"mode": "traced"})
        r.update(run_memory_child(params | {"mode": "rss"}))
        r["file_bytes"] = files[n].stat().st_size
        out[str(n)] = r
        _log(
            f"  memory {n:>6,} events: index {r['index_bytes'] / 1024:,.0f} KiB, shown "
            f"{r['shown_bytes'] / 1024:,.0f} KiB, peak {r['traced_peak_bytes'] / 1024:,.0f} KiB"
        )
    return out


def run_profile(path: Path, warmup: Path, args: argparse.Namespace) -> int:
    async def go() -> float:
        await measure_load(warmup, speed=0, size=args.size, encode=args.encode)
        profiler = cProfile.Profile()
        profiler.enable()
        # From constructing the viewer to the tail frame (not the shutdown after it).
        r = await measure_load(
            path,
            speed=0,
            size=args.size,
            encode=args.encode,
            on_goal=lambda _app: profiler.disable(),
        )
        profiler.dump_stats(PROFILE_OUT)
        return float(r["total_s"])

    seconds = asyncio.run(go())
    print(
        f"cProfile of one instant load of {args.events:,} events: {seconds * 1000:.0f} ms "
        f"under the profiler; saved to {PROFILE_OUT}"
    )
    stats = pstats.Stats(str(PROFILE_OUT))
    entries: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = vars(stats)["stats"]
    project = [str(ROOT / d) + os.sep for d in ("agent", "app", "widgets")]

    def short(filename: str) -> str:
        marker = "site-packages" + os.sep
        if marker in filename:
            return filename.split(marker, 1)[1]
        return filename.removeprefix(str(ROOT) + os.sep)

    mine = sorted(
        ((k, v) for k, v in entries.items() if any(k[0].startswith(p) for p in project)),
        key=lambda kv: kv[1][3],
        reverse=True,
    )
    print(f"\ntop {args.top} project functions by cumulative time")
    print(f"{'ncalls':>9} {'tottime s':>10} {'cumtime s':>10}  function")
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in mine[: args.top]:
        print(f"{nc:>9} {tt:>10.4f} {ct:>10.4f}  {short(filename)}:{line}({func})")
    print(f"\ntop {args.top} functions anywhere by own time")
    print(f"{'ncalls':>9} {'tottime s':>10} {'cumtime s':>10}  function")
    anywhere = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in anywhere[: args.top]:
        print(f"{nc:>9} {tt:>10.4f} {ct:>10.4f}  {short(filename)}:{line}({func})")
    return 0


def _size(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.replay_load",
        description="Time loading a long recorded session into the replay viewer.",
    )
    parser.add_argument(
        "--events",
        type=_positive,
        default=DEFAULT_EVENTS,
        help="events in the generated session (default 50,000)",
    )
    parser.add_argument("--repeat", type=_positive, default=5, help="in-process runs per variant")
    parser.add_argument(
        "--cold-repeat",
        type=_positive,
        default=None,
        help="cold-start runs per variant (default: --repeat)",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="session sizes for the memory runs (default 5000,20000,50000 with --events added)",
    )
    parser.add_argument("--size", type=_size, default=DEFAULT_SIZE, help="terminal WxH")
    parser.add_argument("--no-encode", dest="encode", action="store_false")
    parser.add_argument(
        "--max-mounted",
        type=_positive,
        default=None,
        metavar="N",
        help="in-process runs: override Timeline.max_mounted (blocks mounted at the jump)",
    )
    parser.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_false",
        help="skip parsing the whole file for comparison in the memory runs",
    )
    parser.add_argument("--no-cold", dest="cold", action="store_false")
    parser.add_argument("--no-memory", dest="memory", action="store_false")
    parser.add_argument(
        "--profile", action="store_true", help="instead of timing, cProfile one instant load"
    )
    parser.add_argument("--top", type=_positive, default=15, help="rows in --profile output")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child)
    check(args.events >= MIN_EVENTS, f"--events must be at least {MIN_EVENTS}")
    args.cold_repeat = args.cold_repeat or args.repeat
    sizes = sorted(set(args.sizes or [*DEFAULT_SIZES, args.events]))

    with tempfile.TemporaryDirectory(prefix="loopdeck-replay-bench-") as tmp_name:
        tmp = Path(tmp_name)

        def session_file(n: int) -> tuple[Path, dict[str, Any]]:
            folder = tmp / f"session-{n}"
            folder.mkdir()
            path = folder / "events.jsonl"
            start = time.perf_counter()
            info = generate_session(path, n)
            info["generate_s"] = time.perf_counter() - start
            return path, info

        warmup, _ = session_file(WARMUP_EVENTS)
        _log(f"generating {args.events:,} events ...")
        path, session = session_file(args.events)
        _log(
            f"  {session['bytes'] / 2**20:.1f} MiB, {session['turns']:,} turns, "
            f"in {session['generate_s']:.1f} s"
        )
        if args.profile:
            return run_profile(path, warmup, args)

        info = machine()
        _log(
            f"replay load: {args.events:,} events, {args.repeat} runs, nproc={info['nproc']}, "
            f"Python {info['python']}, load {info['loadavg_start']}"
        )
        results: dict[str, Any] = {"session": session}
        results.update(asyncio.run(bench_in_process(path, warmup, args)))
        if args.memory:
            files = {args.events: path}
            for n in sizes:
                if n not in files:
                    files[n], _ = session_file(n)
            results["memory"] = bench_memory(sizes, files, warmup, args)
        if args.cold:
            results["cold"] = bench_cold(path, args, tmp)
        info["loadavg_end"] = load_average()

    failures = print_report(results)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "replay_load",
        "machine": info,
        "params": {
            "events": args.events,
            "repeat": args.repeat,
            "cold_repeat": args.cold_repeat,
            "memory_sizes": sizes if args.memory else [],
            "size": list(args.size),
            "encode_frames": args.encode,
            "max_mounted": args.max_mounted,
            "seed": SEED,
            "window_turns": _window_turns(),
        },
        "target_first_frame_s": TARGET_FIRST_FRAME_S,
        **results,
        "failures": failures,
    }
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {RESULTS}")
    return 1 if failures else 0


def _window_turns() -> int:
    from app.viewer import WINDOW_TURNS

    return WINDOW_TURNS


if __name__ == "__main__":
    raise SystemExit(main())
