"""``loopdeck sessions --all`` and ``--copilot`` over 200 sessions, before and now.

Each run is a cold process (what a user waits for). "before" is the code of another
commit (``--before``, by default the one before logs were read as plain JSON), taken
with ``git archive`` into a temporary folder; "now" is this checkout. Both run the
same way: ``python -S`` with the code's folder and this environment's site-packages
on ``sys.path``, so only the code differs. Runs are interleaved round-robin, and
the table shows medians (min, max). The installed ``loopdeck`` command is timed
too, as the absolute figure a user sees.

    python -m benchmarks.session_listing                 # 200 sessions, 15 runs each
    python -m benchmarks.session_listing --sessions 200 --repeat 21 --before e30e70a
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import uuid
from io import BytesIO
from pathlib import Path

from benchmarks.machine import ROOT, load_average, machine

RESULTS = Path(__file__).resolve().parent / "results" / "session_listing.json"
FIXTURES = ROOT / "tests" / "fixtures"
DEFAULT_BEFORE = "f7daa66"  # the commit before the listing read logs as plain JSON

CHILD = """
import sys
sys.path[:0] = [{code!r}, {site!r}]
from app.cli import main
raise SystemExit(main({argv!r}))
"""


class BenchmarkError(Exception):
    pass


def make_homes(base: Path, count: int) -> tuple[Path, Path]:
    """A loopdeck home with ``count`` sessions (log and metadata, as loopdeck writes
    them) and a Copilot home with ``count`` copies of the real Copilot CLI logs."""
    loopdeck, copilot = base / "loopdeck-home", base / "copilot-home"
    log = (FIXTURES / "loopdeck-session" / "events.jsonl").read_bytes()
    real = sorted((FIXTURES / "copilot-real").glob("*/events.jsonl"))
    for i in range(count):
        sid = str(uuid.UUID(int=i + 1, version=4))
        folder = loopdeck / "session-state" / sid
        folder.mkdir(parents=True)
        (folder / "events.jsonl").write_bytes(log)
        meta = {
            "id": sid,
            "cwd": f"/home/dev/project-{i % 7}",
            "model": "openai/gpt-5",
            "mode": "interactive",
            "startedAt": f"2026-08-{1 + i % 28:02d}T10:00:00.000Z",
            "updatedAt": f"2026-08-{1 + i % 28:02d}T10:05:00.000Z",
            "turns": 3 + i % 5,
            "firstPrompt": f"Fix the failing test number {i}",
            "toolCalls": i % 9,
            "inputTokens": 1000 * i,
            "outputTokens": 100 * i,
            "cost": 0.01 * i,
            "outcome": "completed",
            "producer": "loopdeck",
            "pid": None,
        }
        (folder / "session.json").write_text(json.dumps(meta))
        cop = copilot / "session-state" / str(uuid.UUID(int=10_000 + i, version=4))
        cop.mkdir(parents=True)
        shutil.copy(real[i % len(real)], cop / "events.jsonl")
    return loopdeck, copilot


def checkout(rev: str, into: Path) -> Path:
    """The code of ``rev`` (agent, app, widgets) in a folder of its own."""
    archive = subprocess.run(
        ["git", "archive", rev, "agent", "app", "widgets"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall time, CPU time (user + system: less swayed by other work on a shared
    machine) and output of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise BenchmarkError(f"{cmd[-1][:80]!r} failed: {done.stderr[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, cpu, done.stdout


def rows(out: str) -> list[str]:
    """The table (before the hints under it), spaces squeezed."""
    table = out.split("\n\n", 1)[0]
    return [" ".join(line.split()) for line in table.splitlines()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="the commit to compare with")
    args = parser.parse_args(argv)
    site = sysconfig.get_paths()["purelib"]
    info = machine()
    with tempfile.TemporaryDirectory(prefix="loopdeck-listing-") as tmp:
        base = Path(tmp)
        loopdeck, copilot = make_homes(base, args.sessions)
        before = checkout(args.before, base / "before")
        env = {
            **os.environ,
            "LOOPDECK_HOME": str(loopdeck),
            "COPILOT_HOME": str(copilot),
            "COLUMNS": "200",
            "TZ": "UTC",
            # Bytecode cached, as an installed loopdeck has it: the warm-up writes it
            # (for both codes and the libraries) under the temporary folder.
            "PYTHONPYCACHEPREFIX": str(base / "pycache"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        python = [sys.executable, "-S", "-c"]
        variants: dict[str, list[str]] = {"python -S (floor)": [*python, "pass"]}
        for kind, argv_ in (
            ("all", ["sessions", "--all"]),
            ("copilot", ["sessions", "--copilot", "--all"]),
        ):
            for label, code in (("before", before), ("now", ROOT)):
                child = CHILD.format(code=str(code), site=site, argv=argv_)
                variants[f"{kind}/{label}"] = [*python, child]
        # The Copilot listing keeps what it read in loopdeck's home: "before" and
        # "now" run with what their previous run kept (logs unchanged), ", no cache"
        # without it (a first listing). Each code keeps its own: their entries are
        # tied to the code that made them, so a shared file would never hold.
        variants["copilot/before, no cache"] = variants["copilot/before"]
        variants["copilot/now, no cache"] = variants["copilot/now"]
        envs = {name: env for name in variants}
        caches: dict[str, Path] = {}
        for label in ("before", "now"):
            home = base / f"copilot-listing-{label}"  # only its cache: --copilot lists COPILOT_HOME
            for name in (f"copilot/{label}", f"copilot/{label}, no cache"):
                envs[name] = {**env, "LOOPDECK_HOME": str(home)}
            caches[f"copilot/{label}, no cache"] = home / "cache" / "copilot-listing.json"
        loopdeck_cmd = shutil.which("loopdeck", path=str(Path(sys.executable).parent))
        if loopdeck_cmd:
            variants["all/loopdeck command"] = [loopdeck_cmd, "sessions", "--all"]
            variants["copilot/loopdeck command"] = [loopdeck_cmd, "sessions", "--copilot", "--all"]
        times: dict[str, list[float]] = {name: [] for name in variants}
        cpu_times: dict[str, list[float]] = {name: [] for name in variants}
        outputs: dict[str, str] = {}
        for name, cmd in variants.items():  # one warm-up each (page cache, .pyc files)
            if name in caches:
                caches[name].unlink(missing_ok=True)
            _, _, outputs[name] = timed(cmd, envs.get(name, env))
        for now_name, before_name in (
            ("all/now", "all/before"),
            ("copilot/now", "copilot/before"),
            ("copilot/now, no cache", "copilot/before, no cache"),
        ):
            now, old = rows(outputs[now_name]), rows(outputs[before_name])
            if len(now) != args.sessions + 1:
                raise BenchmarkError(f"{now_name}: {len(now) - 1} sessions listed")
            if now != old:
                raise BenchmarkError(f"{now_name}: the listing differs from before's")
        for _ in range(args.repeat):
            for name, cmd in variants.items():
                if name in caches:
                    caches[name].unlink(missing_ok=True)
                took, cpu, _ = timed(cmd, envs.get(name, env))
                times[name].append(took)
                cpu_times[name].append(cpu)
    info["loadavg_end"] = load_average()
    report = {"machine": info, "params": vars(args), "seconds": times, "cpu_seconds": cpu_times}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2))
    print(f"{args.sessions} sessions, {args.repeat} cold runs each, before = {args.before}")
    # ms per cold process: wall median (min, max), then CPU median (min)
    print(f"{'variant':28} {'median':>8} {'min':>8} {'max':>8} {'cpu':>8} {'cpu min':>8}")
    for name, values in times.items():
        cpu = cpu_times[name]
        print(
            f"{name:28} {statistics.median(values) * 1000:7.0f}ms "
            f"{min(values) * 1000:7.0f}ms {max(values) * 1000:7.0f}ms "
            f"{statistics.median(cpu) * 1000:7.0f}ms {min(cpu) * 1000:7.0f}ms"
        )
    for now_name, before_name in (
        ("all/now", "all/before"),
        ("copilot/now", "copilot/before"),
        ("copilot/now, no cache", "copilot/before, no cache"),
    ):
        ratio = statistics.median(times[before_name]) / statistics.median(times[now_name])
        cpu_ratio = statistics.median(cpu_times[before_name]) / statistics.median(
            cpu_times[now_name]
        )
        print(
            f"{now_name}: {ratio:.1f}x faster than {before_name} "
            f"(wall medians; CPU {cpu_ratio:.1f}x)"
        )
    print(f"load average: {info['loadavg_start']} -> {info['loadavg_end']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
