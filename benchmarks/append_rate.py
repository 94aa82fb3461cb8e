"""Append rate: how many events a second the loop emits and persists.

    python -m benchmarks.append_rate [--events N] [--repeat K]

Side by side, in interleaved rounds, medians of K:

- **floor**: N envelope dicts shaped like ``assistant.message_delta`` turned into
  lines with ``json.dumps`` and written to a file in batches of 1,000 (``os.write``):
  what appending costs with nothing but serialisation and the write.
- **loop deltas**: one ``session.send`` to a persisted session (a real
  ``SessionStore`` in a temp dir) whose scripted model streams N chunks in one reply:
  every chunk becomes an ``assistant.message_delta`` through ``Session.emit``, then
  the reply, usage and turn events are written. Events a second = events the
  session emitted / wall time from send to ``session.idle``. **+ transcript** does
  the same with a :class:`~agent.transcript.fold.Transcript` subscribed, as the app folds
  every event it draws.
- **persisted**: N ``assistant.message`` events (short content) through
  ``Session.emit`` to the log, every one written: the writer's own cost per line.

Results: a table on stdout and ``benchmarks/results/append_rate.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent.events.schema import AssistantMessageData, Event
from agent.log.store import SessionStore
from agent.models.scripted import Script, ScriptedModel, ScriptTurn
from agent.session.session import Session
from agent.transcript.fold import Transcript
from benchmarks.machine import machine

RESULTS = Path(__file__).resolve().parent / "results" / "append_rate.json"
BATCH = 1000


def floor(n: int, folder: Path) -> float:
    start = time.perf_counter()
    fd = os.open(folder / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        lines: list[str] = []
        for i in range(n):
            envelope = {
                "type": "assistant.message_delta",
                "data": {"messageId": "m-1", "deltaContent": "word "},
                "id": f"00000000-0000-4000-8000-{i:012x}",
                "timestamp": "2026-12-01T12:00:00.000Z",
                "parentId": None,
            }
            lines.append(json.dumps(envelope, separators=(",", ":")) + "\n")
            if len(lines) == BATCH:
                os.write(fd, "".join(lines).encode())
                lines = []
        if lines:
            os.write(fd, "".join(lines).encode())
    finally:
        os.close(fd)
    return n / (time.perf_counter() - start)


async def loop_deltas(n: int, folder: Path, *, fold: bool) -> float:
    model = ScriptedModel(Script(turns=[ScriptTurn(text="word " * n)]))
    store = SessionStore(folder / f"home-{time.monotonic_ns()}")
    session = await Session.create(model=model, cwd=folder, store=store)
    counted = 0
    transcript = Transcript()

    def count(event: Event) -> None:
        nonlocal counted
        counted += 1

    def count_and_fold(event: Event) -> None:
        count(event)
        transcript.apply(event)

    session.subscribe(count_and_fold if fold else count)
    start = time.perf_counter()
    await session.send_and_wait("stream")
    elapsed = time.perf_counter() - start
    await session.close()
    if counted < n:
        raise SystemExit(f"only {counted} events for {n} chunks")
    return counted / elapsed


async def persisted(n: int, folder: Path) -> float:
    model = ScriptedModel(Script(turns=[]))
    store = SessionStore(folder / f"home-{time.monotonic_ns()}")
    session = await Session.create(model=model, cwd=folder, store=store)
    start = time.perf_counter()
    for i in range(n):
        session.emit(AssistantMessageData(message_id=f"m-{i}", content="a short reply"))
        if i % BATCH == 0:
            await asyncio.sleep(0)  # as the loop does between model chunks
    await session.persist()
    elapsed = time.perf_counter() - start
    await session.close()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.events
    runs: dict[str, Callable[[Path], float]] = {
        "floor": lambda folder: floor(n, folder),
        "loop deltas": lambda folder: asyncio.run(loop_deltas(n, folder, fold=False)),
        "loop deltas + transcript": lambda folder: asyncio.run(loop_deltas(n, folder, fold=True)),
        "persisted": lambda folder: asyncio.run(persisted(n, folder)),
    }
    rates: dict[str, list[float]] = {name: [] for name in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeat + 1):
            for name, run in runs.items():
                folder = Path(tmp) / f"{round_}-{name.replace(' ', '-')}"
                folder.mkdir()
                rate = run(folder)
                if round_:  # the first round warms up
                    rates[name].append(rate)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(f"{'':<26} {'events/s':>10} {'vs floor':>9}")
    for name, rate in medians.items():
        print(f"{name:<26} {rate:>10,.0f} {rate / medians['floor']:>9.2f}")
    out = {"machine": machine(), "events": n, "repeat": args.repeat, "median_events_per_s": medians}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
