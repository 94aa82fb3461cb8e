"""Every event loopdeck emits parses with the official Copilot SDK parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import (
    DATA_TYPES,
    ElicitationCompletedData,
    Event,
    McpServerSummary,
    PermissionCompletedData,
    PermissionRequestedData,
    SessionCompactionCompleteData,
    SessionCompactionStartData,
    SessionInfoData,
    SessionMcpServersLoadedData,
    SessionMcpServerStatusChangedData,
    SessionShutdownData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
    event_from_dict,
)
from agent.log.store import SessionStore, read_events
from agent.session.session import Session
from tests.support.scripting import new_session, scripted

session_events = pytest.importorskip("copilot.generated.session_events")


def official(obj: dict[str, Any]) -> Any:
    return session_events.session_event_from_dict(obj)


def assert_parses_as_itself(wire: dict[str, Any]) -> None:
    parsed = official(json.loads(json.dumps(wire)))
    assert parsed.type != session_events.SessionEventType.UNKNOWN, wire["type"]
    assert parsed.type.value == wire["type"]
    assert str(parsed.id) == wire["id"]


async def realistic_session(tmp_path: Path, store: SessionStore) -> tuple[list[Event], str]:
    """An autopilot run with tools, a bad call, a retry, a nudge, completion; then
    an error, an abort, mode and model changes, and a resume."""
    turns = [
        {
            "text": "Looking.",
            "reasoning": "The user wants main.",
            "tool_calls": [{"name": "grep", "arguments": {"pattern": "def"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5, "cost": 0.001},
        },
        {"text": "", "tool_calls": [{"name": "view", "arguments": "{oops"}]},
        {"error": {"type": "rate_limit", "message": "slow down"}},
        {"text": "Planning only."},
        {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"summary": "Done."}}]},
        {"error": {"type": "auth", "message": "bad key"}},
        {"text": "slow " * 50, "delay_ms": 5000},
    ]
    model = scripted(turns)
    session, rec = await new_session(model, tmp_path, mode="autopilot", store=store)
    await session.send_and_wait("find main")
    session.set_mode("interactive")
    await session.send_and_wait("again")
    future = session.send("slow one")
    while "assistant.message_delta" not in rec.types()[-3:]:
        await __import__("asyncio").sleep(0.01)
    session.abort()
    await future
    session.set_model(scripted(turns, label="other"))
    await session.close()
    resumed = await Session.resume(store=store, session_id=session.id, model=scripted(turns))
    resumed.subscribe(rec)
    # Used, so its session.resume is written (opening alone writes nothing).
    await resumed.send_and_wait("and after the resume")
    await resumed.close()
    return rec.events, session.id


async def test_every_emitted_event_parses_with_the_official_sdk(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    store = SessionStore(loopdeck_home)
    events, session_id = await realistic_session(tmp_path, store)
    on_disk = [json.loads(line) for line in store.events_path(session_id).read_text().splitlines()]
    emitted = {e.type for e in events} | {e["type"] for e in on_disk}
    expected = {
        "session.start",
        "user.message",
        "assistant.turn_start",
        "assistant.message_delta",
        "assistant.reasoning",
        "assistant.message",
        "assistant.usage",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_end",
        "assistant.turn_retry",
        "session.idle",
        "session.task_complete",
        "session.error",
        "abort",
        "session.mode_changed",
        "session.model_change",
        "session.resume",
    }
    assert expected <= emitted, expected - emitted
    for event in events:
        assert_parses_as_itself(event.wire())
    # And every line on disk, read back as the file holds it.
    for wire in on_disk:
        assert_parses_as_itself(wire)
    assert read_events(store.events_path(session_id)).problems == []


@pytest.mark.parametrize(
    "data",
    [
        ToolExecutionPartialResultData(tool_call_id="c", partial_output="line"),
        SessionInfoData(info_type="notice", message="hello"),
        SessionCompactionStartData(current_tokens=10, token_limit=100),
        SessionCompactionCompleteData(success=True, messages_removed=3),
        SessionShutdownData(session_start_time=1700000000000),
        PermissionRequestedData(
            request_id="r1",
            permission_request={
                "kind": "shell",
                "fullCommandText": "ls",
                "intention": "list files",
                "commands": [{"identifier": "ls", "readOnly": True}],
                "possiblePaths": [],
                "possibleUrls": [],
                "hasWriteFileRedirection": False,
                "canOfferSessionApproval": True,
            },
        ),
        PermissionCompletedData(request_id="r1", result={"kind": "approved"}),
        ElicitationCompletedData(request_id="q1", action="cancel"),
        SessionMcpServersLoadedData(
            servers=[
                McpServerSummary(name="time", status="pending", source="user", transport="stdio"),
                McpServerSummary(name="web", status="failed", transport="http", error="refused"),
            ]
        ),
        SessionMcpServerStatusChangedData(server_name="time", status="connected"),
        ToolExecutionStartData(
            tool_call_id="c1",
            tool_name="time-get_current_time",
            arguments={"timezone": "UTC"},
            mcp_server_name="time",
            mcp_tool_name="get_current_time",
        ),
        PermissionRequestedData(
            request_id="r2",
            permission_request={
                "kind": "mcp",
                "toolCallId": "c1",
                "serverName": "time",
                "toolName": "get_current_time",
                "toolTitle": "time-get_current_time",
                "args": {"timezone": "UTC"},
                "readOnly": False,
            },
        ),
        PermissionCompletedData(
            request_id="r2",
            result={
                "kind": "approved-for-session",
                "approval": {"kind": "mcp", "serverName": "time", "toolName": "get_current_time"},
            },
        ),
    ],
)
def test_types_not_reached_by_the_scripted_session_conform_too(data: Any) -> None:
    assert_parses_as_itself(Event.new(data, None).wire())


def test_every_registered_type_is_known_to_the_sdk() -> None:
    known = {t.value for t in session_events.SessionEventType}
    assert set(DATA_TYPES) <= known


def test_round_trip_keeps_unknown_fields_of_copilot_events() -> None:
    obj = {
        "type": "assistant.message",
        "data": {"messageId": "m", "content": "hi", "phase": "final", "model": "gpt"},
        "id": "0b0c5a9e-3c58-4a52-9d0e-2d1f0f1b7a11",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "parentId": None,
    }
    event = event_from_dict(obj)
    assert event.known
    assert event.wire()["data"]["phase"] == "final"


async def test_the_permission_level_question_and_answer_conform(tmp_path: Path) -> None:
    """Asked once before autopilot: both events, as written to disk, parse officially."""
    store = SessionStore(tmp_path / "home")
    session, _ = await new_session(scripted([{"text": "ok"}]), tmp_path, store=store)
    choice = session.permission_level
    choice.answer(choice.ask(), None)  # Esc
    choice.answer(choice.ask(), "edits")
    await session.send_and_wait("hi")  # a session without a prompt is not kept
    await session.close()
    lines = store.events_path(session.id).read_text("utf-8").splitlines()
    wires = [json.loads(line) for line in lines]
    types = [w["type"] for w in wires]
    assert types.count("elicitation.requested") == 2 and types.count("elicitation.completed") == 2
    for wire in wires:
        assert_parses_as_itself(wire)


def test_event_new_builds_what_model_construct_would() -> None:
    # Event.new sets the model's internals itself (model_construct was the hot path's
    # largest cost): a field added to Event must be added there too.
    from agent.events.schema import AssistantMessageDeltaData, AssistantTurnStartData

    for data, parent in (
        (AssistantTurnStartData(turn_id="0", model="m"), "parent"),
        (AssistantMessageDeltaData(message_id="m1", delta_content="hi"), None),
    ):
        made = Event.new(data, parent)
        constructed = Event.model_construct(
            type=data.TYPE,
            data=data,
            id=made.id,
            timestamp=made.timestamp,
            parent_id=parent,
            ephemeral=data.EPHEMERAL,
        )
        assert list(made.__dict__.items()) == list(constructed.__dict__.items())
        assert made.model_fields_set == constructed.model_fields_set
        assert made.__pydantic_extra__ == constructed.__pydantic_extra__
        assert made.__pydantic_private__ == constructed.__pydantic_private__
        assert made.to_json() == constructed.to_json()
        assert made.model_dump() == constructed.model_dump()
