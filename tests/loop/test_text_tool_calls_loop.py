"""Tool calls written as text, through the loop: run, recorded, hidden from prose, corrected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import AssistantMessageData, ToolExecutionCompleteData, UserMessageData
from agent.loop.turn_loop import MAX_TEXT_CALL_CORRECTIONS
from tests.support.scripting import FakeRecorder, new_session, scripted

VIEW = '{"name": "view", "arguments": {"path": "notes.txt"}}'
GLOB = '{"name": "glob", "arguments": {"pattern": "*.txt"}}'


def streamed(rec: FakeRecorder) -> str:
    return "".join(e.data.delta_content for e in rec.of("assistant.message_delta"))  # type: ignore[union-attr]


def messages(rec: FakeRecorder) -> list[AssistantMessageData]:
    found = [e.data for e in rec.of("assistant.message")]
    assert all(isinstance(m, AssistantMessageData) for m in found)
    return found  # type: ignore[return-value]


async def run(
    tmp_path: Path, turns: list[dict[str, Any]], *, on: bool = True, mode: str = "interactive"
) -> tuple[FakeRecorder, Any, Any]:
    model = scripted(turns)
    session, rec = await new_session(model, tmp_path, mode=mode)  # type: ignore[arg-type]
    (session.cwd / "notes.txt").write_text("the answer is 42\n")
    session.text_tool_calls = on
    outcome = await session.send_and_wait("what do the notes say?")
    await session.close()
    return rec, outcome, model


async def test_a_call_in_tool_call_tags_runs_and_is_recorded_as_recovered(tmp_path: Path) -> None:
    rec, outcome, model = await run(
        tmp_path,
        [{"text": f"I'll read them.\n<tool_call>\n{VIEW}\n</tool_call>"}, {"text": "It says 42."}],
    )
    first, last = messages(rec)
    assert first.content == "I'll read them."
    assert first.tool_requests is not None
    (request,) = first.tool_requests
    assert (request.name, request.arguments) == ("view", {"path": "notes.txt"})
    assert request.recovered_from_text is True
    assert request.wire()["recoveredFromText"] is True
    (done,) = [e.data for e in rec.of("tool.execution_complete")]
    assert isinstance(done, ToolExecutionCompleteData) and done.success
    assert done.tool_call_id == request.tool_call_id
    assert outcome.final_text == "It says 42." == last.content
    # The call was never shown as prose: the stream held it back.
    assert "tool_call" not in streamed(rec) and "notes.txt" not in streamed(rec)
    assert streamed(rec).startswith("I'll read them.")
    # The model reads its call back as a structured call, with the result after it.
    sent = model.seen_messages[1]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "view"
    assert sent[-1]["role"] == "tool" and "42" in sent[-1]["content"]


async def test_off_the_text_is_the_answer(tmp_path: Path) -> None:
    text = f"```json\n{VIEW}\n```"
    rec, outcome, model = await run(tmp_path, [{"text": text}], on=False)
    assert model.calls == 1
    assert outcome.final_text == text
    assert rec.of("tool.execution_start") == []
    assert streamed(rec) == text


async def test_several_calls_in_one_reply(tmp_path: Path) -> None:
    text = f"<tool_call>{GLOB}</tool_call>\n<tool_call>{VIEW}</tool_call>"
    rec, outcome, _ = await run(tmp_path, [{"text": text}, {"text": "Done."}])
    first = messages(rec)[0]
    assert first.content == ""
    assert [r.name for r in first.tool_requests or []] == ["glob", "view"]
    assert len(rec.of("tool.execution_complete")) == 2
    assert outcome.final_text == "Done."


async def test_quoted_json_is_shown_and_not_run(tmp_path: Path) -> None:
    text = f"A call looks like:\n{VIEW}\nYou never need to write one."
    rec, outcome, model = await run(tmp_path, [{"text": text}])
    assert model.calls == 1
    assert rec.of("tool.execution_start") == []
    assert outcome.final_text == text == streamed(rec)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"name": "read_file", "arguments": {"path": "notes.txt"}}', "no tool 'read_file'"),
        ('```json\n{"name": "view", "arguments": {"file": "notes.txt"}}\n```', "invalid arguments"),
        ('<tool_call>{"name": "view", "arguments": {"path": </tool_call>', "could not be read"),
    ],
)
async def test_a_malformed_call_is_told_to_the_model(tmp_path: Path, text: str, words: str) -> None:
    rec, outcome, model = await run(tmp_path, [{"text": text}, {"text": "Sorry: it says 42."}])
    assert rec.of("tool.execution_start") == []
    assert messages(rec)[0].content == text  # shown as written: it did not run
    assert streamed(rec).startswith(text)
    corrections = [e.data for e in rec.of("user.message") if e.data.source == "system"]  # type: ignore[union-attr]
    assert len(corrections) == 1
    assert isinstance(corrections[0], UserMessageData) and words in corrections[0].content
    assert model.calls == 2 and outcome.final_text == "Sorry: it says 42."
    # Told between turns, and read by the model as a user message.
    types = rec.types()
    at = types.index("user.message", 1)
    assert types[at - 1] == "assistant.turn_end" and types[at + 1] == "assistant.turn_start"
    assert model.seen_messages[1][-1] == {"role": "user", "content": corrections[0].content}


async def test_corrections_stop_after_a_few(tmp_path: Path) -> None:
    bad = {"text": '{"name": "nope", "arguments": {}}'}
    rec, outcome, model = await run(tmp_path, [bad] * 10)
    assert model.calls == MAX_TEXT_CALL_CORRECTIONS + 1
    assert outcome.final_text == bad["text"]
    assert rec.of("session.idle")


async def test_recovered_calls_parse_with_the_official_sdk(tmp_path: Path) -> None:
    session_events = pytest.importorskip("copilot.generated.session_events")
    rec, _, _ = await run(
        tmp_path, [{"text": f"<tool_call>{VIEW}</tool_call>"}, {"text": "It says 42."}]
    )
    wire = json.loads(json.dumps(rec.of("assistant.message")[0].wire()))
    assert wire["data"]["toolRequests"][0]["recoveredFromText"] is True
    parsed = session_events.session_event_from_dict(wire)
    assert parsed.type.value == "assistant.message"
    assert parsed.data.tool_requests[0].name == "view"
