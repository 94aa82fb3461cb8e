"""TUI benchmark: first frame, streaming, event-loop lag, memory and resume of the app.

    python -m benchmarks.tui [--tools N] [--repeat K] [--long-repeat K]
                             [--scenarios first_frame,stream,long,resume]
                             [--delay-ms MS] [--stream-ms MS] [--tool glob|noop]
                             [--max-mounted N] [--size WxH] [--no-encode] [--css FILE]
                             [--profile stream|stream0|long|resume]

Every measured run is a fresh child process (``--child``) so that memory peaks,
Textual's caches and import state never carry over from one run to the next. Runs
of the variants of a scenario are interleaved, so a noisy neighbour hurts all alike.

1. **first frame**: the clock starts just before the child process is spawned and
   stops at the first frame the app displays (``App._display`` hooked, the child
   exits right after). Variants: ``bare-textual`` (a one-widget Textual app: the
   floor of this machine), ``cli`` (``python -m app.cli --model scripted:demo``
   with ``App.run`` forced headless; also checks that ``litellm`` is not in
   ``sys.modules`` at the first frame), ``cli-pty`` (the unmodified command on a
   pseudo-terminal; the frame is the first screen draw read from the pty, the
   ready mark is the model's name in the status bar) and ``resume-cli``
   (``--resume`` of a long session: also times the first frame after
   ``Timeline.load``).
2. **stream**: one scripted turn of ~2,000 tokens of Markdown (~8,000 chars:
   headings, paragraphs, lists, code, a table) streamed over ``--stream-ms``
   (default 2,000 ms), and the same at zero delay. Clock: from posting the prompt
   until the first frame displayed after the TurnView's Markdown holds the whole
   text and every pending ``Markdown.update``/``append`` has finished (at zero
   delay the turn ends before its view mounts and is drawn once, as a Static).
   Checked: the widget holds the text once, as many blocks as a fresh render.
3. **long**: ``--tools`` turns (default 2,000) each with a line of text and one
   ``glob`` call on a tiny workspace, ``--delay-ms`` per turn (default 2 ms), one
   ``send``. A probe task sleeps 10 ms in a loop and records how late it wakes
   (event-loop lag). Also frames, frame cost, widgets mounted (sampled), the
   timeline's ``mounted_blocks`` and virtual height, RSS. Checked: every turn and
   tool call is in the transcript and every call succeeded.
4. **memory**: RSS from ``/proc/self/status`` (``VmRSS``) and the peak from
   ``getrusage`` in each child; ``gc`` object counts before and after the long run
   and the ``Widget`` objects still alive at its end (vs. the widgets mounted).
5. **resume**: a ``--tools``-call session recorded once through the real loop,
   then ``Session.resume`` + ``LoopdeckApp`` (``timeline.load``: fold everything,
   mount the tail); times the opener, the load, the first frame after it and the
   frame where every tail widget is mounted.

Headless Textual skips turning a frame into terminal escape codes; by default the
benchmark does that work anyway (``--no-encode`` to skip) so a frame costs what it
costs on a terminal. ``--css FILE`` runs the in-process scenarios with another
stylesheet (A/B a change to ``styles/app.tcss``); ``--profile`` runs one child
under cProfile and prints the hottest functions. Results: a table on stdout and
``benchmarks/results/tui.json`` (per-run values, median / p95 / min / max).
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
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.headless_child import HEADLESS_CHILD
from benchmarks.machine import machine as shared_machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "tui.json"
RESULT_MARK = "@@TUI-BENCH-RESULT@@ "

TARGET_FIRST_FRAME_S = 1.0
TARGET_P95_LAG_MS = 50.0
PROBE_INTERVAL_S = 0.010
DEFAULT_SIZE = (120, 40)
STREAM_CHARS = 8_000
PROMPT = "Run the TUI benchmark."
WORKSPACE_FILES = ("main.py", "util.py", "README.md", "pkg/__init__.py", "pkg/core.py")


class BenchmarkError(AssertionError):
    """A run that did not do what it should: its timing is meaningless."""


def check(condition: bool, message: str) -> None:
    # Not a bare ``assert``: the checks must survive ``python -O``.
    if not condition:
        raise BenchmarkError(message)


# =====================================================================================
# Statistics and small helpers (parent and child)
# =====================================================================================


def percentile(values: list[float], pct: float) -> float | None:
    """Linear-interpolated percentile (``pct`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def spread(values: list[float]) -> dict[str, float | int | None]:
    """median / p95 / min / max of the runs of one metric."""
    clean = [v for v in values if v is not None]
    if not clean:
        return {"n": 0, "median": None, "p95": None, "min": None, "max": None}
    return {
        "n": len(clean),
        "median": statistics.median(clean),
        "p95": percentile(clean, 95),
        "min": min(clean),
        "max": max(clean),
    }


def lag_stats(lags_s: list[float]) -> dict[str, float | int | None]:
    ms = [x * 1000 for x in lags_s]
    return {
        "samples": len(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms) if ms else None,
        "over_50ms": sum(1 for x in ms if x > 50),
        "over_100ms": sum(1 for x in ms if x > 100),
        "over_200ms": sum(1 for x in ms if x > 200),
    }


class GcPauses:
    """Times every full (generation 2) collection while in the ``with`` block."""

    def __init__(self) -> None:
        self.pauses_ms: list[float] = []
        self.collected: list[int] = []  # what each one freed
        self._started: float | None = None

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.pauses_ms.append((time.perf_counter() - self._started) * 1000)
            self.collected.append(info.get("collected", 0))
            self._started = None

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def summary(self) -> dict[str, Any]:
        ms = self.pauses_ms
        return {
            "count": len(ms),
            "median_ms": statistics.median(ms) if ms else None,
            "first_ms": ms[0] if ms else None,
            "last_ms": ms[-1] if ms else None,
            "max_ms": max(ms) if ms else None,
            "total_ms": sum(ms),
            "over_200ms": sum(1 for x in ms if x > 200),
            "collected_total": sum(self.collected),
            # The long ones (a walk of the whole heap): pause and objects freed.
            "long_ones": [
                [round(x), c] for x, c in zip(ms, self.collected, strict=True) if x > 200
            ],
        }


def _cpu_per_turn(samples: list[dict[str, Any]], first: int, last: int) -> float | None:
    """CPU milliseconds per turn between two samples (None without two of them)."""
    if not (0 <= first < last < len(samples)):
        return None
    a, b = samples[first], samples[last]
    return (b["cpu_s"] - a["cpu_s"]) * 1000 / (b["turn"] - a["turn"])


def rss_kib() -> int | None:
    """Current resident set size (VmRSS) in KiB; None where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_kib() -> int:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def make_workspace(root: Path) -> None:
    """A tiny workspace for ``glob``: a handful of files in two directories."""
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    for rel in WORKSPACE_FILES:
        (root / rel).write_text("# benchmark file\n", encoding="utf-8")


def bench_env(home: Path) -> dict[str, str]:
    """The environment of a child: its own LOOPDECK_HOME and config dir, no model env."""
    env = dict(os.environ)
    env.pop("LOOPDECK_MODEL", None)
    env["LOOPDECK_HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / "config")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return env


# =====================================================================================
# The scripted content
# =====================================================================================

_TOPICS = (
    "the event log",
    "the transcript fold",
    "the timeline widget",
    "tool cards",
    "autopilot nudges",
    "session resume",
    "the status bar",
    "permission prompts",
)


def markdown_reply(min_chars: int = STREAM_CHARS) -> str:
    """A deterministic ~``min_chars`` Markdown answer: headings, prose, lists, code, a table."""
    parts: list[str] = ["# Review of the loopdeck code base\n"]
    i = 0
    while sum(len(p) + 1 for p in parts) < min_chars - 500:
        topic = _TOPICS[i % len(_TOPICS)]
        parts.append(f"## {i + 1}. {topic.capitalize()}\n")
        parts.append(
            f"Looking at **{topic}**, the code keeps its state in one place and the "
            f"widgets only draw it. The `{topic.split()[-1]}` module is small, but a few "
            "paths deserve a second look: error handling when a file is torn, what "
            "happens on a very long line, and how much work each event costs. See "
            f"[the notes](https://example.com/{i}) for the full discussion.\n"
        )
        parts.append(
            f"- Keep the `{topic.split()[-1]}` API narrow: one entry point, one result.\n"
            "- Measure before changing anything; numbers beat intuition here.\n"
            "- Prefer *incremental* updates to full re-renders when the data grows.\n"
            "  - nested: cache what is expensive to build\n"
            "  - nested: drop the cache when the width changes\n"
        )
        parts.append(
            "1. Read the module top to bottom.\n"
            "2. Write the failing test.\n"
            "3. Fix it, then run the whole suite.\n"
        )
        parts.append(
            "```python\n"
            f"def handle_{i}(event: Event, state: State) -> list[Change]:\n"
            '    """Fold one event; return what changed."""\n'
            "    changes = []\n"
            "    for block in state.blocks_for(event):\n"
            "        block.apply(event)\n"
            "        changes.append(Change('updated', block))\n"
            "    return changes\n"
            "```\n"
        )
        if i == 2:
            parts.append(
                "| area | events | cost |\n"
                "| --- | ---: | --- |\n"
                "| transcript | 12,000 | O(1) each |\n"
                "| timeline | 60 blocks | bounded |\n"
                "| status bar | 1 line | trivial |\n"
            )
        parts.append(f"> Note: {topic} is exercised by the benchmarks as well as by the tests.\n")
        i += 1
    return "\n".join(parts)


def long_turns(n: int, delay_ms: int, tool: str) -> list[dict[str, Any]]:
    arguments = {"pattern": "**/*.py"} if tool == "glob" else {}
    turns: list[dict[str, Any]] = [
        {
            "text": f"Step {i + 1}: checking `{WORKSPACE_FILES[i % len(WORKSPACE_FILES)]}` next.",
            "tool_calls": [{"name": tool, "arguments": arguments}],
            "delay_ms": delay_ms,
            "usage": {"prompt_tokens": 1000 + i, "completion_tokens": 12},
        }
        for i in range(n)
    ]
    turns.append({"text": "Done.", "delay_ms": delay_ms})
    return turns


# =====================================================================================
# Child side: the instrumented app (imports the app lazily: the parent stays light)
# =====================================================================================


def _bench_registry_factory(tool: str) -> Callable[[Any], Any] | None:
    if tool != "noop":
        return None
    from agent.tools.base import Tool, ToolArgs, ToolResult
    from agent.tools.registry import default_tools

    class NoopArgs(ToolArgs):
        pass

    class NoopTool(Tool):
        name = "noop"
        description = "Benchmark tool: does nothing and answers 'ok'."
        kind = "read"
        Args = NoopArgs

        async def run(self, args: Any, ctx: Any) -> ToolResult:
            return ToolResult(content="ok")

    def factory(mode: Any) -> Any:
        registry = default_tools(autopilot=mode == "autopilot")
        registry.register(NoopTool())
        return registry

    return factory


def _bench_app_class(css: str | None = None) -> type:
    from textual._compositor import CompositorUpdate
    from textual.screen import Screen

    from app.app import LoopdeckApp

    frame_costs: list[float] = []
    original_refresh_layout = Screen._refresh_layout

    def timed_refresh_layout(self: Any, *args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            original_refresh_layout(self, *args, **kwargs)
        finally:
            frame_costs.append(time.perf_counter() - start)

    Screen._refresh_layout = timed_refresh_layout  # type: ignore[method-assign]

    class BenchApp(LoopdeckApp):
        """LoopdeckApp that records every displayed frame (and encodes it, headless)."""

        if css:
            CSS_PATH = Path(css)

        def __init__(self, *args: Any, encode: bool = True, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.encode_frames = encode
            self.frames: list[float] = []
            self.frame_costs = frame_costs
            self.frame_watchers: list[Callable[[float], None]] = []

        def _display(self, screen: Any, renderable: Any) -> None:
            shown = renderable is not None and not self._batch_count
            encode = shown and self.encode_frames and self.is_headless
            if encode and isinstance(renderable, CompositorUpdate):
                # What a real driver does before writing: the frame as escape codes.
                renderable.render_segments(self.console)
            super()._display(screen, renderable)
            if shown:
                now = time.perf_counter()
                self.frames.append(now)
                for watcher in list(self.frame_watchers):
                    watcher(now)

        def first_frame_after(self, moment: float) -> float | None:
            return next((t for t in self.frames if t >= moment), None)

    return BenchApp


class LagProbe:
    """Sleeps ``interval`` in a loop and records how late each wake-up is."""

    def __init__(self, interval: float = PROBE_INTERVAL_S) -> None:
        self.interval = interval
        self.lags: list[float] = []
        self.long_ones: list[tuple[float, int]] = []
        self.started = 0.0
        self._task: asyncio.Task[None] | None = None
        self._stop = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> list[float]:
        self._stop = True
        if self._task is not None:
            await self._task
        return self.lags

    async def _run(self) -> None:
        self.started = time.perf_counter()
        while not self._stop:
            start = time.perf_counter()
            await asyncio.sleep(self.interval)
            lag = max(0.0, time.perf_counter() - start - self.interval)
            self.lags.append(lag)
            if lag > 0.1:  # when the long ones came (seconds into the probe), and how long
                self.long_ones.append((round(start - self.started, 2), round(lag * 1000)))


async def _wait_for(
    condition: Callable[[], bool], timeout: float, what: str, step: float = 0.005
) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise BenchmarkError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(step)


async def _ready(app: Any, timeout: float = 60.0) -> None:
    """The session is open and at least one frame was displayed since."""
    await _wait_for(lambda: app.session is not None, timeout, "the session to open")
    opened = time.perf_counter()
    await _wait_for(lambda: app.first_frame_after(opened) is not None, timeout, "a frame")
    await asyncio.sleep(0.2)  # let start-up settle before any clock starts


def _submit(app: Any, text: str) -> None:
    """What the prompt does on Enter."""
    from widgets.prompt import PromptInput

    app.prompt.post_message(PromptInput.Submitted(text))


def _idle_waiter(session: Any) -> asyncio.Event:
    idle = asyncio.Event()

    def on_event(event: Any) -> None:
        if event.type == "session.idle":
            idle.set()

    session.subscribe(on_event)
    return idle


@contextlib.contextmanager
def _maybe_profile(path: str | None) -> Iterator[None]:
    if not path:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        profiler.dump_stats(path)


def _frame_summary(app: Any, since: float, until: float) -> dict[str, Any]:
    frames = [t for t in app.frames if since <= t <= until]
    costs_ms = [c * 1000 for c in app.frame_costs]
    return {
        "frames": len(frames),
        "fps": len(frames) / (until - since) if until > since else None,
        "frame_cost_p50_ms": percentile(costs_ms, 50),
        "frame_cost_p95_ms": percentile(costs_ms, 95),
        "frame_cost_max_ms": max(costs_ms) if costs_ms else None,
    }


# --- stream ------------------------------------------------------------------------


class _TimedModel:
    """Wraps a scripted model; records when its stream yields its first and last item."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.first: float | None = None
        self.last: float | None = None
        self.items = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def retry_policy(self) -> Any:
        return self.inner.retry_policy

    async def stream(self, messages: Any, tools: Any, *, call_index: int) -> Any:
        async for item in self.inner.stream(messages, tools, call_index=call_index):
            now = time.perf_counter()
            if self.first is None:
                self.first = now
            self.last = now
            self.items += 1
            yield item


async def child_stream(p: dict[str, Any]) -> dict[str, Any]:
    from textual.widgets import Markdown

    from agent.log.store import SessionStore
    from agent.models.scripted import Script, ScriptedModel
    from agent.session.session import Session
    from widgets.turn_view import TurnView

    # Every Markdown.update/append: when it was asked for and when it finished.
    pending: dict[int, list[Any]] = {}  # id(widget) -> futures
    finished_at: dict[int, float] = {}
    updates: list[tuple[float, Any]] = []  # full renders: (asked at, future)
    originals = {name: getattr(Markdown, name) for name in ("update", "append")}

    def tracked(name: str) -> Callable[..., Any]:
        original = originals[name]

        def method(self: Any, markdown: str) -> Any:
            awaitable = original(self, markdown)
            future = getattr(awaitable, "_future", None)
            if future is not None:
                key = id(self)
                pending.setdefault(key, []).append(future)
                if name == "update":
                    updates.append((time.perf_counter(), future))
                future.add_done_callback(
                    lambda _f: finished_at.__setitem__(key, time.perf_counter())
                )
            return awaitable

        return method

    Markdown.update = tracked("update")  # type: ignore[method-assign]
    Markdown.append = tracked("append")  # type: ignore[method-assign]

    text = markdown_reply(p["chars"])
    script = Script.model_validate({"turns": [{"text": text, "delay_ms": p["delay_ms"]}]})
    model = _TimedModel(ScriptedModel(script, "bench-stream"))
    tmp = Path(p["tmp"])
    make_workspace(tmp / "ws")

    async def opener() -> Any:
        return await Session.create(model=model, cwd=tmp / "ws", store=SessionStore(tmp / "home"))

    app = _bench_app_class(p.get("css"))(opener, encode=p["encode"])
    async with app.run_test(size=tuple(p["size"])):
        await _ready(app)
        idle = _idle_waiter(app.session)
        probe = LagProbe()
        probe.start()
        gc.collect()
        app.frame_costs.clear()
        with _maybe_profile(p.get("profile")):
            start = time.perf_counter()
            _submit(app, PROMPT)
            await asyncio.wait_for(idle.wait(), p["timeout"])
            idle_at = time.perf_counter()

            body_seen: dict[int, float] = {}

            def frozen_text(view: Any) -> str | None:
                """The reply's head frozen into Statics (a long reply), or None if a
                part before the live widget is not such a Static."""
                parts = []
                for body in list(view.query(".turn-text"))[:-1]:
                    content = getattr(body, "content", None)
                    if isinstance(body, Markdown) or not hasattr(content, "markup"):
                        return None
                    parts.append(content.markup)
                return "".join(parts)

            def body_done(view: Any) -> float | None:
                """When the TurnView's live text widget last finished changing, if it has."""
                bodies = list(view.query(".turn-text"))
                if not bodies or not bodies[-1].is_mounted:
                    return None
                body = bodies[-1]
                head = frozen_text(view)
                if isinstance(body, Markdown):
                    futures = pending.get(id(body), [])
                    whole = head is not None and head + body.source == text
                    if not whole or not futures or not all(f.done() for f in futures):
                        return None
                    return finished_at[id(body)]
                # A turn that ended before its view mounted is drawn once, as a Static.
                if len(bodies) != 1:
                    return None
                return body_seen.setdefault(id(body), time.perf_counter())

            def whole_text_shown() -> bool:
                views = list(app.query(TurnView))
                if not views or not views[-1].block.finished:
                    return False
                done = body_done(views[-1])
                return done is not None and app.first_frame_after(done) is not None

            await _wait_for(whole_text_shown, p["timeout"], "the final render of the reply")
        lags = await probe.stop()
        view = list(app.query(TurnView))[-1]
        done = body_done(view)
        assert done is not None
        shown = app.first_frame_after(done)
        assert shown is not None
        body = list(view.query(".turn-text"))[-1]
        head = frozen_text(view) or ""
        frozen_parts = len(view.query(".turn-text")) - 1
        # Correctness: the widgets hold the reply once, as a fresh render would build it.
        await asyncio.sleep(0.3)
        check(view.block.text == text, "the TurnView's block lacks the reply's text")
        blocks = expected = None
        if isinstance(body, Markdown):
            check(
                head + body.source == text,
                "the frozen parts and the Markdown widget's source differ from the reply",
            )
            blocks = len(body.children)
            if hasattr(body, "_build_from_source"):
                expected = len(body._build_from_source(body.source))
                check(
                    blocks == expected,
                    f"the Markdown widget holds {blocks} blocks, a fresh render {expected}",
                )
        update_calls = len(pending.get(id(body), []))
        # The last full render (Markdown.update of the whole text), asked -> done.
        final_update = None
        if updates and updates[-1][1].done():
            asked = updates[-1][0]
            final_update = finished_at.get(id(body), asked) - asked
        body_kind = type(body).__name__
    chunks = model.items - 1  # the final ModelReply is not a chunk
    nominal = p["delay_ms"] / 1000
    total = shown - start
    return {
        "chars": len(text),
        "approx_tokens": round(len(text) / 4),
        "chunks": chunks,
        "delay_ms": p["delay_ms"],
        "total_s": total,
        "beyond_nominal_s": total - nominal,
        "model_stream_s": (model.last or start) - (model.first or start),
        "tail_s": shown - (model.last or start),
        "idle_to_shown_s": shown - idle_at,
        "body": body_kind,
        "frozen_parts": frozen_parts,
        "markdown_blocks": blocks,
        "markdown_blocks_expected": expected,
        "markdown_calls": update_calls,
        "final_update_s": final_update,
        **_frame_summary(app, start, shown),
        "lag": lag_stats(lags),
        "rss_end_kib": rss_kib(),
        "rss_peak_kib": peak_rss_kib(),
    }


# --- long session --------------------------------------------------------------------


async def child_long(p: dict[str, Any]) -> dict[str, Any]:
    from textual.widget import Widget

    from agent.log.store import SessionStore
    from agent.models.scripted import Script, ScriptedModel
    from agent.session.session import Session

    n = p["tools"]
    script = Script.model_validate({"turns": long_turns(n, p["delay_ms"], p["tool"])})
    model = ScriptedModel(script, "bench-long")
    tmp = Path(p["tmp"])
    make_workspace(tmp / "ws")
    factory = _bench_registry_factory(p["tool"])

    async def opener() -> Any:
        return await Session.create(
            model=model, cwd=tmp / "ws", store=SessionStore(tmp / "home"), registry_factory=factory
        )

    app = _bench_app_class(p.get("css"))(opener, encode=p["encode"])
    samples: list[dict[str, Any]] = []
    every = max(1, n // 20)
    async with app.run_test(size=tuple(p["size"])):
        if p.get("max_mounted"):
            app.timeline.max_mounted = p["max_mounted"]
        await _ready(app)
        timeline = app.timeline
        turn_starts: list[float] = []

        def sample(event: Any) -> None:
            if event.type != "assistant.turn_start":
                return
            turn_starts.append(time.perf_counter())
            k = len(turn_starts)
            if k % every == 0:
                samples.append(
                    {
                        "turn": k,
                        "t": time.perf_counter(),
                        "cpu_s": time.process_time(),
                        "widgets": len(app.query("*")),
                        "mounted_blocks": timeline.mounted_blocks,
                        "virtual_height": timeline.virtual_size.height,
                        "rss_kib": rss_kib(),
                    }
                )

        app.session.subscribe(sample)
        idle = _idle_waiter(app.session)
        # Lag of the idle app first: the floor of the probe on this machine.
        idle_probe = LagProbe()
        idle_probe.start()
        await asyncio.sleep(1.0)
        idle_lags = await idle_probe.stop()
        gc.collect()
        objects_start = len(gc.get_objects())
        rss_start = rss_kib()
        app.frame_costs.clear()
        full_collections = GcPauses()
        probe = LagProbe()
        probe.start()
        with _maybe_profile(p.get("profile")), full_collections:
            start = time.perf_counter()
            _submit(app, PROMPT)
            await asyncio.wait_for(idle.wait(), p["timeout"])
            end = time.perf_counter()
        lags = await probe.stop()
        # Let the last frames land, then count what is mounted.
        await asyncio.sleep(0.5)
        transcript = timeline.transcript
        tools = [t for item in transcript.items for t in getattr(item, "tools", [])]
        check(
            transcript.turns == n + 1, f"{transcript.turns} turns in the transcript, want {n + 1}"
        )
        check(len(tools) == n, f"{len(tools)} tool calls in the transcript, want {n}")
        failed = [t for t in tools if t.status != "success"]
        check(not failed, f"{len(failed)} tool calls did not succeed (first: {failed[:1]})")
        widgets_end = len(app.query("*"))
        mounted_end = timeline.mounted_blocks
        height_end = timeline.virtual_size.height
        items = len(transcript.items)
        rss_end = rss_kib()
        # The moment the session rests (nobody typing): the app may run a due thaw of
        # the collector's frozen heap then (app/gc_policy.py), after input has been
        # quiet for a while. Probe the loop through that window too.
        from app import gc_policy

        walks_before = gc_policy._hook.full_walks if gc_policy._hook is not None else 0
        rest_probe = LagProbe()
        rest_gc = GcPauses()
        with rest_gc:
            rest_probe.start()
            await asyncio.sleep(getattr(gc_policy, "QUIET_BEFORE_THAW_S", 0.0) + 2.0)
            rest_lags = await rest_probe.stop()
        thaws_at_rest = (gc_policy._hook.full_walks if gc_policy._hook is not None else 0) - (
            walks_before
        )
        rss_rest = rss_kib()
        # The app's policy froze most of the heap, out of gc.get_objects()' sight: thaw
        # it, and count what only a walk of all of it frees (cyclic garbage).
        gc.unfreeze()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        gc.set_debug(0)
        garbage_end = len(gc.garbage)
        garbage_kinds = Counter(type(o).__name__ for o in gc.garbage).most_common(12)
        gc.garbage.clear()
        objects = gc.get_objects()
        objects_end = len(objects)
        # Widgets still alive, mounted or not: more than are mounted would be a leak.
        widgets_alive = sum(1 for o in objects if isinstance(o, Widget))
        del objects
    wall = end - start
    half = [s for s in samples if s["turn"] >= n // 2]
    return {
        "tools": n,
        "delay_ms": p["delay_ms"],
        "tool": p["tool"],
        "max_mounted": p.get("max_mounted") or None,
        "wall_s": wall,
        "nominal_model_s": (n + 1) * p["delay_ms"] / 1000,
        "ms_per_turn": wall * 1000 / (n + 1),
        "lag": lag_stats(lags),
        "_lags": [round(x, 5) for x in lags],
        "lags_over_100ms_at": probe.long_ones,
        "idle_lag": lag_stats(idle_lags),
        **_frame_summary(app, start, end),
        "widgets_end": widgets_end,
        "widgets_max": max([s["widgets"] for s in samples] + [widgets_end]),
        "mounted_blocks_end": mounted_end,
        "mounted_blocks_max": max([s["mounted_blocks"] for s in samples] + [mounted_end]),
        "virtual_height_end": height_end,
        "virtual_height_max": max([s["virtual_height"] for s in samples] + [height_end]),
        "transcript_items": items,
        "rss_start_kib": rss_start,
        "rss_end_kib": rss_end,
        "rss_rest_kib": rss_rest,
        "rest_lag": lag_stats(rest_lags),
        "rest_gc_full": rest_gc.summary(),
        "thaws_at_rest": thaws_at_rest,
        "rss_peak_kib": peak_rss_kib(),
        "rss_second_half_growth_kib": (
            half[-1]["rss_kib"] - half[0]["rss_kib"]
            if len(half) > 1 and half[0]["rss_kib"] is not None
            else None
        ),
        "gc_objects_start": objects_start,
        "gc_objects_end": objects_end,
        "cyclic_garbage_end": garbage_end,
        "cyclic_garbage_kinds": dict(garbage_kinds),
        "gc_full": full_collections.summary(),
        "cpu_ms_per_turn_first_tenth": _cpu_per_turn(samples, 0, max(1, len(samples) // 10)),
        "cpu_ms_per_turn_last_tenth": _cpu_per_turn(
            samples, len(samples) - 1 - max(1, len(samples) // 10), len(samples) - 1
        ),
        "widgets_alive_end": widgets_alive,
        "samples": [{k: v for k, v in s.items() if k != "t"} for s in samples],
    }


# --- resume --------------------------------------------------------------------------


async def prepare_resume_session(tmp: Path, n: int, tool: str) -> dict[str, Any]:
    """Record an ``n``-tool-call session through the real loop, with no UI."""
    from agent.log.store import SessionStore
    from agent.models.scripted import ScriptedModel
    from agent.session.session import Session

    make_workspace(tmp / "ws")
    script_path = tmp / "long-script.json"
    script_path.write_text(json.dumps({"turns": long_turns(n, 0, tool)}), encoding="utf-8")
    model = ScriptedModel.from_spec(f"scripted:{script_path}")
    store = SessionStore(tmp / "home")
    session = await Session.create(
        model=model, cwd=tmp / "ws", store=store, registry_factory=_bench_registry_factory(tool)
    )
    started = time.perf_counter()
    outcome = await session.send_and_wait(PROMPT)
    seconds = time.perf_counter() - started
    await session.close()
    check(outcome.error is None and not outcome.aborted, f"recording failed: {outcome}")
    check(outcome.turns == n + 1, f"recorded {outcome.turns} turns, want {n + 1}")
    events = store.events_path(session.id)
    return {
        "home": str(tmp / "home"),
        "ws": str(tmp / "ws"),
        "session_id": session.id,
        "script": str(script_path),
        "events_lines": sum(1 for _ in events.open(encoding="utf-8")),
        "events_bytes": events.stat().st_size,
        "record_s": seconds,
    }


async def child_resume(p: dict[str, Any]) -> dict[str, Any]:
    from agent.log.store import SessionStore
    from agent.models.scripted import ScriptedModel
    from agent.session.session import Session
    from widgets.turn_view import TurnView

    home = Path(p["tmp"]) / "home"
    shutil.copytree(p["home"], home)  # resume appends to the log: each run its own copy
    marks: dict[str, float] = {}
    factory = _bench_registry_factory(p["tool"])

    async def opener() -> Any:
        marks["opener_start"] = time.perf_counter()
        session = await Session.resume(
            store=SessionStore(home),
            session_id=p["session_id"],
            model=ScriptedModel.from_spec(f"scripted:{p['script']}"),
            registry_factory=factory,
        )
        marks["opener_end"] = time.perf_counter()
        return session

    app = _bench_app_class(p.get("css"))(opener, encode=p["encode"])
    timeline = app.timeline
    original_load = timeline.load
    counts: dict[str, int] = {}

    def timed_load(events: Any) -> None:
        events = list(events)
        counts["events"] = len(events)
        marks["load_start"] = time.perf_counter()
        original_load(events)
        marks["load_end"] = time.perf_counter()

    timeline.load = timed_load

    from widgets.timeline import LoadEarlier

    def all_mounted() -> bool:
        views = [w for w in timeline.children if w.display and not isinstance(w, LoadEarlier)]
        if not views:
            return False
        return all(v.is_mounted and all(c.is_mounted for c in v.query("*")) for v in views)

    def on_frame(now: float) -> None:
        if "load_end" in marks and "settled" not in marks and all_mounted():
            marks["settled"] = now

    app.frame_watchers.append(on_frame)
    with _maybe_profile(p.get("profile")):
        marks["app_start"] = time.perf_counter()
        async with app.run_test(size=tuple(p["size"])):
            await _wait_for(lambda: "settled" in marks, p["timeout"], "the loaded tail to mount")
            await asyncio.sleep(0.3)
            mounted = timeline.mounted_blocks
            widgets = len(app.query("*"))
            turn_views = len(app.query(TurnView))
            items = len(timeline.transcript.items)
            check(
                timeline.transcript.tool_calls >= p["tools"],
                f"{timeline.transcript.tool_calls} tool calls folded, want {p['tools']}",
            )
            check(mounted <= timeline.max_mounted, f"{mounted} blocks mounted")
    first_after_load = app.first_frame_after(marks["load_end"])
    return {
        "events": counts.get("events"),
        "transcript_items": items,
        "mounted_blocks": mounted,
        "turn_views": turn_views,
        "widgets": widgets,
        "first_frame_s": (app.frames[0] - marks["app_start"]) if app.frames else None,
        "opener_s": marks["opener_end"] - marks["opener_start"],
        "load_s": marks["load_end"] - marks["load_start"],
        "first_frame_after_load_s": (
            first_after_load - marks["load_end"] if first_after_load else None
        ),
        "settled_after_load_s": marks["settled"] - marks["load_end"],
        "app_start_to_settled_s": marks["settled"] - marks["app_start"],
        "rss_end_kib": rss_kib(),
        "rss_peak_kib": peak_rss_kib(),
    }


CHILDREN = {"stream": child_stream, "long": child_long, "resume": child_resume}


def child_main(name: str, params_json: str) -> int:
    params = json.loads(params_json)

    async def run() -> dict[str, Any]:
        try:
            return await CHILDREN[name](params)
        except BaseException:
            # Report now: tearing down a half-run app can hang on its pending tasks.
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)

    result = asyncio.run(run())
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


# =====================================================================================
# First frame: process start to first frame (children run by ``python -c``)
# =====================================================================================

# Runs as ``python -c``: nothing from benchmarks/ is imported, so nothing but the app
# is timed. argv[1]: a JSON object {variant, argv, size, encode, timeout}.
FIRST_FRAME_CHILD = (
    HEADLESS_CHILD
    + r"""
def _settled(app):
    from widgets.timeline import LoadEarlier
    timeline = getattr(app, "timeline", None)
    views = [
        w for w in timeline.children if w.display and not isinstance(w, LoadEarlier)
    ] if timeline is not None else []
    return bool(views) and all(
        v.is_mounted and all(c.is_mounted for c in v.query("*")) for v in views
    )

def _on_frame(self, now):
    done = True
    if _p["variant"] != "bare-textual":
        if getattr(self, "session", None) is not None and "ready" not in _marks:
            _marks["ready"] = now
        done = "ready" in _marks
        if _p.get("resume"):
            if "load_end" in _marks and "loaded_frame" not in _marks:
                _marks["loaded_frame"] = now
            if "load_end" in _marks and "settled" not in _marks and _settled(self):
                _marks["settled"] = now
            done = done and "settled" in _marks
    else:
        _marks["ready"] = _marks["first_frame"]
    if done and not _marks.get("exiting"):
        _marks["exiting"] = True
        quit = getattr(self, "action_quit", None)
        self.call_later(quit if quit is not None else self.exit)

def _setup():
    _when_imported("widgets.timeline", lambda m: _timed(m.Timeline, "load", "load"))

_run_app(_setup)
print("\n@@TUI-BENCH-RESULT@@ " + json.dumps(_marks))
"""
)


def run_first_frame_hooked(
    variant: str,
    argv: list[str],
    *,
    home: Path,
    cwd: Path,
    size: tuple[int, int],
    encode: bool,
    resume: bool = False,
    timeout: float = 120.0,
) -> dict[str, Any]:
    params = {
        "variant": variant,
        "argv": argv,
        "size": list(size),
        "encode": encode,
        "resume": resume,
        "timeout": timeout,
    }
    load = _loadavg()
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME_CHILD, json.dumps(params)],
        cwd=cwd,
        env=bench_env(home),
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        stdin=subprocess.DEVNULL,
    )
    exited = time.monotonic()
    marks = _parse_result(done, f"first-frame child ({variant})")
    check("first_frame" in marks, f"{variant}: no frame was displayed")
    out: dict[str, Any] = {
        "interpreter_s": marks["code"] - start,
        "first_frame_s": marks["first_frame"] - start,
        "ready_s": marks["ready"] - start if "ready" in marks else None,
        "litellm_loaded": marks.get("litellm_loaded"),
        "modules": marks.get("modules"),
        "process_s": exited - start,
        "loadavg_1m": load,
    }
    if resume:
        check("settled" in marks, f"{variant}: the loaded tail never finished mounting")
        out["load_s"] = marks["load_end"] - marks["load_start"]
        out["first_frame_after_load_s"] = marks["loaded_frame"] - start
        out["settled_s"] = marks["settled"] - start
    return out


def run_first_frame_pty(
    argv: list[str],
    *,
    home: Path,
    cwd: Path,
    size: tuple[int, int],
    marker: bytes,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """The unmodified command on a pseudo-terminal: the first draw and the ready mark."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    env = bench_env(home)
    env["TERM"] = "xterm-256color"
    env["COLORTERM"] = "truecolor"
    env.pop("TEXTUAL", None)
    load = _loadavg()
    start = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:  # the child: become the app
        try:
            os.chdir(cwd)
            os.execvpe(sys.executable, [sys.executable, "-m", "app.cli", *argv], env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    out = b""
    first_bytes = first_frame = ready = None
    try:
        while time.monotonic() - start < timeout:
            readable, _, _ = select.select([fd], [], [], 0.05)
            if not readable:
                continue
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                break
            if not data:
                break
            now = time.monotonic()
            first_bytes = first_bytes or now
            out += data
            # A full-screen draw starts at the top-left cell; the startup sequences don't.
            if first_frame is None and b"\x1b[1;1H" in out:
                first_frame = now
            if marker in out:
                ready = now
                break
    finally:
        _stop_child(pid, fd)
    check(first_frame is not None, "cli-pty: no frame was drawn on the terminal")
    check(ready is not None, f"cli-pty: {marker!r} never appeared on the terminal")
    return {
        "first_bytes_s": (first_bytes or start) - start,
        "first_frame_s": first_frame - start,  # type: ignore[operator]
        "ready_s": ready - start,  # type: ignore[operator]
        "bytes": len(out),
        "loadavg_1m": load,
    }


def _stop_child(pid: int, fd: int) -> None:
    """Quit the app the way a user does (Ctrl+C twice), then make sure it is gone."""
    with contextlib.suppress(OSError):
        os.write(fd, b"\x03")
        time.sleep(0.1)
        os.write(fd, b"\x03")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            os.read(fd, 1 << 16)  # keep the pty drained so the app can exit
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished:
            break
        time.sleep(0.02)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        os.close(fd)


# =====================================================================================
# Parent: orchestration, report
# =====================================================================================


def _parse_result(done: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            result: dict[str, Any] = json.loads(line[len(RESULT_MARK) :])
            return result
    tail = (done.stderr or "")[-3000:]
    raise BenchmarkError(f"{what} failed (exit {done.returncode}):\n{tail}")


def _loadavg() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def run_child(name: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    load = _loadavg()
    with tempfile.TemporaryDirectory(prefix=f"loopdeck-tui-{name}-") as tmp:
        params = {**params, "tmp": tmp}
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.tui", "--child", name, json.dumps(params)],
            cwd=ROOT,
            env=bench_env(Path(tmp) / "env-home"),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    result = _parse_result(done, f"child {name}")
    result["loadavg_1m"] = load
    return result


def machine() -> dict[str, Any]:
    """The shared machine record, plus Textual's version and a CPU yardstick."""
    start = time.perf_counter()
    sum(range(10_000_000))
    speed = time.perf_counter() - start
    try:
        import textual

        textual_version = textual.__version__
    except Exception:  # pragma: no cover
        textual_version = None
    return {
        **shared_machine(),
        "textual": textual_version,
        # A CPU yardstick: how long this machine takes for sum(range(10**7)).
        "sum_range_1e7_s": round(speed, 3),
    }


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_first_frame(
    args: argparse.Namespace, resume_rec: dict[str, Any] | None
) -> dict[str, Any]:
    size = args.size
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="loopdeck-tui-ff-") as tmp:
        root = Path(tmp)
        demo = ["--model", "scripted:demo"]
        variants: list[tuple[str, Callable[[Path], dict[str, Any]]]] = [
            (
                "bare-textual",
                lambda home: run_first_frame_hooked(
                    "bare-textual", [], home=home, cwd=ROOT, size=size, encode=args.encode
                ),
            ),
            (
                "cli",
                lambda home: run_first_frame_hooked(
                    "cli", demo, home=home, cwd=ROOT, size=size, encode=args.encode
                ),
            ),
            (
                "cli-pty",
                lambda home: run_first_frame_pty(
                    demo, home=home, cwd=ROOT, size=size, marker=b"scripted:demo"
                ),
            ),
        ]
        if resume_rec is not None:
            resume_argv = [
                "--resume",
                resume_rec["session_id"],
                "--model",
                f"scripted:{resume_rec['script']}",
            ]

            def resume_run(home: Path) -> dict[str, Any]:
                shutil.copytree(resume_rec["home"], home)
                return run_first_frame_hooked(
                    "resume-cli",
                    resume_argv,
                    home=home,
                    cwd=Path(resume_rec["ws"]),
                    size=size,
                    encode=args.encode,
                    resume=True,
                )

            variants.append(("resume-cli", resume_run))
        for i in range(args.repeat):
            for name, run in variants:
                home = root / f"{name}-{i}"
                result = run(home)
                runs.setdefault(name, []).append(result)
                _log(
                    f"  first frame run {i + 1}/{args.repeat} {name:<13} "
                    f"{result['first_frame_s'] * 1000:7.0f} ms"
                    + (
                        f"  ready {result['ready_s'] * 1000:6.0f} ms"
                        if result.get("ready_s")
                        else ""
                    )
                )
    summary: dict[str, Any] = {}
    for name, results in runs.items():
        keys = [
            k
            for k, v in results[0].items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        summary[name] = {k: spread([r[k] for r in results]) for k in keys}
        if "litellm_loaded" in results[0]:
            summary[name]["litellm_loaded_any"] = any(r["litellm_loaded"] for r in results)
        summary[name]["runs"] = results
    return summary


def bench_stream(args: argparse.Namespace) -> dict[str, Any]:
    variants = {
        f"stream-{args.stream_ms}ms": args.stream_ms,
        "stream-0ms": 0,
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for i in range(args.repeat):
        for name, delay in variants.items():
            params = {
                "chars": STREAM_CHARS,
                "delay_ms": delay,
                "size": list(args.size),
                "encode": args.encode,
                "css": args.css,
                "timeout": 600,
            }
            result = run_child("stream", params, timeout=900)
            runs[name].append(result)
            _log(
                f"  stream run {i + 1}/{args.repeat} {name:<13} "
                f"total {result['total_s'] * 1000:7.0f} ms"
                f"  beyond nominal {result['beyond_nominal_s'] * 1000:6.0f} ms"
                f"  lag p95 {result['lag']['p95_ms'] or 0:5.1f} ms"
            )
    return {name: _summarize_runs(results) for name, results in runs.items()}


def bench_long(args: argparse.Namespace) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    for i in range(args.long_repeat):
        params = {
            "tools": args.tools,
            "delay_ms": args.delay_ms,
            "tool": args.tool,
            "size": list(args.size),
            "encode": args.encode,
            "max_mounted": args.max_mounted,
            "css": args.css,
            "timeout": 60 + args.tools * 2.0,
        }
        result = run_child("long", params, timeout=120 + args.tools * 2.5)
        runs.append(result)
        _log(
            f"  long run {i + 1}/{args.long_repeat}: {args.tools} tool calls in "
            f"{result['wall_s']:6.1f} s  lag p50/p95/max {result['lag']['p50_ms']:.1f}/"
            f"{result['lag']['p95_ms']:.1f}/{result['lag']['max_ms']:.0f} ms  "
            f"widgets {result['widgets_end']} (max {result['widgets_max']})  "
            f"mounted_blocks {result['mounted_blocks_end']}  "
            f"full gc {result['gc_full']['count']} x median "
            f"{result['gc_full']['median_ms'] or 0:.0f} ms "
            f"(last {result['gc_full']['last_ms'] or 0:.0f})  cpu/turn "
            f"{result['cpu_ms_per_turn_first_tenth'] or 0:.2f} -> "
            f"{result['cpu_ms_per_turn_last_tenth'] or 0:.2f} ms  "
            f"lag p99 {result['lag']['p99_ms'] or 0:.0f} ms"
        )
    pooled = [x for r in runs for x in r.pop("_lags", [])]
    summary = _summarize_runs(runs)
    if pooled:
        summary["lag_pooled"] = lag_stats(pooled)
    return summary


def bench_resume(args: argparse.Namespace, rec: dict[str, Any]) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    for i in range(args.repeat):
        params = {
            "home": rec["home"],
            "session_id": rec["session_id"],
            "script": rec["script"],
            "tools": args.tools,
            "tool": args.tool,
            "size": list(args.size),
            "encode": args.encode,
            "css": args.css,
            "timeout": 300,
        }
        result = run_child("resume", params, timeout=600)
        runs.append(result)
        _log(
            f"  resume run {i + 1}/{args.repeat}: opener {result['opener_s'] * 1000:6.0f} ms  "
            f"load {result['load_s'] * 1000:6.0f} ms  first frame after load "
            f"{(result['first_frame_after_load_s'] or 0) * 1000:6.0f} ms  settled "
            f"{result['settled_after_load_s'] * 1000:6.0f} ms"
        )
    summary = _summarize_runs(runs)
    summary["recording"] = {k: v for k, v in rec.items() if k not in ("home", "ws", "script")}
    return summary


def _summarize_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per metric: median / p95 / min / max over the runs (nested dicts flattened)."""
    flat: list[dict[str, float]] = []
    for run in runs:
        row: dict[str, float] = {}
        for key, value in run.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    if isinstance(v, int | float) and not isinstance(v, bool):
                        row[f"{key}.{sub}"] = v
            elif isinstance(value, int | float) and not isinstance(value, bool):
                row[key] = value
        flat.append(row)
    keys = list(dict.fromkeys(k for row in flat for k in row))
    summary: dict[str, Any] = {k: spread([row.get(k) for row in flat]) for k in keys}  # type: ignore[misc]
    summary["runs"] = runs
    return summary


# --- report ------------------------------------------------------------------------


def _ms(stat: dict[str, Any] | None, key: str = "median") -> str:
    if not stat or stat.get(key) is None:
        return "-"
    return f"{stat[key] * 1000:,.0f}"


def _v(stat: dict[str, Any] | None, key: str = "median", fmt: str = ",.1f") -> str:
    if not stat or stat.get(key) is None:
        return "-"
    return format(stat[key], fmt)


def print_report(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """Print the tables; return the failed targets and checks."""
    failures: list[str] = []
    ff = results.get("first_frame")
    if ff:
        print("\nfirst frame (ms from process spawn; median / p95 over runs)")
        print(f"  {'variant':<13} {'first frame':>17} {'ready':>17} {'interp':>7}  notes")
        for name, s in ff.items():
            notes = []
            if "litellm_loaded_any" in s:
                notes.append("litellm LOADED" if s["litellm_loaded_any"] else "no litellm")
            if "settled_s" in s:
                notes.append(
                    f"after load: first frame {_ms(s['first_frame_after_load_s'])}, "
                    f"settled {_ms(s['settled_s'])} (load() {_ms(s['load_s'])})"
                )
            print(
                f"  {name:<13} {_ms(s['first_frame_s']):>8} / {_ms(s['first_frame_s'], 'p95'):>6} "
                f"{_ms(s.get('ready_s')):>8} / {_ms(s.get('ready_s'), 'p95'):>6} "
                f"{_ms(s.get('interpreter_s')):>7}  {'; '.join(notes)}"
            )
            if s.get("litellm_loaded_any"):
                failures.append(f"litellm was imported before the first frame ({name})")
        for name in ("cli", "cli-pty"):
            if name in ff:
                med = ff[name]["first_frame_s"]["median"]
                verdict = "ok" if med < TARGET_FIRST_FRAME_S else "OVER"
                target = f"target first frame < {TARGET_FIRST_FRAME_S:g} s"
                print(f"  {target}: {name} {med:.2f} s {verdict}")
                if med >= TARGET_FIRST_FRAME_S:
                    failures.append(f"first frame {name} {med:.2f} s >= {TARGET_FIRST_FRAME_S:g} s")
    st = results.get("stream")
    if st:
        print("\nstream a ~2,000-token Markdown reply (ms; median / p95 over runs)")
        print(
            f"  {'variant':<13} {'send->shown':>15} {'beyond nominal':>15} {'tail':>13} "
            f"{'lag p95':>8} {'lag max':>8} {'frames':>6}"
        )
        for name, s in st.items():
            print(
                f"  {name:<13} {_ms(s['total_s']):>7} / {_ms(s['total_s'], 'p95'):>5} "
                f"{_ms(s['beyond_nominal_s']):>7} / {_ms(s['beyond_nominal_s'], 'p95'):>5} "
                f"{_ms(s['tail_s']):>5} / {_ms(s['tail_s'], 'p95'):>5} "
                f"{_v(s['lag.p95_ms']):>8} {_v(s['lag.max_ms'], fmt=',.0f'):>8} "
                f"{_v(s['frames'], fmt='.0f'):>6}"
            )
    lg = results.get("long")
    if lg:
        print(
            f"\nlong session: {args.tools} tool calls, {args.delay_ms} ms/turn model delay "
            "(median / p95 over runs)"
        )
        print(
            f"  wall {_v(lg['wall_s'])} / {_v(lg['wall_s'], 'p95')} s "
            f"({_v(lg['ms_per_turn'])} ms/turn)   frames {_v(lg['frames'], fmt='.0f')} "
            f"(cost p50 {_v(lg['frame_cost_p50_ms'])} ms, p95 {_v(lg['frame_cost_p95_ms'])} ms)"
        )
        print(
            f"  event-loop lag ms: p50 {_v(lg['lag.p50_ms'])} / {_v(lg['lag.p50_ms'], 'p95')}  "
            f"p95 {_v(lg['lag.p95_ms'])} / {_v(lg['lag.p95_ms'], 'p95')}  "
            f"max {_v(lg['lag.max_ms'], fmt=',.0f')} / {_v(lg['lag.max_ms'], 'p95', ',.0f')}   "
            f"(idle app: p95 {_v(lg['idle_lag.p95_ms'])})"
        )
        print(
            f"  mounted at end: widgets {_v(lg['widgets_end'], fmt='.0f')} "
            f"(max seen {_v(lg['widgets_max'], 'max', '.0f')}), mounted_blocks "
            f"{_v(lg['mounted_blocks_end'], fmt='.0f')} "
            f"(max {_v(lg['mounted_blocks_max'], 'max', '.0f')}), "
            f"virtual height {_v(lg['virtual_height_end'], fmt='.0f')} rows "
            f"(max {_v(lg['virtual_height_max'], 'max', '.0f')}), transcript items "
            f"{_v(lg['transcript_items'], fmt='.0f')}"
        )
        print(
            f"  memory: RSS start {_v(lg['rss_start_kib'], fmt=',.0f')} KiB, end "
            f"{_v(lg['rss_end_kib'], fmt=',.0f')} KiB, "
            f"peak {_v(lg['rss_peak_kib'], fmt=',.0f')} KiB, "
            f"2nd-half growth {_v(lg['rss_second_half_growth_kib'], fmt=',.0f')} KiB; gc objects "
            f"{_v(lg['gc_objects_start'], fmt=',.0f')} -> {_v(lg['gc_objects_end'], fmt=',.0f')}, "
            f"widget objects alive {_v(lg['widgets_alive_end'], fmt=',.0f')}"
        )
        p95 = lg["lag.p95_ms"]["median"]
        verdict = "ok" if p95 < TARGET_P95_LAG_MS else "OVER"
        print(f"  target p95 lag < {TARGET_P95_LAG_MS:g} ms: {p95:.1f} ms {verdict}")
        if p95 >= TARGET_P95_LAG_MS:
            failures.append(f"long session p95 lag {p95:.1f} ms >= {TARGET_P95_LAG_MS:g} ms")
    rs = results.get("resume")
    if rs:
        rec = rs["recording"]
        print(
            f"\nresume a {args.tools}-tool-call session ({rec['events_lines']:,} events, "
            f"{rec['events_bytes'] / 1024:,.0f} KiB) in-process (ms; median / p95)"
        )
        print(
            f"  opener (read + fold) {_ms(rs['opener_s'])} / {_ms(rs['opener_s'], 'p95')}   "
            f"timeline.load() {_ms(rs['load_s'])} / {_ms(rs['load_s'], 'p95')}   "
            f"first frame after load {_ms(rs['first_frame_after_load_s'])} / "
            f"{_ms(rs['first_frame_after_load_s'], 'p95')}   all tail widgets mounted "
            f"{_ms(rs['settled_after_load_s'])} / {_ms(rs['settled_after_load_s'], 'p95')}"
        )
        print(
            f"  mounted_blocks {_v(rs['mounted_blocks'], fmt='.0f')} of "
            f"{_v(rs['transcript_items'], fmt='.0f')} items, "
            f"widgets {_v(rs['widgets'], fmt='.0f')}, "
            f"RSS peak {_v(rs['rss_peak_kib'], fmt=',.0f')} KiB"
        )
    return failures


def profile_report(path: Path, top: int = 15) -> None:
    stats = pstats.Stats(str(path))
    entries: dict[tuple[str, int, str], tuple[Any, ...]] = vars(stats)["stats"]
    ours = (str(ROOT / "widgets"), str(ROOT / "app"), str(ROOT / "agent"))

    def short(filename: str) -> str:
        marker = "site-packages" + os.sep
        if marker in filename:
            return filename.split(marker, 1)[1]
        return filename.removeprefix(str(ROOT) + os.sep)

    print(f"\ncProfile saved to {path}")
    print(f"top {top} loopdeck functions by cumulative time")
    mine = sorted(
        ((k, v) for k, v in entries.items() if k[0].startswith(ours)),
        key=lambda kv: kv[1][3],
        reverse=True,
    )
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in mine[:top]:
        print(f"  {nc:>8} {tt:>8.3f} {ct:>8.3f}  {short(filename)}:{line}({func})")
    print(f"top {top} functions anywhere by own time")
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in sorted(
        entries.items(), key=lambda kv: kv[1][2], reverse=True
    )[:top]:
        print(f"  {nc:>8} {tt:>8.3f} {ct:>8.3f}  {short(filename)}:{line}({func})")


# --- entry point -------------------------------------------------------------------


def _size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


SCENARIOS = ("first_frame", "stream", "long", "resume")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child_main(argv[1], argv[2])

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.tui", description="Benchmark the terminal app, headless."
    )
    parser.add_argument("--tools", type=_positive, default=2000, help="tool calls (long, resume)")
    parser.add_argument("--repeat", type=_positive, default=5, help="runs per variant")
    parser.add_argument(
        "--long-repeat", type=_positive, default=3, help="runs of the long session (slow)"
    )
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated subset")
    parser.add_argument("--delay-ms", type=int, default=2, help="model delay per long-session turn")
    parser.add_argument(
        "--stream-ms", type=int, default=2000, help="duration of the streamed reply"
    )
    parser.add_argument("--tool", choices=("glob", "noop"), default="glob")
    parser.add_argument("--max-mounted", type=int, default=0, help="override Timeline.max_mounted")
    parser.add_argument("--size", type=_size, default=DEFAULT_SIZE, help="terminal WxH (120x40)")
    parser.add_argument("--no-encode", dest="encode", action="store_false")
    parser.add_argument(
        "--css",
        help="stylesheet for the in-process scenarios (A/B a change to styles/app.tcss)",
    )
    parser.add_argument(
        "--profile",
        choices=("stream", "stream0", "long", "resume"),
        help="cProfile one run of a scenario instead of timing",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")

    if args.profile:
        return run_profile(args)

    info = machine()
    _log(
        f"tui benchmark: {', '.join(scenarios)}; repeat {args.repeat} (long {args.long_repeat}); "
        f"tools {args.tools}; nproc={info['nproc']}; sum(range(1e7)) {info['sum_range_1e7_s']} s"
    )
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="loopdeck-tui-rec-") as rec_tmp:
        rec = None
        if "resume" in scenarios or "first_frame" in scenarios:
            _log(f"  recording a {args.tools}-tool-call session for resume…")
            rec = asyncio.run(prepare_resume_session(Path(rec_tmp), args.tools, args.tool))
        if "first_frame" in scenarios:
            results["first_frame"] = bench_first_frame(args, rec)
        if "stream" in scenarios:
            results["stream"] = bench_stream(args)
        if "long" in scenarios:
            results["long"] = bench_long(args)
        if "resume" in scenarios:
            assert rec is not None
            results["resume"] = bench_resume(args, rec)
    info["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    failures = print_report(results, args)
    payload = {
        "benchmark": "tui",
        "machine": info,
        "params": {
            "tools": args.tools,
            "repeat": args.repeat,
            "long_repeat": args.long_repeat,
            "delay_ms": args.delay_ms,
            "stream_ms": args.stream_ms,
            "stream_chars": STREAM_CHARS,
            "tool": args.tool,
            "max_mounted": args.max_mounted or None,
            "size": list(args.size),
            "encode_frames": args.encode,
            "css": args.css,
            "probe_interval_ms": PROBE_INTERVAL_S * 1000,
        },
        "targets": {"first_frame_s": TARGET_FIRST_FRAME_S, "p95_lag_ms": TARGET_P95_LAG_MS},
        "results": results,
        "failed_targets": failures,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.output}")
    if failures:
        print("targets missed: " + "; ".join(failures))
    return 0


def run_profile(args: argparse.Namespace) -> int:
    out = args.output.parent / f"tui-{args.profile}.prof"
    out.parent.mkdir(parents=True, exist_ok=True)
    common = {"size": list(args.size), "encode": args.encode, "css": args.css, "profile": str(out)}
    if args.profile in ("stream", "stream0"):
        delay = args.stream_ms if args.profile == "stream" else 0
        result = run_child(
            "stream", {**common, "chars": STREAM_CHARS, "delay_ms": delay, "timeout": 300}, 600
        )
        print(f"stream under cProfile: {result['total_s'] * 1000:.0f} ms")
    elif args.profile == "long":
        params = {
            **common,
            "tools": args.tools,
            "delay_ms": args.delay_ms,
            "tool": args.tool,
            "max_mounted": args.max_mounted,
            "timeout": 60 + args.tools * 5.0,
        }
        result = run_child("long", params, timeout=120 + args.tools * 6.0)
        print(f"long session under cProfile: {result['wall_s']:.1f} s")
    else:
        with tempfile.TemporaryDirectory(prefix="loopdeck-tui-rec-") as rec_tmp:
            rec = asyncio.run(prepare_resume_session(Path(rec_tmp), args.tools, args.tool))
            params = {**common, **rec, "tools": args.tools, "tool": args.tool, "timeout": 300}
            result = run_child("resume", params, timeout=600)
        print(f"resume under cProfile: load {result['load_s'] * 1000:.0f} ms")
    profile_report(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
