"""Every real Copilot CLI log through every reader (issue 14, "what it must show").

The logs are ``tests/fixtures/copilot-real/*/events.jsonl`` (each with its SOURCE;
one is the stdout of ``copilot -p --output-format json``). Each one is folded,
replayed (instant, in the viewer), exported to Markdown and HTML and listed by
``sessions --copilot``, and:

- nothing crashes;
- every user message, assistant message, tool call and tool result of the log,
  read straight from its JSON lines, appears in both exports;
- no turn or tool card is left running once the file ends or the session shut down;
- raw rows (events drawn as JSON) are counted and printed per log: types the issue
  lists, and types loopdeck has an event model for, must never be raw; other types
  may be, up to ``RAW_LIMIT`` rows a log.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import DATA_TYPES
from agent.log.store import read_events, with_unreadable_rows
from agent.transcript.blocks import Block, RawBlock, ToolCallBlock, TurnBlock
from agent.transcript.fold import Transcript, fold
from app.export import to_html, to_markdown
from app.sessions_table import print_sessions
from app.viewer import ReplayScreen, ViewerApp
from tests.support.paths import FIXTURES

REAL = FIXTURES / "copilot-real"


def _distinct_logs() -> list[Path]:
    """Each log once, whatever folder name it was copied under."""
    seen: set[str] = set()
    logs = []
    for path in sorted(REAL.glob("*/events.jsonl")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            logs.append(path)
    return logs


LOGS = _distinct_logs()
IDS = [path.parent.name for path in LOGS]

# "Types to draw meaningfully rather than as raw rows", as the issue lists them.
ISSUE_TYPES = frozenset(
    {
        "system.message",
        "session.skills_loaded",
        "skill.invoked",
        "hook.start",
        "hook.end",
        "session.mcp_server_status_changed",
        "session.mcp_servers_loaded",
        "session.tools_updated",
        "session.permissions_changed",
        "session.usage_checkpoint",
        "session.shutdown",
        "session.compaction_start",
        "session.compaction_complete",
        "session.snapshot_rewind",
        "session.truncation",
        "session.background_tasks_changed",
        "tool.user_requested",
        "system.notification",
        "user_input.requested",
        "user_input.completed",
        "session.auto_mode_resolved",
        "session.title_changed",
        "session.todos_changed",
        "session.plan_changed",
    }
)
NEVER_RAW = ISSUE_TYPES | frozenset(DATA_TYPES)
RAW_LIMIT = 10  # raw rows a log may have, of types outside NEVER_RAW
WORDS = 12  # words of a text that must be found in an export


def lines_of(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            if isinstance(obj, dict):
                yield obj


def transcript_of(path: Path) -> Transcript:
    return fold(with_unreadable_rows(read_events(path)), replay=True)


def words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text))


def page_words(page: str) -> str:
    """What a reader of the export sees, as words (HTML tags and escapes removed)."""
    return words(html.unescape(re.sub(r"<[^>]+>", " ", page)))


def appears(text: str, page: str) -> bool:
    wanted = words(text).split(" ")[:WORDS]
    return " ".join(wanted) in page


def expected_content(path: Path) -> tuple[list[str], list[str], Counter[str], list[list[str]]]:
    """From the log's own lines: user messages, assistant messages, tool calls (name:
    count) and tool results (each: the texts that may stand for it)."""
    users, replies, results = [], [], []
    calls: Counter[str] = Counter()
    for obj in lines_of(path):
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        match obj.get("type"):
            case "user.message" if words(str(data.get("content") or "")):
                users.append(str(data["content"]))
            case "assistant.message":
                if words(str(data.get("content") or "")):
                    replies.append(str(data["content"]))
                for request in data.get("toolRequests") or []:
                    calls[str(request.get("name"))] += 1
            case "tool.execution_complete":
                result = data.get("result") if isinstance(data.get("result"), dict) else {}
                error = data.get("error") if isinstance(data.get("error"), dict) else {}
                # The user sees the detailed content when there is one, the model the content.
                texts = [
                    str(text)
                    for text in (
                        result.get("detailedContent"),
                        result.get("content"),
                        error.get("message"),
                    )
                    if isinstance(text, str) and words(text)
                ]
                if texts:
                    results.append(texts)
    return users, replies, calls, results


def session_id(path: Path) -> str:
    """The id Copilot gave the session (its first session.start, or a -p stream's
    result line), else one made from the folder name."""
    for obj in lines_of(path):
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        sid = data.get("sessionId") or obj.get("sessionId")
        if obj.get("type") in ("session.start", "result") and isinstance(sid, str):
            return sid
    return str(uuid.uuid5(uuid.NAMESPACE_URL, path.parent.name))


def every_block(t: Transcript) -> Iterator[Block]:
    for block in t.items:
        yield block
        if isinstance(block, TurnBlock):
            yield from block.tools


@pytest.mark.parametrize("path", LOGS, ids=IDS)
def test_every_message_and_tool_call_is_in_both_exports(path: Path) -> None:
    t = transcript_of(path)
    md, page = to_markdown(t), to_html(t)
    users, replies, calls, results = expected_content(path)
    for fmt, text in (("md", words(md)), ("html", page_words(page))):
        missing = [m[:60] for m in users if not appears(m, text)]
        assert not missing, f"{fmt}: user messages missing: {missing}"
        missing = [m[:60] for m in replies if not appears(m, text)]
        assert not missing, f"{fmt}: assistant messages missing: {missing}"
        missing = [r[0][:60] for r in results if not any(appears(x, text) for x in r)]
        assert not missing, f"{fmt}: tool results missing: {missing}"
    for name, count in calls.items():
        assert md.count(f"**{name}**") >= count, f"md: {name} called {count} times"
        assert page.count(f"<b>{html.escape(name)}</b>") >= count, f"html: {name}"


@pytest.mark.parametrize("path", LOGS, ids=IDS)
def test_nothing_is_left_running_when_the_file_ends(path: Path) -> None:
    t = transcript_of(path)
    running = [
        f"turn {b.number}" if isinstance(b, TurnBlock) else f"{b.name} ({b.status})"
        for b in every_block(t)
        if (isinstance(b, TurnBlock) and b.status == "running")
        or (isinstance(b, ToolCallBlock) and (not b.finished or b.permission == "requested"))
    ]
    assert not running, f"left running: {running}"


@pytest.mark.parametrize("path", LOGS, ids=IDS)
def test_raw_rows_only_for_types_outside_the_issue(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = Counter(b.type for b in every_block(transcript_of(path)) if isinstance(b, RawBlock))
    with capsys.disabled():
        shown = ", ".join(f"{etype} {n}" for etype, n in raw.most_common()) or "none"
        print(f"\n  raw rows of {path.parent.name}: {sum(raw.values())} ({shown})")
    modelled = {etype: n for etype, n in raw.items() if etype in NEVER_RAW}
    assert not modelled, f"types the issue lists or loopdeck models, drawn raw: {modelled}"
    assert sum(raw.values()) <= RAW_LIMIT, f"{sum(raw.values())} raw rows: {dict(raw)}"


@pytest.mark.parametrize("path", LOGS, ids=IDS)
async def test_instant_replay_draws_the_whole_log(path: Path) -> None:
    screen = ReplayScreen(path, speed=0.0)
    async with ViewerApp(screen).run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        assert pilot.app.is_running
        assert screen.position == len(screen.index)
        replayed = screen.timeline.transcript
        folded = transcript_of(path)
        assert [type(b).__name__ for b in replayed.items] == [
            type(b).__name__ for b in folded.items
        ]
        drawn = min(len(replayed.items), screen.timeline.max_mounted)
        assert screen.timeline.mounted_blocks == drawn
        for key in ("g", "right", "right", "G"):
            await pilot.press(key)
        await pilot.pause()
        assert pilot.app.is_running


def test_sessions_copilot_lists_every_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "copilot-home"
    ids = {path: session_id(path) for path in LOGS}
    assert len(set(ids.values())) == len(LOGS)
    for path, sid in ids.items():
        folder = home / "session-state" / sid  # named by its id, as Copilot does
        folder.mkdir(parents=True)
        shutil.copyfile(path, folder / "events.jsonl")
    monkeypatch.setenv("COPILOT_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "400")  # the table's prompt column is not cut short
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert print_sessions(cwd=None, show_all=True, copilot=True) == 0
    table = out.getvalue().splitlines()
    rows = {line.split()[0]: line for line in table[1:] if line.strip()}
    names = {sid[:8]: path.parent.name for path, sid in ids.items()}
    assert set(names) <= set(rows), set(names) - set(rows)
    in_progress = [names[short] for short, line in rows.items() if "in progress" in line]
    assert not in_progress, f"listed as in progress: {in_progress}"
