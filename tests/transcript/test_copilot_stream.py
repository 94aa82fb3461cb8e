"""`copilot -p … --output-format json` streams: the stdout of a real run, folded.

The fixture (tests/fixtures/copilot-real/sdkrepo-*) is what Copilot CLI printed: the
session's events with the ephemeral ones a session-state file never holds (tool
calls whose arguments stream in, model calls, reply progress, ``assistant.idle``)
and a last ``result`` line that is not a session event. Every expected figure below
is read from the file itself.
"""

from __future__ import annotations

import asyncio
import collections
import io
import json
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.app import App
from textual.pilot import Pilot

from agent.events.run_result import run_result_of
from agent.events.schema import Event, UnknownData, event_from_dict, event_from_json
from agent.log.session_row import SessionSummary
from agent.log.store import SessionStore, read_events, with_unreadable_rows
from agent.log.summary import summarize_events
from agent.transcript.blocks import InfoRowBlock, NoticeBlock, RawBlock, TurnBlock, UserBlock
from agent.transcript.fold import Transcript, fold
from agent.transcript.partial_json import JsonPrefix, parse_prefix
from agent.transcript.stream_fold import STREAM_DATA
from app.export import export_session
from app.sessions_table import print_sessions
from app.viewer import ReplayScreen, ViewerApp
from tests.support.paths import FIXTURES
from widgets.tool_card import ToolCard, card_renderable
from widgets.turn_view import TurnView

session_events = pytest.importorskip("copilot.generated.session_events")

STREAM = FIXTURES / "copilot-real" / "sdkrepo-phase1-task-20260730-0156-2144" / "events.jsonl"
STREAMING_TYPES = {
    "assistant.tool_call_delta",
    "assistant.streaming_delta",
    "assistant.idle",
    "model.call_start",
    "model.call_finished",
    "model.call_failure",
    "model.call_final_result",
    "result",
}
SnapCompare = Callable[..., bool]


def wires() -> list[dict[str, Any]]:
    return [json.loads(line) for line in STREAM.read_text("utf-8").splitlines() if line.strip()]


def events() -> list[Event]:
    return with_unreadable_rows(read_events(STREAM))


def folded() -> Transcript:
    return fold(events(), replay=True)


# --- the fold ----------------------------------------------------------------------------


def test_the_stream_folds_into_its_turns_not_into_raw_rows() -> None:
    t = folded()
    raw = collections.Counter(b.type for b in t.items if isinstance(b, RawBlock))
    print(f"\nraw rows: {sum(raw.values())} {dict(raw)}")
    assert not raw.keys() & STREAMING_TYPES
    lines = wires()
    kinds = collections.Counter(w["type"] for w in lines)
    assert t.turns == kinds["assistant.turn_start"]
    # A skill's instructions (source "skill-<name>") are a row, not the user's prompt.
    skill_messages = [
        w
        for w in lines
        if w["type"] == "user.message" and w["data"].get("source", "").startswith("skill-")
    ]
    assert len(skill_messages) == 2
    assert sum(isinstance(b, UserBlock) for b in t.items) == kinds["user.message"] - 2
    skill_rows = [b for b in t.items if isinstance(b, InfoRowBlock) and b.kind == "skill"]
    assert [r.title for r in skill_rows] == [
        "skill shepherd-task-from-assignment-to-ready loaded",
        "skill shepherd-task-approve-workflows-and-wait-for-completion loaded",
    ]
    assert all(r.body and r.body.startswith("<skill-context name=") for r in skill_rows)
    assert t.tool_calls == kinds["tool.execution_start"]
    turns = [b for b in t.items if isinstance(b, TurnBlock)]
    assert all(turn.status == "done" for turn in turns)
    assert all(tool.status == "success" for turn in turns for tool in turn.tools)
    # Each tool call is the one its assistant.message announced, arguments whole.
    requests = {
        r["toolCallId"]: r
        for w in lines
        if w["type"] == "assistant.message"
        for r in w["data"].get("toolRequests") or []
    }
    for turn in turns:
        for tool in turn.tools:
            assert tool.name == requests[tool.tool_call_id]["name"]
            assert tool.arguments == requests[tool.tool_call_id]["arguments"]
    assert not t.busy


def test_tool_arguments_fill_the_pending_card_as_they_stream() -> None:
    lines = wires()
    deltas = [w for w in lines if w["type"] == "assistant.tool_call_delta"]
    call_id = collections.Counter(w["data"]["toolCallId"] for w in deltas).most_common(1)[0][0]
    final = next(
        r["arguments"]
        for w in lines
        if w["type"] == "assistant.message"
        for r in w["data"].get("toolRequests") or []
        if r["toolCallId"] == call_id
    )
    t = Transcript()
    seen: list[str] = []
    for wire in lines:
        if (
            wire["type"] == "assistant.message"
            and wire["data"]["toolRequests"][:1]
            and (wire["data"]["toolRequests"][0]["toolCallId"] == call_id)
        ):
            break
        changes = t.apply(event_from_dict(wire))
        if wire["type"] == "assistant.tool_call_delta" and wire["data"]["toolCallId"] == call_id:
            tool = t.get_tool(call_id)
            assert tool is not None and tool.status == "pending"
            assert tool.name == wire["data"]["toolName"]
            if isinstance(tool.arguments, dict) and "command" in tool.arguments:
                command = tool.arguments["command"]
                # What the card shows is always the start of what the model meant.
                assert final["command"].startswith(command)
                if not seen or command != seen[-1]:
                    assert any(c.item is tool for c in changes)
                    seen.append(command)
    # It grew as it streamed, up to the whole command before the message came.
    assert len(seen) > 10
    assert seen[-1] == final["command"]
    tool = t.get_tool(call_id)
    assert tool is not None and t.current_turn is not None and tool in t.current_turn.tools


def test_the_model_call_starts_the_turns_clock_and_names_its_model() -> None:
    lines = wires()
    starts = [i for i, w in enumerate(lines) if w["type"] == "model.call_start"]
    # The second turn thinks (reasoning deltas) before its text begins (message_start).
    call = starts[1]
    first_token = next(
        w for w in lines[call:] if w["type"].endswith("_delta") and "deltaContent" in w["data"]
    )
    text_starts = next(w for w in lines[call:] if w["type"] == "assistant.message_start")
    assert first_token["timestamp"] < text_starts["timestamp"]
    t = Transcript()
    for wire in lines[: call + 1]:
        t.apply(event_from_dict(wire))
    turn = t.current_turn
    assert turn is not None and turn.model == lines[call]["data"]["model"]
    for wire in lines[call + 1 :]:
        t.apply(event_from_dict(wire))
        if wire["type"] == "assistant.turn_end":
            break
    sent = datetime.fromisoformat(lines[call]["timestamp"])
    ttft = (datetime.fromisoformat(first_token["timestamp"]) - sent).total_seconds()
    assert turn.ttft_seconds == pytest.approx(ttft)


def test_the_result_line_ends_the_run_with_its_figures() -> None:
    lines = wires()
    result = lines[-1]
    assert result["type"] == "result" and "data" not in result
    t = folded()
    last = t.items[-1]
    assert isinstance(last, NoticeBlock) and last.subtype == "result"
    usage = result["usage"]
    assert f"exit {result['exitCode']}" in last.message
    assert f"{usage['premiumRequests']} premium request" in last.message
    assert f"{usage['totalApiDurationMs'] / 1000:.1f}s in model calls" in last.message
    run = t.stream.result
    assert run is not None and run.usage is not None
    assert run.usage.session_duration_ms == usage["sessionDurationMs"]
    assert t.session_id == result["sessionId"]


def test_session_totals_count_every_turns_output_tokens() -> None:
    """The run's usage checkpoint has no per-model usage: it must not wipe the last
    turn's tokens (the messages' counts are all the file has)."""
    lines = wires()
    out = sum(w["data"].get("outputTokens", 0) for w in lines if w["type"] == "assistant.message")
    t = folded()
    turns = [b for b in t.items if isinstance(b, TurnBlock)]
    assert t.output_tokens == out
    assert [turn.output_tokens for turn in turns] == [
        w["data"]["outputTokens"] for w in lines if w["type"] == "assistant.message"
    ]


def test_a_run_cut_short_is_closed_by_its_result_line() -> None:
    """The process ended while a tool ran: the card and the turn are interrupted."""
    lines = wires()
    cut = next(i for i, w in enumerate(lines) if w["type"] == "tool.execution_partial_result")
    failed = {**lines[-1], "exitCode": 1}
    t = fold([event_from_dict(w) for w in [*lines[:cut], failed]], replay=True)
    turn = next(b for b in reversed(t.items) if isinstance(b, TurnBlock))
    assert turn.status == "aborted"
    assert [tool.status for tool in turn.tools] == ["interrupted"]
    assert not t.busy
    summary = summarize_events([*lines[:cut], failed], SessionSummary(id="r", path=STREAM))
    assert summary.outcome == "error"


def _envelope(etype: str, data: dict[str, Any], stamp: str) -> Event:
    return event_from_dict(
        {"type": etype, "data": data, "id": "e", "timestamp": stamp, "ephemeral": True}
    )


def test_a_second_model_call_in_a_turn_is_a_retry_with_the_failures_reason() -> None:
    t = Transcript()
    steps = [
        ("assistant.turn_start", {"turnId": "0"}),
        ("model.call_start", {"turnId": "0", "model": "gpt-5"}),
        ("assistant.message_start", {"messageId": "m1"}),
        ("assistant.message_delta", {"messageId": "m1", "deltaContent": "Half a rep"}),
        (
            "assistant.tool_call_delta",
            {"toolCallId": "c1", "toolName": "bash", "inputDelta": '{"command": "ls'},
        ),
        ("model.call_failure", {"source": "top_level", "statusCode": 503, "errorMessage": "down"}),
        ("model.call_start", {"turnId": "0", "model": "gpt-5"}),
        ("assistant.message_start", {"messageId": "m2"}),
        ("assistant.message_delta", {"messageId": "m2", "deltaContent": "Whole reply."}),
        ("assistant.message", {"messageId": "m2", "content": "Whole reply.", "turnId": "0"}),
        ("assistant.turn_end", {"turnId": "0"}),
    ]
    cut_while_retrying = ""
    for n, (etype, data) in enumerate(steps):
        t.apply(_envelope(etype, data, f"2026-01-01T00:00:{n:02d}.000Z"))
        if n == 6:  # the retry went out: the failed call's text is shown cut
            assert t.current_turn is not None
            cut_while_retrying = t.current_turn.cut_text
    (turn,) = [b for b in t.items if isinstance(b, TurnBlock)]
    assert cut_while_retrying == "Half a rep"
    assert turn.retries == 1 and turn.retry_reason == "HTTP 503: down"
    assert turn.text == "Whole reply."
    # The call the failed attempt was writing never ran: its card does not wait forever.
    assert [(tool.name, tool.status) for tool in turn.tools] == [("bash", "interrupted")]
    t.finish_replay()
    assert not t.busy  # nothing left open
    assert turn.model == "gpt-5" and turn.status == "done"


def test_a_custom_tools_free_text_input_streams_as_text() -> None:
    """``apply_patch`` (``type: custom``) takes a patch, not JSON arguments."""
    t = Transcript()
    t.apply(_envelope("assistant.turn_start", {"turnId": "0"}, "2026-01-01T00:00:00.000Z"))
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
    for n, start in enumerate(range(0, len(patch), 7)):
        data = {
            "toolCallId": "p1",
            "toolName": "apply_patch",
            "toolType": "custom",
            "inputDelta": patch[start : start + 7],
        }
        t.apply(_envelope("assistant.tool_call_delta", data, f"2026-01-01T00:00:{n + 1:02d}.000Z"))
    tool = t.get_tool("p1")
    assert tool is not None and tool.name == "apply_patch" and tool.status == "pending"
    assert isinstance(tool.arguments, str) and patch.startswith(tool.arguments)
    assert len(tool.arguments) >= len(patch) - 32


def test_assistant_idle_ends_the_loop_and_an_aborted_one_closes_the_turn() -> None:
    t = Transcript()
    t.apply(_envelope("assistant.turn_start", {"turnId": "0"}, "2026-01-01T00:00:00.000Z"))
    assert t.busy
    t.apply(_envelope("assistant.idle", {"aborted": True}, "2026-01-01T00:00:01.000Z"))
    (turn,) = [b for b in t.items if isinstance(b, TurnBlock)]
    assert not t.busy and t.aborted and turn.status == "aborted"


def test_stream_events_read_as_loopdeck_models_and_as_the_sdk_reads_them() -> None:
    """Each streaming line fits loopdeck's model of its type (none is kept unknown),
    and its data reads back as the official parser reads the line."""
    seen: set[str] = set()
    for wire in wires():
        event = event_from_dict(wire)
        if wire["type"] == "result":
            assert isinstance(event.data, UnknownData)
            assert event.data.raw == {k: wire[k] for k in ("sessionId", "exitCode", "usage")}
            assert run_result_of(event) is not None
            continue
        if not isinstance(event.data, STREAM_DATA):
            continue
        seen.add(wire["type"])
        official = session_events.session_event_from_dict(json.loads(json.dumps(event.wire())))
        assert official.type.value == wire["type"]
        assert event.wire()["data"] == wire["data"]
    assert seen == {"assistant.tool_call_delta", "model.call_start", "assistant.idle"}


@pytest.mark.parametrize("odd", ["Infinity", "NaN", "-1e400"])
def test_a_result_line_with_odd_numbers_still_ends_the_run(odd: str) -> None:
    line = (
        '{"type": "result", "timestamp": "2026-01-01T00:00:00.000Z", "exitCode": 0,'
        f' "usage": {{"sessionDurationMs": {odd}, "totalApiDurationMs": {odd}}}}}'
    )
    t = fold([event_from_json(line)], replay=True)
    (row,) = t.items
    assert isinstance(row, NoticeBlock) and row.message.startswith("run ended (exit 0)")


def test_a_line_without_data_keeps_its_fields() -> None:
    event = event_from_json('{"type": "odd", "timestamp": "t", "exitCode": 2, "note": "x"}')
    assert isinstance(event.data, UnknownData)
    assert event.data.raw == {"exitCode": 2, "note": "x"}


# --- reading JSON as it is written ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("", None),
        ("{", {}),
        ('{"skill": "s', {"skill": "s"}),
        ('{"skill"', {}),
        ('{"a": 1, "b": tr', {"a": 1}),
        ('{"a": "x\\u00', {"a": "x"}),
        ('{"a": "x\\', {"a": "x"}),
        ('{"a": "x\\\\', {"a": "x\\"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": {"b": 1}, ', {"a": {"b": 1}}),
        ('["a", "b', ["a", "b"]),
    ],
)
def test_a_json_prefix_reads_as_what_it_has_written(text: str, value: Any) -> None:
    assert parse_prefix(text) == value


def test_every_prefix_of_the_streamed_arguments_reads_and_ends_whole() -> None:
    """Fed piece by piece or read at once, each prefix gives the same value; the
    whole text gives the arguments themselves."""
    pieces: dict[str, list[str]] = collections.defaultdict(list)
    for wire in wires():
        if wire["type"] == "assistant.tool_call_delta":
            pieces[wire["data"]["toolCallId"]].append(wire["data"]["inputDelta"])
    for chunks in pieces.values():
        stream = JsonPrefix()
        for chunk in chunks:
            stream.feed(chunk)
            assert stream.value() == parse_prefix(stream.text)
        whole = "".join(chunks)
        assert stream.value() == json.loads(whole)
        for end in range(len(whole)):
            value = parse_prefix(whole[:end])
            assert value is None or isinstance(value, dict)


# --- readers: sessions --copilot, export, replay ----------------------------------------


def test_sessions_copilot_lists_a_saved_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "copilot"
    folder = SessionStore(home).session_dir("17b7a2f5-bf46-4ba8-b9a0-6f990aa14e48")
    folder.mkdir(parents=True)
    shutil.copy(STREAM, folder / "events.jsonl")
    monkeypatch.setenv("COPILOT_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TZ", "UTC")
    assert print_sessions(cwd=None, show_all=True, copilot=True) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("17b7a2f5")]
    cells = row.split()
    assert cells[1:3] == ["2026-07-30", "01:56"]  # the first event's time (no session.start)
    assert "completed" in cells and "2.9k" in cells
    summary = SessionStore(home).summary("17b7a2f5-bf46-4ba8-b9a0-6f990aa14e48")
    assert summary.model == "claude-sonnet-4.6" and summary.turns == 8


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_export_shows_the_conversation_and_the_runs_figures(fmt: str) -> None:
    text = export_session(STREAM, fmt)
    for wire in wires():
        if wire["type"] == "assistant.message" and wire["data"]["content"].strip():
            first = wire["data"]["content"].strip().splitlines()[0]
            assert first.split("**")[-1][:20].strip() in text
        for kind in STREAMING_TYPES - {"result"}:
            assert kind not in text
    assert "Premium requests" in text and "exit 0" in text


def _animating(app: App[Any]) -> bool:
    spinning = any(card.is_spinning for card in app.screen.query(ToolCard))
    streaming = any(
        turn._flush_timer is not None or turn._pending or turn._stream is not None
        for turn in app.screen.query(TurnView)
    )
    return spinning or streaming


async def _settle(pilot: Pilot[Any]) -> None:
    await pilot.pause()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while _animating(pilot.app):
        assert loop.time() < deadline, "the timeline kept animating"
        await pilot.pause(0.02)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_replay_of_a_p_json_stream(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream replayed instantly, at its end: turns, cards, the run's last row."""
    monkeypatch.setenv("HOME", str(tmp_path))
    screen = ReplayScreen(STREAM, speed=0.0)
    assert snap_compare(ViewerApp(screen), terminal_size=(120, 40), run_before=_settle)
    t = screen.timeline.transcript
    assert screen.position == len(screen.index)
    assert not [b for b in t.items if isinstance(b, RawBlock) and b.type in STREAMING_TYPES]
    assert isinstance(t.items[-1], NoticeBlock) and t.items[-1].subtype == "result"


def test_replay_shows_a_tool_call_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped mid-stream, the running turn holds a pending card with the start of
    the command the model is writing."""
    monkeypatch.setenv("HOME", str(tmp_path))
    lines = wires()
    deltas = [i for i, w in enumerate(lines) if w["type"] == "assistant.tool_call_delta"]
    call_id = lines[deltas[len(deltas) // 3]]["data"]["toolCallId"]
    own = [i for i in deltas if lines[i]["data"]["toolCallId"] == call_id]
    stop = own[len(own) // 2] + 1
    shown: list[str] = []

    async def run() -> None:
        screen = ReplayScreen(STREAM, speed=0.0)
        app = ViewerApp(screen)
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(pilot)
            screen.jump_to(stop)
            # The turn is still streaming there: wait for its card, not for quiet.
            deadline = asyncio.get_running_loop().time() + 10
            while not (
                cards := [c for c in screen.query(ToolCard) if c.block.tool_call_id == call_id]
            ):
                assert asyncio.get_running_loop().time() < deadline, "no card was mounted"
                await pilot.pause()
            assert len(cards) == 1
            console = Console(width=200, record=True, file=io.StringIO())
            for card in cards:
                assert card.block.status == "pending"
                console.print(card_renderable(card.block, expanded=False))
            shown.append(console.export_text())

    asyncio.run(run())
    streamed = "".join(lines[i]["data"]["inputDelta"] for i in own if i < stop)
    command = parse_prefix(streamed)["command"]
    assert len(command) > 10
    assert command.split("\n")[0].strip()[:40] in shown[0]


def test_loopdeck_export_takes_the_saved_stdout_by_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`copilot -p … --output-format json > run.jsonl`, then `loopdeck export run.jsonl`."""
    from app.cli import main

    saved = tmp_path / "run.jsonl"
    shutil.copy(STREAM, saved)
    assert main(["export", str(saved)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# Session {wires()[-1]['sessionId']}")
    assert out.rstrip().endswith("premium request*")
    assert "tool_call_delta" not in out
