"""Readable rows for what real Copilot CLI logs hold besides the conversation (issue 14).

The system prompt, skills, hooks, MCP servers, permissions, auto-model routing,
compactions, truncations, rewinds, notifications and the usage summary each become
one compact row (agent/transcript/info_rows.py); a `!command` becomes a tool card; reasoning is
a collapsed "thinking" row; Copilot's diffs (``\\ndiff --git``) are drawn as diffs.
Most checks read the real logs in ``tests/fixtures/copilot-real``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from copilot.generated.session_events import SessionEventType, session_event_from_dict
from rich.console import Console, Group
from rich.syntax import Syntax

from agent.events.schema import event_from_dict
from agent.log.store import read_events
from agent.transcript.blocks import InfoRowBlock, RawBlock, ShellBlock, ToolCallBlock, TurnBlock
from agent.transcript.fold import Transcript, fold
from agent.transcript.info_rows import INFO_TYPES
from app.export import export_session, to_html, to_markdown
from app.viewer import ReplayScreen, ViewerApp
from tests.support.paths import FIXTURES
from tests.support.streams import Stream
from tests.support.timeline_app import FakeTimelineApp
from widgets.info_row import InfoRowView, ReasoningView
from widgets.timeline import Timeline
from widgets.tool_card import card_renderable
from widgets.turn_digest import TurnDigest

REAL = FIXTURES / "copilot-real"


def real(name: str) -> Path:
    (path,) = REAL.glob(f"{name}*/events.jsonl")
    return path


def folded(name: str) -> Transcript:
    return fold(read_events(real(name)).events, replay=True)


def rows(t: Transcript, kind: str | None = None) -> list[InfoRowBlock]:
    return [b for b in t.items if isinstance(b, InfoRowBlock) and kind in (None, b.kind)]


def raw_types(t: Transcript) -> list[str]:
    return [b.type for b in t.items if isinstance(b, RawBlock)]


def plain(renderable: Any, width: int = 120) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    out = console.file
    assert isinstance(out, io.StringIO)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def events(*pairs: tuple[str, dict[str, Any]]) -> list[Any]:
    """Envelopes the official parser accepts, in order, as loopdeck events."""
    out = []
    for n, (etype, data) in enumerate(pairs):
        obj = {
            "type": etype,
            "data": data,
            "id": f"00000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-08-05T10:00:{n:02d}.000Z",
            "parentId": None,
        }
        assert session_event_from_dict(obj).type is not SessionEventType.UNKNOWN, etype
        out.append(event_from_dict(obj))
    return out


# --- the rows, over real logs ------------------------------------------------------------


def test_the_system_prompt_is_one_collapsed_row_however_often_copilot_sends_it() -> None:
    t = folded("irrlicht-1-6_checkpoint-rewind")  # three identical system.message lines
    (row,) = rows(t, "system")
    assert row.title == "system prompt · 646 lines, 42 KB (sent 3 times)"
    assert row.body is not None and row.body.startswith("You are the GitHub Copilot CLI")
    assert "system.message" not in raw_types(t)


def test_a_changed_system_prompt_gets_a_row_of_its_own() -> None:
    t = folded("irrlicht-2-12_context-compaction")
    titles = [row.title for row in rows(t, "system")]
    assert titles == ["system prompt · 646 lines, 42 KB", "system prompt · 652 lines, 43 KB"]


def test_a_compaction_shows_tokens_before_and_after_and_keeps_its_summary() -> None:
    t = folded("irrlicht-2-12_context-compaction")
    (row,) = rows(t, "compaction")  # start and complete: one row
    assert row.title == "context compacted: 45 → 339 tokens, 1 message removed"
    assert row.state == "ok" and row.count == 2
    assert row.body is not None and row.body.startswith("<overview>\nUser requested")


def test_session_rows_permissions_auto_model_and_usage() -> None:
    t = folded("irrlicht-1-4_session-resume")
    assert [row.title for row in rows(t, "permissions")][:1] == [
        "permissions: allow all tools on"  # Copilot's own shape, not the schema's `mode`
    ]
    assert rows(t, "auto-model")[0].title == (
        "auto → claude-haiku-4.5 (medium reasoning, confidence 0.63)"
    )
    usage = rows(t, "usage")
    assert usage[0].title == "usage: claude-haiku-4.5 1 request · 12,612 in / 35 out"
    assert usage[1].title == (
        "usage: claude-haiku-4.5 1 request · 12,612 in / 35 out;"
        " gpt-5-mini 1 request · 10,813 in / 88 out"
    )
    assert usage[0].body is not None and "cacheWriteTokens 12,602" in usage[0].body
    assert "premium requests 0.33" in usage[0].body


def test_a_system_notification_reads_as_a_sentence() -> None:
    t = folded("irrlicht-foreground-subagent")
    (row,) = rows(t, "notification")
    assert row.title.startswith(
        'notification (agent completed): Agent "jsonl-explanation-subagent" (task) has failed.'
    )
    assert "<system_notification>" not in row.title


def test_a_command_the_user_ran_is_a_shell_row_with_its_output() -> None:
    t = folded("irrlicht-2-15_shell-escape-command")
    assert "tool.user_requested" not in raw_types(t)
    assert not [b for b in t.items if isinstance(b, ToolCallBlock)]
    (row,) = [b for b in t.items if isinstance(b, ShellBlock)]
    assert (row.tool_name, row.command, row.status) == ("local_shell", "echo hello", "success")
    assert row.output == "hello"


def test_a_json_stream_setup_mcp_skills_tools_and_background_tasks() -> None:
    t = folded("sdkrepo-phase1-task")
    (mcp,) = rows(t, "mcp")  # pending, then connected: one row
    assert (mcp.title, mcp.count) == ("MCP server github-mcp-server: connected", 2)
    (skills,) = rows(t, "skills")
    assert skills.title.startswith("11 skills available: agentic-workflows, java-coding-skill")
    assert skills.body is not None and len(skills.body.splitlines()) == 11
    assert [row.title for row in rows(t, "tools")] == ["tools updated for claude-sonnet-4.6"]
    (background,) = rows(t, "background")  # 62 events, one row
    assert background.title == "background tasks changed ×62"
    listed = {
        "session.mcp_server_status_changed",
        "session.skills_loaded",
        "session.tools_updated",
        "session.background_tasks_changed",
        "session.auto_mode_resolved",
    }
    assert not listed & set(raw_types(t))


def test_hooks_rewinds_truncations_skills_and_servers_from_the_schema() -> None:
    """Types no real log here holds, written to the SDK's schema (the parser checks)."""
    t = fold(
        events(
            ("hook.start", {"hookInvocationId": "h1", "hookType": "preToolUse", "input": {}}),
            (
                "hook.end",
                {
                    "hookInvocationId": "h1",
                    "hookType": "preToolUse",
                    "success": False,
                    "error": {"message": "exit 2"},
                },
            ),
            (
                "session.snapshot_rewind",
                {"eventsRemoved": 14, "upToEventId": "00000000-0000-4000-8000-000000000001"},
            ),
            (
                "session.truncation",
                {
                    "tokenLimit": 128000,
                    "preTruncationTokensInMessages": 130000,
                    "preTruncationMessagesLength": 40,
                    "postTruncationTokensInMessages": 90000,
                    "postTruncationMessagesLength": 25,
                    "tokensRemovedDuringTruncation": 40000,
                    "messagesRemovedDuringTruncation": 15,
                    "performedBy": "BasicTruncator",
                },
            ),
            (
                "skill.invoked",
                {"name": "review", "path": "/s/review/SKILL.md", "content": "# Review\nsteps"},
            ),
            (
                "session.mcp_servers_loaded",
                {"servers": [{"name": "github", "status": "failed", "error": "401"}]},
            ),
        )
    )
    assert [(row.kind, row.title, row.state) for row in rows(t)] == [
        ("hook", "hook preToolUse failed: exit 2", "failed"),
        ("rewind", "rewound to an earlier point: 14 events removed", None),
        (
            "truncation",
            "context truncated by BasicTruncator: 130,000 → 90,000 tokens,"
            " 15 messages removed, limit 128,000",
            None,
        ),
        ("skill", "skill review loaded", None),
        ("mcp", "1 MCP server: github (failed)", None),
    ]
    assert rows(t)[-1].body == "github: 401"
    assert not raw_types(t)


# --- exports ---------------------------------------------------------------------------


def test_exports_collapse_the_system_prompt_and_cut_it() -> None:
    path = real("irrlicht-1-4_session-resume")  # four 42 KB prompts
    prompt = rows(fold(read_events(path).events), "system")[0].body
    assert prompt is not None
    tail = prompt.strip().splitlines()[-1]
    for fmt in ("md", "html"):
        page = export_session(path, fmt)
        assert "⚙ system prompt · 654 lines, 42 KB" in page
        assert tail not in page, fmt  # cut: the prompt's last line is not there
        assert "more lines" in page
    html, md = export_session(path, "html"), export_session(path, "md")
    assert '<details class="info"><summary>⚙ system prompt · 654 lines, 42 KB' in html
    assert len(html) < 3 * len(md), (len(html), len(md))


def test_html_raw_rows_are_collapsed_and_cut() -> None:
    t = fold(events(("assistant.intent", {"intent": "Exploring the code"})))
    t.apply(event_from_dict({"type": "future.thing", "data": {"blob": "x" * 5000}}))
    page = to_html(t)
    assert page.count('<details class="raw">') == 2
    assert "x" * 300 not in page and "x" * 150 in page
    assert "<code>future.thing</code></summary>" in page


# --- reasoning -----------------------------------------------------------------------


def test_reasoning_text_on_a_message_is_the_turn_reasoning() -> None:
    t = folded("lantern-049410b4")  # reasoningText, no assistant.reasoning event
    turns = [b for b in t.items if isinstance(b, TurnBlock)]
    assert turns[0].reasoning.startswith("Okay, let me try to figure out how to solve this")
    md, html = to_markdown(t), to_html(t)
    assert "<details><summary>∴ thinking</summary>" in md
    assert "> Okay, let me try to figure out how to solve this" in md
    assert '<details class="thinking"><summary>∴ thinking</summary>Okay, let me try' in html


def test_streamed_reasoning_is_not_repeated_by_the_message() -> None:
    t = folded("sdkrepo-phase1-task")  # assistant.reasoning and the same reasoningText
    first = next(b for b in t.items if isinstance(b, TurnBlock) and b.reasoning)
    assert first.reasoning == (
        "The user wants me to invoke the `shepherd-task-from-assignment-to-ready` skill."
        " Let me do that."
    )


async def test_a_history_turn_shows_thinking_collapsed_and_opens_it() -> None:
    app = FakeTimelineApp()
    async with app.run_test(size=(100, 40)) as pilot:
        timeline = app.query_one(Timeline)
        timeline.load(read_events(real("lantern-ask")).events)
        await pilot.pause()
        (digest,) = timeline.query(TurnDigest)
        reasoning = digest.block.reasoning.strip().splitlines()[0]
        closed = plain(digest.render())
        assert "∴ thinking" in closed and reasoning[:40] not in closed
        digest.focus()
        await pilot.press("enter")
        assert reasoning[:40] in plain(digest.render())


async def test_a_live_turn_shows_its_reasoning_as_it_streams() -> None:
    stream = Stream()
    stream.start()
    stream.user("hi")
    app = FakeTimelineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        timeline = app.query_one(Timeline)
        for event in stream.events:
            timeline.apply(event)
        for event in events(
            ("assistant.turn_start", {"turnId": "0"}),
            ("assistant.reasoning_delta", {"reasoningId": "r", "deltaContent": "Let me look\n"}),
            ("assistant.reasoning_delta", {"reasoningId": "r", "deltaContent": "at the file."}),
        ):
            timeline.apply(event)
        await pilot.pause()
        (view,) = timeline.query(ReasoningView)
        assert "2 lines" in plain(view.render()) and "at the file" not in plain(view.render())
        await pilot.click(ReasoningView)
        assert "Let me look\n  at the file." in plain(view.render())
        # The next turn makes this one history: its reasoning stays open there.
        for event in events(
            ("assistant.turn_end", {"turnId": "0"}),
            ("assistant.turn_start", {"turnId": "1"}),
        ):
            timeline.apply(event)
        await pilot.pause()
        (digest,) = timeline.query(TurnDigest)
        assert "Let me look\n  at the file." in plain(digest.render())


async def test_an_info_row_opens_on_enter() -> None:
    app = FakeTimelineApp()
    async with app.run_test(size=(100, 40)) as pilot:
        timeline = app.query_one(Timeline)
        timeline.load(read_events(real("irrlicht-2-12_context-compaction")).events)
        await pilot.pause()
        compaction = next(v for v in timeline.query(InfoRowView) if v.block.kind == "compaction")
        assert "<overview>" not in plain(compaction.render())
        compaction.focus()
        await pilot.press("enter")
        assert "<overview>" in plain(compaction.render())


# --- diffs ----------------------------------------------------------------------------

# What Copilot's edit and create tools return: the diff after a blank line.
COPILOT_DIFF = (
    "\ndiff --git a/src/orders.py b/src/orders.py\nindex 0000000..0000000 100644\n"
    "--- a/src/orders.py\n+++ b/src/orders.py\n@@ -1,2 +1,2 @@\n"
    "-total = 0\n+total = sum(prices)\n return total\n"
)


def diff_session() -> Transcript:
    return fold(
        events(
            ("assistant.turn_start", {"turnId": "0"}),
            (
                "assistant.message",
                {
                    "messageId": "m",
                    "content": "",
                    "toolRequests": [
                        {"toolCallId": "c", "name": "edit", "arguments": {"path": "src/orders.py"}}
                    ],
                },
            ),
            ("tool.execution_start", {"toolCallId": "c", "toolName": "edit"}),
            (
                "tool.execution_complete",
                {
                    "toolCallId": "c",
                    "success": True,
                    "result": {
                        "content": "File src/orders.py updated.",
                        "detailedContent": COPILOT_DIFF,
                    },
                },
            ),
            ("assistant.turn_end", {"turnId": "0"}),
        )
    )


def test_a_copilot_diff_is_highlighted_in_the_opened_card() -> None:
    (turn,) = [b for b in diff_session().items if isinstance(b, TurnBlock)]
    card = card_renderable(turn.tools[0], expanded=True)
    assert isinstance(card, Group)
    (syntax,) = [part for part in card.renderables if isinstance(part, Syntax)]
    assert syntax.lexer is not None and syntax.lexer.name == "Diff"
    assert syntax.code.startswith("diff --git a/src/orders.py")


def test_a_copilot_diff_is_a_diff_in_both_exports() -> None:
    t = diff_session()
    md = to_markdown(t)
    assert "  ```diff\n  diff --git a/src/orders.py b/src/orders.py\n" in md
    page = to_html(t)
    assert '<pre class="diff">diff --git a/src/orders.py' in page
    assert '<span class="add">+total = sum(prices)</span>' in page
    json.dumps(page)  # plain text: nothing odd left in it


# --- how it looks --------------------------------------------------------------------


def test_snapshot_of_a_real_log_with_its_compaction_opened(snap_compare: Any) -> None:
    """A real Copilot log replayed: permissions, auto-model, system prompts, the
    compaction (opened: its summary), the usage summary, each one muted row."""

    async def open_the_compaction(pilot: Any) -> None:
        await pilot.pause()
        rows = screen.timeline.query(InfoRowView)
        row = next(v for v in rows if v.block.kind == "compaction")
        row.action_toggle_output()
        await pilot.pause()

    screen = ReplayScreen(real("irrlicht-2-12_context-compaction"), speed=0.0)
    assert snap_compare(ViewerApp(screen), terminal_size=(100, 60), run_before=open_the_compaction)


def test_odd_shapes_make_plainer_rows_never_a_crash() -> None:
    """Damaged or future data: every field of the wrong type, or missing."""
    odd: list[Any] = [5, "x", None, [1], {"a": 1}, True]
    t = Transcript()
    for etype in sorted(INFO_TYPES):
        for value in odd:
            data = {key: value for key in ODD_KEYS}
            t.apply(event_from_dict({"type": etype, "data": data}))
        t.apply(event_from_dict({"type": etype, "data": {}}))
    assert all(isinstance(b, InfoRowBlock) for b in t.items)
    assert to_html(t) and to_markdown(t)


ODD_KEYS = [
    "content",
    "role",
    "name",
    "skills",
    "servers",
    "serverName",
    "status",
    "error",
    "hookInvocationId",
    "hookType",
    "success",
    "input",
    "output",
    "model",
    "mode",
    "previousMode",
    "allowAllPermissions",
    "currentTokens",
    "tokenLimit",
    "trigger",
    "preCompactionTokens",
    "postCompactionTokens",
    "messagesRemoved",
    "summaryContent",
    "eventsRemoved",
    "upToEventId",
    "kind",
    "chosenModel",
    "confidence",
    "fallback",
    "reasoningBucket",
    "performedBy",
]
