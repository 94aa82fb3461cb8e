"""The official Copilot SDK's e2e suite with loopdeck as its runtime: run it, classify it.

Run by hand (see benchmarks/README.md). ``run`` drives the suite's files one by one
through the harness script (``--harness``, or ``$SDK_E2E_HARNESS``; it writes
``<results>/<file>.{xml,txt}``); ``report`` reads those results, puts every test in
one class, prints the counts and the "Method not found" tally per method, and writes
the report (``compat/sdk-e2e.md`` by default).

A test's class, first match wins:

- ``pass`` / ``skipped``;
- ``missing method``: the runtime answered JSON-RPC -32601 (the method is named);
- ``cloud``: the test needs GitHub's cloud (sign-in, Copilot accounts, telemetry,
  remote sessions): listed by hand in :data:`CLOUD`, with why;
- ``no recording``: the replaying proxy had no recorded answer for what loopdeck sent
  (its prompts and tool schemas are its own): inconclusive rather than failed;
- ``timeout``: pytest-timeout stopped it;
- ``assertion``: anything else that failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

CLASSES = ("pass", "missing method", "assertion", "timeout", "no recording", "cloud", "skipped")

# Tests that cannot pass without GitHub's cloud, by file (all of it) or file::test.
CLOUD: dict[str, str] = {
    "test_github_telemetry_e2e": "sends telemetry to GitHub",
    "test_per_session_auth_e2e": "signs in to GitHub per session (Copilot accounts)",
    "test_rpc_remote_e2e": "Copilot's remote sessions (GitHub's cloud)",
    "test_rpc_server_remote_control_e2e": "remote control through GitHub's cloud",
    "test_inprocess_ffi_e2e": "loads Copilot's own runtime library in-process",
}

# The families other work owns: a test stopped by one of these waits on it.
WAITING_ON = {
    "session.mcp.": "MCP",
    "mcp.": "MCP",
    "session.agent.": "custom agents",
    "session.skills.": "skills",
    "skills.": "skills",
    "session.tasks.": "sub-agents",
    "session.fleet.": "fleet",
}

_MISSING = re.compile(r"Method not found: ([\w.]+)")
_NO_RECORDING = ("Error in proxying request", "No cached response found")
_TIMEOUT = "Timeout (>"


@dataclass
class Result:
    file: str
    name: str
    outcome: str
    detail: str = ""  # the method, the cloud reason, or the failure's first line
    waits_on: str = ""


def _sections(txt: str) -> dict[str, str]:
    """Each failed test's block of the pytest text report, by test name."""
    blocks: dict[str, str] = {}
    current: str | None = None
    for line in txt.splitlines():
        head = re.match(r"^_+ (?:\S+\.)?(test_\w+(?:\[[^\]]*\])?) _+$", line)
        if head:
            current = head.group(1)
            blocks[current] = ""
            continue
        if line.startswith("=" * 10):
            current = None if "FAILURES" not in line and "ERRORS" not in line else current
        if current is not None:
            blocks[current] += line + "\n"
    return blocks


def classify(file: str, name: str, failure: str | None, skipped: bool, text: str) -> Result:
    if skipped:
        return Result(file, name, "skipped")
    if failure is None:
        return Result(file, name, "pass")
    blob = failure + "\n" + text
    missing = _MISSING.search(blob)
    if missing:
        method = missing.group(1)
        waits = next((who for prefix, who in WAITING_ON.items() if method.startswith(prefix)), "")
        return Result(file, name, "missing method", method, waits)
    cloud = CLOUD.get(f"{file}::{name}") or CLOUD.get(file)
    if cloud:
        return Result(file, name, "cloud", cloud)
    first = failure.strip().splitlines()[0][:160] if failure.strip() else ""
    if any(marker in blob for marker in _NO_RECORDING):
        return Result(file, name, "no recording", first)
    if _TIMEOUT in blob:
        return Result(file, name, "timeout", first)
    return Result(file, name, "assertion", first)


def read_results(folder: Path) -> list[Result]:
    results: list[Result] = []
    for xml in sorted(folder.glob("*.xml")):
        file = xml.stem
        txt_path = xml.with_suffix(".txt")
        sections = _sections(txt_path.read_text(errors="replace")) if txt_path.exists() else {}
        try:
            tree = ET.parse(xml)
        except ET.ParseError:
            continue
        for case in tree.iter("testcase"):
            name = case.get("name", "?")
            failure: str | None = None
            skipped = False
            for child in case:
                if child.tag in ("failure", "error"):
                    failure = (child.get("message") or "") + "\n" + (child.text or "")
                elif child.tag == "skipped":
                    skipped = True
            results.append(classify(file, name, failure, skipped, sections.get(name, "")))
    return results


def counts(results: list[Result]) -> Counter[str]:
    return Counter(r.outcome for r in results)


def missing_tally(results: list[Result]) -> Counter[str]:
    return Counter(r.detail for r in results if r.outcome == "missing method")


def render(results: list[Result], title: str) -> str:
    tally = counts(results)
    lines = [f"# {title}", "", f"{len(results)} tests.", "", "| class | tests |", "|---|---|"]
    lines += [f"| {c} | {tally.get(c, 0)} |" for c in CLASSES]
    waits = Counter(r.waits_on for r in results if r.waits_on)
    if waits:
        lines += ["", "Tests stopped by a method of a family built elsewhere:", ""]
        lines += [f"- {who}: {n}" for who, n in waits.most_common()]
    missing = missing_tally(results)
    if missing:
        lines += ["", "## Methods not found", "", "| method | tests |", "|---|---|"]
        lines += [f"| `{m}` | {n} |" for m, n in missing.most_common()]
    lines += ["", "## Every test", ""]
    current = ""
    for r in sorted(results, key=lambda r: (r.file, r.name)):
        if r.file != current:
            current = r.file
            lines += ["", f"### {r.file}", "", "| test | result | detail |", "|---|---|---|"]
        detail = r.detail.replace("|", "\\|")
        if r.waits_on:
            detail += f" (waits on {r.waits_on})"
        lines.append(f"| {r.name} | {r.outcome} | {detail} |")
    return "\n".join(lines) + "\n"


def run(harness: Path, files: list[str], env: dict[str, str]) -> int:
    return subprocess.call([str(harness), *files], env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sdk_e2e", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="run the suite's files (default: all) through the harness")
    run_p.add_argument("files", nargs="*")
    run_p.add_argument("--harness", type=Path, default=os.environ.get("SDK_E2E_HARNESS"))
    rep_p = sub.add_parser("report", help="classify the results and write the report")
    rep_p.add_argument("--out", type=Path, default=Path("compat/sdk-e2e.md"))
    rep_p.add_argument("--title", default="The Copilot SDK's e2e suite against loopdeck")
    for p in (run_p, rep_p):
        p.add_argument(
            "--results",
            type=Path,
            default=Path(os.environ.get("E2E_DIR", "/tmp/sdk-e2e")) / "results",
        )
    args = parser.parse_args(argv)
    if args.command == "run":
        if args.harness is None:
            parser.error("give --harness (the suite's run.sh) or set SDK_E2E_HARNESS")
        return run(args.harness, args.files, dict(os.environ))
    results = read_results(args.results)
    tally = counts(results)
    print(f"{len(results)} tests: " + ", ".join(f"{c} {tally.get(c, 0)}" for c in CLASSES))
    for method, n in missing_tally(results).most_common():
        print(f"  {n:3d}  {method}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(results, args.title))
    print(f"report: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
