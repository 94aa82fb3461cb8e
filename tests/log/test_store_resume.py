"""The session log: batched writes, the tolerant reader, resume after a crash."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from agent.events.schema import (
    AssistantMessageData,
    AssistantTurnStartData,
    Event,
    SessionResumeData,
    ToolExecutionCompleteData,
    ToolExecutionStartData,
    ToolRequest,
    UserMessageData,
)
from agent.log.places import loopdeck_home as home_from_env
from agent.log.store import SessionStore, parse_lines, read_events
from agent.session.session import Session
from tests.support.scripting import FakeRecorder, new_session, scripted

GREP = {"name": "grep", "arguments": {"pattern": "x"}}


def store_for(home: Path) -> SessionStore:
    return SessionStore(home)


async def test_persisted_log_holds_no_ephemeral_events_and_is_private(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = store_for(loopdeck_home)
    model = scripted([{"text": "a b c", "tool_calls": [GREP]}, {"text": "done"}])
    session, rec = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("hi")
    await session.close()
    path = store.events_path(session.id)
    lines = path.read_text().splitlines()
    on_disk = [json.loads(line) for line in lines]
    assert all(not e.get("ephemeral") for e in on_disk)
    assert "session.idle" not in {e["type"] for e in on_disk}
    assert "assistant.message_delta" not in {e["type"] for e in on_disk}
    persisted_live = [e for e in rec.events if not e.ephemeral]
    assert [e["id"] for e in on_disk][-len(persisted_live) :] == [e.id for e in persisted_live]
    # parentId chains persisted events only: every parent is on disk.
    ids = {e["id"] for e in on_disk}
    assert all(e["parentId"] is None or e["parentId"] in ids for e in on_disk)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_reader_tolerates_blank_corrupt_unknown_and_torn_lines() -> None:
    good = Event.new(UserMessageData(content="hi"), None).to_json()
    unknown = json.dumps({"type": "session.brand_new", "data": {"x": 1}, "id": "u1"})
    text = f"{good}\n\n{{broken\n{unknown}\n{good[:20]}"
    result = parse_lines(text)
    assert [e.type for e in result.events] == ["user.message", "session.brand_new"]
    assert not result.events[1].known
    assert result.torn_tail == good[:20]
    reasons = [(p.line, p.reason.split(":")[0]) for p in result.problems]
    assert reasons == [(3, "unreadable line"), (5, "torn last line (writer stopped mid-line)")]


def test_empty_file_reads_as_no_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("")
    result = read_events(path)
    assert result.events == [] and result.problems == []


async def test_resume_after_torn_last_line_continues_script_in_same_file(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = store_for(loopdeck_home)
    turns = [
        {"text": "first", "tool_calls": [GREP]},
        {"text": "first answer"},
        {"text": "second answer"},
    ]
    session, _ = await new_session(scripted(turns), tmp_path, store=store)
    await session.send_and_wait("one")
    await session.close()
    path = store.events_path(session.id)
    before = path.read_text()
    # A crash mid-write leaves half a line behind.
    with path.open("a") as fh:
        fh.write('{"type":"assistant.turn_start","data":{"turnId":"9"')

    model = scripted(turns)
    resumed = await Session.resume(store=store, session_id=session.id, model=model)
    rec = FakeRecorder()
    resumed.subscribe(rec)
    outcome = await resumed.send_and_wait("two")
    await resumed.close()

    assert outcome.final_text == "second answer"
    assert model.call_indexes == [2]  # the script continues where it left off
    # The resumed model saw the earlier conversation.
    roles = [m["role"] for m in model.seen_messages[0]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    # Same file; the torn fragment set aside, not lost; the log now reads clean.
    after = read_events(path)
    assert after.problems == []
    assert path.read_text().startswith(before)
    asides = list(path.parent.glob("events.torn-*.jsonl"))
    assert len(asides) == 1 and asides[0].read_text().startswith('{"type":"assistant.turn_start"')
    types = [e.type for e in after.events]
    assert "session.resume" in types and "session.warning" in types
    resume = next(e for e in after.events if e.type == "session.resume")
    assert isinstance(resume.data, SessionResumeData) and resume.data.event_count > 5


async def test_resume_closes_tool_calls_left_open_by_a_crash(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = store_for(loopdeck_home)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = await Session.create(model=scripted([]), cwd=workspace, store=store)
    session.emit(UserMessageData(content="go", agent_mode="autopilot"))
    session.emit(AssistantTurnStartData(turn_id="0"))
    session.emit(
        AssistantMessageData(
            message_id="m",
            content="",
            tool_requests=[ToolRequest(tool_call_id="c1", name="grep", arguments={"pattern": "x"})],
        )
    )
    session.emit(ToolExecutionStartData(tool_call_id="c1", tool_name="grep"))
    await session.close()  # the process "dies" here: no completion, no turn end

    done = {"name": "task_complete", "arguments": {"summary": "carrying on"}}
    model = scripted([{"text": "unused"}, {"text": "", "tool_calls": [done]}])
    resumed = await Session.resume(store=store, session_id=session.id, model=model)
    assert resumed.mode == "autopilot"  # same mode as before the crash
    outcome = await resumed.send_and_wait("continue")
    await resumed.close()
    events = read_events(store.events_path(session.id)).events
    closing = [
        e.data
        for e in events
        if isinstance(e.data, ToolExecutionCompleteData) and e.data.tool_call_id == "c1"
    ]
    assert len(closing) == 1 and not closing[0].success
    assert closing[0].error is not None and closing[0].error.code == "interrupted"
    types = [e.type for e in events]
    assert types.count("assistant.turn_start") == types.count("assistant.turn_end")
    assert outcome.task_complete and outcome.summary == "carrying on"
    assert model.call_indexes == [1]


async def test_listing_and_prefix_resolution(tmp_path: Path, loopdeck_home: Path) -> None:
    store = store_for(loopdeck_home)
    ids = []
    for prompt in ("first task", "second task"):
        session, _ = await new_session(scripted([{"text": "ok"}]), tmp_path, store=store)
        await session.send_and_wait(prompt)
        await session.close()
        ids.append(session.id)
    listed = store.list_sessions()
    assert {s.id for s in listed} == set(ids)
    by_id = {s.id: s for s in listed}
    assert by_id[ids[0]].first_prompt == "first task"
    assert by_id[ids[1]].turns == 1
    assert store.resolve(ids[0][:8]) == ids[0]
    assert store.latest() == ids[1]
    assert home_from_env() == loopdeck_home  # $LOOPDECK_HOME decides where sessions live
