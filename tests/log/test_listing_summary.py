"""The listing's summary, read from plain JSON, says what the event models said.

``summarize_events`` used to read pydantic events; it now reads each line's JSON
object and hands only lines in an unusual shape to the models. The rules as they
were (``reference_summary``, kept here verbatim) are the reference: every recorded
log, and logs of odd lines made up by hypothesis, must be summarized the same way.
"""

from __future__ import annotations

import ast
import inspect
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent.events.run_result
import agent.events.schema
import agent.log.summary
from agent.events.run_result import RunResult, run_result_of
from agent.events.schema import (
    DATA_TYPES,
    AbortData,
    AssistantMessageData,
    AssistantTurnEndData,
    AssistantTurnStartData,
    Event,
    SessionAutopilotStoppedData,
    SessionErrorData,
    SessionModeChangedData,
    SessionResumeData,
    SessionShutdownData,
    SessionStartData,
    SessionTaskCompleteData,
    SessionTitleChangedData,
    SessionUsageCheckpointData,
    ToolExecutionCompleteData,
    UserMessageData,
    event_from_dict,
)
from agent.events.usage_ledger import totals_of
from agent.log.session_row import SessionSummary
from agent.log.store import read_events
from agent.log.summary import LISTING_TYPES, LITERALS, NESTED, SHAPES, summarize_events
from tests.support.paths import FIXTURES

LOGS = sorted(FIXTURES.rglob("*.jsonl"))


def reference_summary(events: list[Event], summary: SessionSummary) -> SessionSummary:
    """The listing's rules as they read pydantic events (before the listing read JSON)."""
    open_turn = False
    checkpointed = False
    message_tokens = 0
    for event in events:
        if event.agent_id is not None:
            continue
        match event.data:
            case SessionStartData(start_time=started, context=ctx, selected_model=model):
                if open_turn:
                    summary.outcome, open_turn = "interrupted", False
                summary.started = started
                summary.cwd = ctx.cwd if ctx else ""
                summary.model = model or ""
            case SessionShutdownData() | SessionResumeData() if open_turn:
                summary.outcome, open_turn = "interrupted", False
            case SessionTitleChangedData(title=title):
                summary.title = title
            case UserMessageData(content=content, agent_mode=mode):
                if not summary.first_prompt:
                    summary.first_prompt = content
                if mode and mode != "shell":
                    summary.mode = mode
            case SessionModeChangedData(new_mode=mode):
                summary.mode = mode
            case AssistantTurnStartData():
                summary.turns += 1
                open_turn = True
            case AssistantTurnEndData():
                open_turn = False
            case ToolExecutionCompleteData(is_user_requested=by_user) if not by_user:
                summary.tool_calls += 1
            case SessionTaskCompleteData():
                summary.outcome = "completed"
            case SessionErrorData():
                summary.outcome = "error"
            case AbortData():
                summary.outcome = "aborted"
            case SessionAutopilotStoppedData():
                summary.outcome = "stopped"
            case AssistantMessageData(tool_requests=requests, output_tokens=out, model=model):
                message_tokens += out or 0
                if not requests:
                    summary.outcome = "completed"
                if model and not summary.model:
                    summary.model = model
            case SessionUsageCheckpointData() as checkpoint if (
                "provider_model_metrics" in checkpoint.model_fields_set
            ):
                checkpointed = True
                totals = totals_of(checkpoint)
                summary.input_tokens, summary.output_tokens = (
                    totals.input_tokens,
                    totals.output_tokens,
                )
                summary.cost = totals.cost
            case _:
                run = run_result_of(event)
                if run is not None:
                    open_turn = False
                    if run.exit_code:
                        summary.outcome = "error"
        if event.timestamp:
            summary.started = summary.started or event.timestamp
            summary.updated = event.timestamp
    if open_turn:
        summary.outcome = "in progress"
    if not checkpointed:
        summary.output_tokens = message_tokens
    return summary


def lines_of(log: Path) -> list[Any]:
    out = []
    for line in log.read_text("utf-8", errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # what read_events reports as unreadable
    return out


@pytest.mark.parametrize("log", LOGS, ids=[str(p.relative_to(FIXTURES)) for p in LOGS])
def test_every_recorded_log_is_summarized_as_the_event_models_summarized_it(log: Path) -> None:
    before = reference_summary(read_events(log).events, SessionSummary(id="x", path=log))
    now = summarize_events(lines_of(log), SessionSummary(id="x", path=log))
    assert now == before


def test_the_recorded_logs_say_enough_to_compare() -> None:
    """The logs above reach most rules (the made-up logs below reach the others:
    titles, usage checkpoints, aborts)."""
    summaries = [summarize_events(lines_of(log), SessionSummary(id="x", path=log)) for log in LOGS]
    outcomes = {s.outcome for s in summaries}
    assert {"completed", "interrupted", "in progress", "error"} <= outcomes
    assert any(s.output_tokens for s in summaries) and any(s.tool_calls for s in summaries)
    assert any(s.cwd for s in summaries) and any(s.model for s in summaries)
    assert len(LOGS) >= 20


# --- made-up logs: lines in odd shapes --------------------------------------------------

# A line of each listed type in its usual shape.
USUAL: dict[str, dict[str, Any]] = {
    "session.start": {
        "sessionId": "s",
        "copilotVersion": "1.0",
        "startTime": "2026-08-05T20:00:00.000Z",
        "selectedModel": "gpt-5",
        "context": {"cwd": "/work", "gitRoot": "/work"},
    },
    "session.resume": {"eventCount": 3, "resumeTime": "2026-08-05T21:00:00.000Z"},
    "session.shutdown": {"sessionStartTime": 1, "codeChanges": {"filesModified": ["a"]}},
    "session.title_changed": {"title": "A title"},
    "user.message": {"content": "Fix the test", "agentMode": "autopilot"},
    "session.mode_changed": {"previousMode": "interactive", "newMode": "plan"},
    "assistant.turn_start": {"turnId": "1"},
    "assistant.turn_end": {"turnId": "1"},
    "tool.execution_complete": {
        "toolCallId": "c",
        "success": True,
        "result": {"content": "ok"},
        "isUserRequested": False,
    },
    "session.task_complete": {"summary": "done", "success": True},
    "session.error": {"errorType": "quota", "message": "out of quota", "statusCode": 429},
    "abort": {"reason": "user_initiated"},
    "session.autopilot_stopped": {"reason": "cap"},
    "assistant.message": {
        "messageId": "m",
        "content": "hi",
        "toolRequests": [{"toolCallId": "c", "name": "bash", "arguments": {}}],
        "outputTokens": 12,
        "model": "gpt-5",
    },
    "session.usage_checkpoint": {
        "providerModelMetrics": [
            {
                "modelId": "gpt-5",
                "metrics": {
                    "requests": {"cost": 0.5, "count": 1},
                    "usage": {"inputTokens": 100, "outputTokens": 7},
                },
            }
        ]
    },
    "result": {"sessionId": "s", "exitCode": 0, "usage": {"premiumRequests": 1}},
}

ODD_VALUES = st.sampled_from(
    [
        "x",
        "",
        "12",
        "1.0",
        "true",
        "shell",
        "plan",
        "function",
        "routine",
        "user_abort",
        0,
        1,
        2,
        12,
        1.0,
        1.5,
        10**400,
        True,
        False,
        None,
        [],
        ["a"],
        [{}],
        [{"toolCallId": "c", "name": "n"}],
        [{"toolCallId": "c", "name": "n", "type": "custom"}],
        {},
        {"cwd": "/w"},
        {"cwd": 1},
        {"content": "ok"},
        {"premiumRequests": "1"},
    ]
)


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


@st.composite
def odd_line(draw: st.DrawFn) -> dict[str, Any]:
    etype = draw(st.sampled_from(sorted(USUAL)))
    data = dict(USUAL[etype])
    for key in draw(st.lists(st.sampled_from(sorted(data) or ["x"]), max_size=2)):
        data.pop(key, None)
    keys = [_camel(name) for name in SHAPES[etype]]
    for key in draw(st.lists(st.sampled_from(keys), max_size=2)):
        data[key] = draw(ODD_VALUES)
    if data and draw(st.booleans()) and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(data)))
        data[_snake(key)] = data.pop(key)  # the field under its Python name
    envelope: dict[str, Any] = {"type": etype, "data": data, "id": "e"}
    if etype == "result" and draw(st.booleans()):
        del envelope["data"]
        envelope.update(data)  # as copilot -p writes it: beside the envelope's fields
    stamp = draw(st.sampled_from(["", "2026-08-05T20:00:01.000Z", "2026-08-05T20:00:02.000Z"]))
    if stamp:
        envelope["timestamp"] = stamp
    if draw(st.integers(0, 9)) == 0:
        envelope["agentId"] = "sub"
    return envelope


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(odd_line(), min_size=1, max_size=8))
def test_odd_lines_are_summarized_as_the_event_models_read_them(
    lines: list[dict[str, Any]],
) -> None:
    events = [event_from_dict(json.loads(json.dumps(line))) for line in lines]
    before = reference_summary(events, SessionSummary(id="x", path=Path()))
    now = summarize_events(json.loads(json.dumps(lines)), SessionSummary(id="x", path=Path()))
    assert now == before


# --- the shapes stay the models' ------------------------------------------------------


def model_of(name: str) -> Any:
    return getattr(agent.events.schema, name, None) or getattr(agent.events.run_result, name)


@pytest.mark.parametrize(
    "name, shape",
    [
        *(
            (DATA_TYPES[t].__name__ if t in DATA_TYPES else "RunResult", s)
            for t, s in SHAPES.items()
        ),
        *NESTED.items(),
    ],
)
def test_each_shape_declares_its_models_fields(name: str, shape: dict[str, Any]) -> None:
    """A field added to a model, or one whose type changed, must be added here too:
    else a line in its usual shape could be read where the model refuses it."""
    model = model_of(name)
    fields = model.model_fields
    assert set(shape) == set(fields)
    own = {
        k: v
        for cls in reversed(model.__mro__)
        for k, v in vars(cls).get("__annotations__", {}).items()
    }
    for field, (annotation, required) in shape.items():
        assert (annotation, required) == (own[field], fields[field].is_required()), field
        assert fields[field].alias == _camel(field)


def test_the_literal_types_are_the_models() -> None:
    for name, values in LITERALS.items():
        assert values == set(typing.get_args(getattr(agent.events.schema, name)))


def test_the_result_line_is_read_by_its_model() -> None:
    assert model_of("RunResult") is RunResult
    assert agent.log.summary.RESULT_TYPE == agent.events.run_result.RESULT_TYPE


def test_every_type_summarize_events_matches_is_listed_and_shaped() -> None:
    """A case added to summarize_events needs its type in LISTING_TYPES (else a
    listing never hands it that line) and a shape (else no line of it counts)."""
    tree = ast.parse(inspect.getsource(summarize_events))
    matched = {
        node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant)
    }
    assert "assistant.turn_start" in matched  # the walk finds the cases
    assert matched <= LISTING_TYPES
    assert set(SHAPES) == LISTING_TYPES
    assert {*DATA_TYPES, agent.events.run_result.RESULT_TYPE} >= LISTING_TYPES
