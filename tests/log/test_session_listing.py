"""The session listing reads cheaply and says the same: Copilot CLI's logs are not
parsed event by event (nor into the event models), and loopdeck's own sessions are
listed from their metadata."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent.log.scan
from agent.log.session_row import SessionSummary
from agent.log.store import SessionStore
from agent.log.summary import LISTING_TYPES, summarize_events
from tests.support.paths import FIXTURES, ROOT

REAL = FIXTURES / "copilot-real"
REAL_LOGS = sorted(REAL.glob("*/events.jsonl"))
# What a listing does without: the event models (pydantic), and asyncio (the writer's).
HEAVY = ("agent.events.schema", "agent.events.base", "pydantic", "asyncio")


def store_of(tmp_path: Path, *logs: Path) -> SessionStore:
    store = SessionStore(tmp_path / "copilot-home")
    for log in logs:
        folder = store.root / log.parent.name
        folder.mkdir(parents=True)
        shutil.copy(log, folder / "events.jsonl")
    return store


@pytest.mark.parametrize("log", REAL_LOGS, ids=[p.parent.name for p in REAL_LOGS])
def test_a_real_copilot_log_is_listed_as_the_full_read_lists_it(tmp_path: Path, log: Path) -> None:
    store = store_of(tmp_path, log)
    sid = log.parent.name
    lines = store.events_path(sid).read_text("utf-8").splitlines()
    full = summarize_events(
        map(json.loads, lines), SessionSummary(id=sid, path=store.events_path(sid))
    )
    assert store.summary(sid) == full


def test_what_the_listing_says_of_real_logs(tmp_path: Path) -> None:
    store = store_of(tmp_path, *REAL_LOGS)
    by_id = {s.id: s for s in store.list_sessions()}
    tool_call = by_id["irrlicht-auto-executed-tool-call"]
    assert tool_call.first_prompt.startswith("Run the shell command `echo hello` with the bash")
    assert (tool_call.turns, tool_call.tool_calls, tool_call.outcome) == (2, 1, "completed")
    assert tool_call.started == "2026-08-03T10:35:04.106Z"
    assert tool_call.updated == "2026-08-03T10:35:32.284Z"  # its last line (session.shutdown)
    assert tool_call.cwd.endswith("/2-2_auto-executed-tool-call-20260803T103502/cwd")
    assert tool_call.mode == "interactive"
    ask = by_id["lantern-ask"]
    assert ask.first_prompt == "What does average_item_price do? One sentence."
    assert (ask.turns, ask.tool_calls, ask.cwd, ask.outcome) == (1, 0, "/work", "completed")
    assert (ask.output_tokens, ask.updated) == (304, "2026-08-05T20:39:26.919Z")


def test_a_copilot_listing_parses_only_the_lines_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = REAL / "irrlicht-foreground-subagent" / "events.jsonl"
    store = store_of(tmp_path, log)
    parsed: list[str] = []
    real_read = agent.log.scan.read_line

    def counting(line: str) -> Any:
        obj = real_read(line)
        parsed.append(obj["type"])
        return obj

    # Every line the scan parses goes through here.
    monkeypatch.setattr(agent.log.scan, "read_line", counting)
    summary = store.summary(log.parent.name)
    assert summary.turns == 4 and summary.tool_calls == 3
    lines = log.read_text().splitlines()
    assert len(parsed) < len(lines) / 3, parsed
    # Never the system prompts, tool output, or turn markers: only what the listing reads.
    assert not {"system.message", "tool.execution_complete", "assistant.turn_start"} & set(parsed)


def test_a_torn_last_line_and_an_unterminated_whole_one(tmp_path: Path) -> None:
    log = REAL / "irrlicht-auto-executed-tool-call" / "events.jsonl"
    store = store_of(tmp_path, log)
    path = store.events_path(log.parent.name)
    text = path.read_text()
    path.write_text(text.rstrip("\n"))  # the last event whole, its newline missing
    assert store.summary(log.parent.name).updated == "2026-08-03T10:35:32.284Z"
    path.write_text(text + '{"type":"assistant.turn_start","data":{"tur')  # torn
    summary = store.summary(log.parent.name)
    assert (summary.turns, summary.updated) == (2, "2026-08-03T10:35:32.284Z")


def test_sessions_all_lists_without_importing_the_event_models(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    folder = loopdeck_home / "session-state" / "5e55a0e0-0000-4000-8000-000000000000"
    folder.mkdir(parents=True)
    shutil.copy(REAL / "lantern-ask" / "events.jsonl", folder / "events.jsonl")
    meta = {
        "id": folder.name,
        "cwd": str(tmp_path),
        "model": "openai/gpt-5",
        "mode": "interactive",
        "startedAt": "2026-08-05T20:38:55.461Z",
        "updatedAt": "2026-08-05T20:40:00.000Z",
        "turns": 3,
        "firstPrompt": "Listed from the metadata",
        "toolCalls": 2,
        "outcome": "completed",
        "pid": None,
    }
    (folder / "session.json").write_text(json.dumps(meta))
    code = (
        "import sys\n"
        "from app.cli import main\n"
        "main(['sessions', '--all'])\n"
        f"print('imported:', sorted(m for m in sys.modules if m in {HEAVY!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    assert "Listed from the metadata" in done.stdout
    assert done.stdout.rstrip().endswith("imported: []"), done.stdout


def listing_in_a_new_process(*argv: str) -> tuple[str, list[str]]:
    """What ``loopdeck ARGV`` prints, and which of the modules a listing does without
    it imported."""
    code = (
        "import sys\n"
        "from app.cli import main\n"
        f"main({list(argv)!r})\n"
        f"print('imported:', sorted(m for m in sys.modules if m in {HEAVY!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode == 0, done.stderr
    listing, _, imported = done.stdout.rpartition("imported: ")
    return listing, json.loads(imported.replace("'", '"'))


def test_a_second_copilot_listing_reads_only_what_changed(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_of(tmp_path, *REAL_LOGS)
    monkeypatch.setenv("COPILOT_HOME", str(store.home))
    first, imported = listing_in_a_new_process("sessions", "--copilot", "--all")
    assert imported == []  # every log read, as plain JSON
    assert (loopdeck_home / "cache" / "copilot-listing.json").is_file()
    again, imported = listing_in_a_new_process("sessions", "--copilot", "--all")
    assert again == first
    assert imported == []  # every log unchanged: nothing parsed

    # A log that grew is read again; the others still come from the cache.
    log = store.events_path("lantern-ask")
    turn = '{"type":"assistant.turn_start","data":{"turnId":"9"},"id":"%s","timestamp":"%s"}\n'
    with log.open("a") as out:
        out.write(turn % ("5e55a0e0-0000-4000-8000-000000000001", "2026-08-05T21:00:00.000Z"))
    grown, imported = listing_in_a_new_process("sessions", "--copilot", "--all")
    assert imported == []
    [row] = [line for line in grown.splitlines() if "What does average_item_price do" in line]
    assert row.split()[row.split().index("interactive") + 1] == "2"  # turns: 1 → 2
    assert len(grown.splitlines()) == len(first.splitlines())

    # A damaged cache is read past: the logs tell.
    (loopdeck_home / "cache" / "copilot-listing.json").write_text("{not json")
    damaged, _ = listing_in_a_new_process("sessions", "--copilot", "--all")
    assert damaged == grown


def test_a_first_copilot_listing_imports_neither_the_event_models_nor_asyncio(
    tmp_path: Path, loopdeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_of(tmp_path, *REAL_LOGS)
    monkeypatch.setenv("COPILOT_HOME", str(store.home))
    assert not (loopdeck_home / "cache").exists()  # nothing kept: every log is read
    listing, imported = listing_in_a_new_process("sessions", "--copilot", "--all")
    assert imported == []
    assert "What does average_item_price do? One sentence." in listing
    assert len(listing.split("\n\n")[0].splitlines()) == len(REAL_LOGS) + 1


# --- the scan reads what a full read reads, whatever the layout -------------------------

SOURCE_LINES = [
    json.loads(line)
    for log in (REAL / "irrlicht-shell-escape-command", REAL / "irrlicht-foreground-subagent")
    for line in (log / "events.jsonl").read_text("utf-8").splitlines()
]


@st.composite
def odd_layout_line(draw: st.DrawFn) -> str:
    """A line of a real log, in the writers' layout or another one; or not an event."""
    kind = draw(st.sampled_from(["as written", "spaced", "type later", "escaped", "other"]))
    if kind == "other":
        return draw(st.sampled_from(["", "   ", "{not json", "[]", "null", '{"type":5}']))
    envelope = draw(st.sampled_from(SOURCE_LINES))
    if kind == "spaced":
        return " " + json.dumps(envelope, separators=(", ", " : "))
    if kind == "type later":
        return json.dumps({"id": "x", **envelope})
    line = json.dumps(envelope, separators=(",", ":"))
    if kind == "escaped":
        etype = envelope["type"]
        return line.replace(f'"{etype}"', '"' + etype.replace(".", "\\u002e") + '"', 1)
    return line


def full_read(text: str, path: Path) -> SessionSummary:
    """What store.summary said when it parsed every line (its rules for the start and
    the latest activity included)."""
    lines = text.split("\n")
    torn = lines.pop()
    envelopes = []
    for line in lines:
        with contextlib.suppress(ValueError):
            envelopes.append(json.loads(line))
    if torn.strip():
        try:
            last = json.loads(torn)
        except ValueError:
            pass
        else:
            if isinstance(last, dict) and isinstance(last.get("type"), str):
                envelopes.append(last)
                lines.append(torn)
    envelopes = [e for e in envelopes if isinstance(e, dict) and isinstance(e.get("type"), str)]
    stamps = [
        m[-1] for m in (re.findall(r'"timestamp"\s*:\s*"([^"\\]+)"', line) for line in lines) if m
    ]
    summary = summarize_events(
        [e for e in envelopes if e["type"] in LISTING_TYPES],
        SessionSummary(id=path.parent.name, path=path, started=stamps[0] if stamps else ""),
    )
    summary.updated = (stamps[-1] if stamps else "") or summary.updated
    return summary


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(odd_layout_line(), max_size=25),
    st.sampled_from(["\n", "", '\n{"type":"assistant.turn_start","data":{"tur']),
)
def test_the_scan_reads_any_layout_as_a_full_read(
    tmp_path: Path, lines: list[str], ending: str
) -> None:
    folder = tmp_path / "copilot-home" / "session-state" / "s"
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + ending
    (folder / "events.jsonl").write_text(text, "utf-8")
    store = SessionStore(tmp_path / "copilot-home")
    assert store.summary("s") == full_read(text, folder / "events.jsonl")
