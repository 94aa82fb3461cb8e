"""Real tasks for a small local coding model: does loopdeck get work done with it?

Serves Qwen2.5-Coder-Instruct (1.5B or 0.5B, see ``benchmarks/local_model.py``) with
llama.cpp's server (xllamacpp; the GGUF's own chat template, Jinja on), then runs
``loopdeck -p PROMPT --autopilot --allow-all-tools`` as its own process on each task of
``benchmarks/local_tasks.py``: a throwaway git repository, one request, a time cap, and a
check that runs something where it can (the tests pass, the script prints the right
number) or looks for the answer in the reply.

Reported per task and in total: solved or not (and why), turns, tokens in and out, time
to first token (first call, and median over calls), generation speed (tokens/s, from the
usage loopdeck records and from the server's own counters), tool calls, and how many of
them the model wrote as text. Each task's session log stays under
``benchmarks/results/local_coder/<model>/<task>/home`` to read after a failure.

    python -m benchmarks.local_coder                          # the 1.5B model, every task
    python -m benchmarks.local_coder --model 0.5b --threads 1
    python -m benchmarks.local_coder --tasks find_def,fix_test --cap 900
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import local_model
from benchmarks.local_tasks import TASKS, TASKS_BY_NAME, Outcome, Task, Verdict, make_repository
from benchmarks.machine import ROOT, load_average, machine
from tests.support.llama_server import LlamaServer, ServerOptions

RESULTS = Path(__file__).parent / "results"
ALIAS = "qwen2.5-coder"
N_CTX = 16_384
N_PREDICT = 1024  # one reply's cap: a model that rambles still ends its turn
WORKSPACE = Path(tempfile.gettempdir()) / "loopdeck-local-coder" / "project"


@dataclass
class TaskResult:
    task: str
    ok: bool
    why: str
    exit_code: int | None
    timed_out: bool
    wall_s: float
    turns: int = 0
    nudges: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    ttft_first_s: float | None = None
    ttft_median_s: float | None = None
    tokens_per_s: float | None = None  # output tokens over generating time, from the usage
    tool_calls: int = 0
    tool_calls_from_text: int = 0
    tool_failures: int = 0
    tools: list[str] = field(default_factory=list)
    # The server's own counters across the task (llama.cpp's /metrics).
    server: dict[str, float] = field(default_factory=dict)
    loadavg_end: list[float] | None = None
    events: str = ""  # the session log, for a look after a failure
    answer: str = ""


def from_text(request: dict[str, Any]) -> bool:
    """Whether a recorded tool request was written by the model as text (recovered from
    its reply, not a structured call of the provider)."""
    for key in ("fromText", "recoveredFromText", "textToolCall"):
        if request.get(key):
            return True
    return request.get("source") == "text"


def looks_like_call(text: str) -> bool:
    return '"arguments"' in text or '"parameters"' in text or "<tool" in text


def summarise(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-task figures from the JSON lines ``loopdeck -p --output-format json``
    prints (the same events its log holds)."""
    turns = nudges = inp = out = calls = texts = failures = 0
    ttfts: list[float] = []
    gen_s = 0.0
    gen_tokens = 0
    tools: list[str] = []
    answers: list[str] = []
    for event in events:
        data = event.get("data") or {}
        match event.get("type"):
            case "assistant.turn_start":
                turns += 1
            case "user.message" if data.get("isAutopilotContinuation"):
                nudges += 1
            case "assistant.usage":
                inp += int(data.get("inputTokens") or 0)
                o = int(data.get("outputTokens") or 0)
                out += o
                ttft = data.get("timeToFirstTokenMs")
                if ttft is not None:
                    ttfts.append(float(ttft) / 1000)
                    duration = data.get("duration")
                    if duration is not None and float(duration) > float(ttft):
                        gen_s += (float(duration) - float(ttft)) / 1000
                        gen_tokens += o
            case "assistant.message":
                requests = data.get("toolRequests") or []
                calls += len(requests)
                texts += sum(1 for r in requests if from_text(r))
                tools += [str(r.get("name")) for r in requests]
                content = str(data.get("content") or "")
                # A reply is an answer when it is prose: not a call the model wrote as
                # text that did not run (its arguments would hold the words checked for).
                if not requests and content and not looks_like_call(content):
                    answers.append(content)
            case "tool.execution_complete" if not data.get("success"):
                failures += 1
            case "session.task_complete" if data.get("summary"):
                answers.append(str(data["summary"]))
            case _:
                pass
    return {
        "turns": turns,
        "nudges": nudges,
        "input_tokens": inp,
        "output_tokens": out,
        "ttft_first_s": ttfts[0] if ttfts else None,
        "ttft_median_s": statistics.median(ttfts) if ttfts else None,
        "tokens_per_s": gen_tokens / gen_s if gen_s > 0 else None,
        "tool_calls": calls,
        "tool_calls_from_text": texts,
        "tool_failures": failures,
        "tools": tools,
        "answer": "\n".join(answers),
    }


def server_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    def d(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    prompt_n, prompt_s = d("prompt_tokens_total"), d("prompt_seconds_total")
    gen_n, gen_s = d("tokens_predicted_total"), d("tokens_predicted_seconds_total")
    return {
        "prompt_tokens": prompt_n,
        "prompt_tokens_cached": d("prompt_tokens_cached_total"),
        "prompt_tokens_per_s": round(prompt_n / prompt_s, 1) if prompt_s > 0 else 0.0,
        "generated_tokens": gen_n,
        "generated_tokens_per_s": round(gen_n / gen_s, 1) if gen_s > 0 else 0.0,
    }


def loopdeck_command(task: Task, api_base: str, workspace: Path, extra: list[str]) -> list[str]:
    # Not ``-m app.cli`` from the workspace: a task's own ``app`` package would be the one
    # run. ``-P`` keeps the workspace off sys.path; no PYTHONPATH, so the commands the
    # model runs see the workspace's modules only.
    launcher = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from app.cli import entry; entry()"
    return [
        sys.executable,
        "-P",
        "-c",
        launcher,
        "-p",
        task.prompt,
        "--autopilot",
        "--allow-all-tools",
        "--model",
        f"openai/{ALIAS}",
        "--api-base",
        api_base,
        "--output-format",
        "json",
        "--cwd",
        str(workspace),
        # A CPU model on a loaded machine may read a long prompt for minutes.
        "--idle-timeout",
        "900",
        "--context-window",
        str(N_CTX),
        # The compact prompt: ~1.1k tokens instead of ~2.6k, what a CPU reads first.
        "--system-prompt",
        "compact",
        "--text-tool-calls",
        "on",
        *extra,
    ]


def run_task(
    task: Task,
    server: LlamaServer,
    out_dir: Path,
    cap: float,
    extra: list[str],
    keep: bool,
    workspace: Path = WORKSPACE,
) -> TaskResult:
    task_dir = out_dir / task.name
    shutil.rmtree(task_dir, ignore_errors=True)
    home = task_dir / "home"
    home.mkdir(parents=True)
    # One path for every task: the system prompt names the working directory near its
    # start, so the same path keeps the whole prompt (instructions and tools, ~3k tokens)
    # in the server's prompt cache from one task to the next, as in one project.
    shutil.rmtree(workspace, ignore_errors=True)
    make_repository(task, workspace)
    env = {
        **os.environ,
        "LOOPDECK_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_OFFLINE_MODE": "true",
    }
    for name in ("OPENAI_API_KEY", "PYTHONPATH"):
        env.pop(name, None)
    before = server.metrics()
    start = time.monotonic()
    process = subprocess.Popen(
        loopdeck_command(task, server.api_base, workspace, extra),
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    timed_out = False
    try:
        stdout, stderr = process.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        timed_out = True
        # Ctrl+C as a user would: the run ends its turn and writes its log.
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
    wall = time.monotonic() - start
    (task_dir / "stdout.jsonl").write_text(stdout)
    (task_dir / "stderr.txt").write_text(stderr)
    events = []
    for line in stdout.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            events.append(json.loads(line))
    figures = summarise(events)
    try:
        verdict = task.check(Outcome(workspace, figures["answer"]))
    except Exception as exc:  # a check that crashes on odd output is a failed task
        verdict = Verdict(False, f"check failed: {exc!r}"[:160])
    if timed_out and verdict.ok:
        verdict = Verdict(False, f"over the {cap:.0f} s cap ({verdict.why})")
    logs = sorted(home.glob("session-state/*/events.jsonl"))
    result = TaskResult(
        task=task.name,
        ok=verdict.ok,
        why=verdict.why,
        exit_code=process.returncode,
        timed_out=timed_out,
        wall_s=round(wall, 1),
        server=server_delta(before, server.metrics()),
        loadavg_end=load_average(),
        events=str(logs[0]) if logs else "",
        **figures,
    )
    if keep:
        shutil.copytree(workspace, task_dir / "workspace", symlinks=True)
    shutil.rmtree(workspace, ignore_errors=True)
    return result


def table(results: list[TaskResult]) -> str:
    def secs(x: float | None) -> str:
        return "–" if x is None else f"{x:.1f}"

    rows = [
        "| task | solved | turns | tokens in / out | ttft first / median (s) | tok/s "
        "| tool calls (from text) | time (s) | why |",
        "|---|:-:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in results:
        rows.append(
            f"| {r.task} | {'yes' if r.ok else 'no'} | {r.turns} "
            f"| {r.input_tokens:,} / {r.output_tokens:,} "
            f"| {secs(r.ttft_first_s)} / {secs(r.ttft_median_s)} | {secs(r.tokens_per_s)} "
            f"| {r.tool_calls} ({r.tool_calls_from_text}) | {r.wall_s:.0f} "
            f"| {r.why.replace('|', '/').replace(chr(10), ' ')[:90]} |"
        )
    solved = sum(r.ok for r in results)
    ttfts = [r.ttft_median_s for r in results if r.ttft_median_s is not None]
    speeds = [r.tokens_per_s for r in results if r.tokens_per_s is not None]
    rows.append(
        f"| **total** | **{solved}/{len(results)}** | {sum(r.turns for r in results)} "
        f"| {sum(r.input_tokens for r in results):,} / {sum(r.output_tokens for r in results):,} "
        f"| – / {secs(statistics.median(ttfts) if ttfts else None)} "
        f"| {secs(statistics.median(speeds) if speeds else None)} "
        f"| {sum(r.tool_calls for r in results)} ({sum(r.tool_calls_from_text for r in results)}) "
        f"| {sum(r.wall_s for r in results):.0f} | |"
    )
    return "\n".join(rows)


def pick_tasks(spec: str | None) -> list[Task]:
    if not spec:
        return list(TASKS)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in TASKS_BY_NAME]
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}; the tasks: {', '.join(TASKS_BY_NAME)}")
    return [TASKS_BY_NAME[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(local_model.MODELS), default="1.5b")
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="llama.cpp threads (default 1: steadier than 2 on two busy cores)",
    )
    parser.add_argument(
        "--cap", type=float, default=600, help="seconds a task may take (default 600)"
    )
    parser.add_argument(
        "--loopdeck-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG on to loopdeck (repeatable): --loopdeck-arg=--max-autopilot-continues=3",
    )
    parser.add_argument("--keep", action="store_true", help="keep each task's workspace")
    parser.add_argument("--list", action="store_true", help="list the tasks and exit")
    parser.add_argument("--out", type=Path, help="the JSON result file")
    args = parser.parse_args(argv)
    tasks = pick_tasks(args.tasks)
    if args.list:
        for task in TASKS:
            print(f"{task.name:16} {task.what}")
        return 0
    try:
        gguf = local_model.ensure(args.model)
    except local_model.ModelError as exc:
        sys.stderr.write(f"benchmarks.local_coder: {exc}\n")
        return 2
    model = local_model.MODELS[args.model]
    out_dir = RESULTS / "local_coder" / args.model
    out_dir.mkdir(parents=True, exist_ok=True)
    info = machine()
    options = ServerOptions(
        gguf=gguf,
        alias=ALIAS,
        template=None,  # the GGUF's own chat template
        n_ctx=N_CTX,
        n_predict=N_PREDICT,
        threads=args.threads,
    )
    results: list[TaskResult] = []
    print(f"{model.title}, {args.threads} thread(s), load {load_average()}", flush=True)
    with LlamaServer(options, start_timeout=600) as server:
        for task in tasks:
            result = run_task(task, server, out_dir, args.cap, args.loopdeck_arg, args.keep)
            results.append(result)
            print(
                f"{task.name}: {'solved' if result.ok else 'NOT solved'} ({result.why}); "
                f"{result.turns} turns, {result.wall_s:.0f} s, load {result.loadavg_end}",
                flush=True,
            )
    print()
    print(table(results))
    out = args.out or RESULTS / f"local_coder-{args.model}.json"
    out.write_text(
        json.dumps(
            {
                "machine": info | {"loadavg_end": load_average()},
                "model": {"key": model.key, "title": model.title, "sha256": model.sha256},
                "params": {
                    "threads": args.threads,
                    "cap_s": args.cap,
                    "n_ctx": N_CTX,
                    "n_predict": N_PREDICT,
                    "loopdeck_args": args.loopdeck_arg,
                },
                "solved": sum(r.ok for r in results),
                "tasks": [asdict(r) for r in results],
            },
            indent=2,
        )
    )
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
