"""The transcript fold: event streams in, blocks and counters out (no UI)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent.events.schema import (
    AbortData,
    AssistantMessageData,
    AssistantMessageDeltaData,
    AssistantReasoningData,
    AssistantReasoningDeltaData,
    AssistantTurnEndData,
    AssistantTurnRetryData,
    AssistantTurnStartData,
    AssistantUsageData,
    Event,
    EventData,
    PermissionCompletedData,
    PermissionRequestedData,
    SessionAutopilotStoppedData,
    SessionCompactionCompleteData,
    SessionCompactionStartData,
    SessionErrorData,
    SessionIdleData,
    SessionInfoData,
    SessionModeChangedData,
    SessionModelChangeData,
    SessionResumeData,
    SessionStartData,
    SessionTaskCompleteData,
    SessionWarningData,
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
    ToolRequest,
    ToolResultPayload,
    UserMessageData,
    event_from_dict,
)
from agent.transcript.blocks import (
    AbortBlock,
    Block,
    Change,
    ErrorBlock,
    InfoRowBlock,
    NoticeBlock,
    RawBlock,
    TaskCompleteBlock,
    ToolCallBlock,
    TurnBlock,
    UserBlock,
    parse_timestamp,
)
from agent.transcript.error_hints import error_hint
from agent.transcript.fold import Transcript, fold
from tests.support.streams import MODEL, Stream, ToolSpec


def ev(data: EventData, timestamp: str = "2026-11-30T12:00:00.000Z") -> Event:
    return Event.new(data, None).model_copy(update={"timestamp": timestamp})


def turns_of(t: Transcript) -> list[TurnBlock]:
    return [b for b in t.items if isinstance(b, TurnBlock)]


def users_of(t: Transcript) -> list[UserBlock]:
    return [b for b in t.items if isinstance(b, UserBlock)]


def tool_shape(tool: ToolCallBlock) -> tuple[Any, ...]:
    return (
        tool.tool_call_id,
        tool.name,
        tool.arguments,
        tool.status,
        tool.duration,
        tool.last_line,
        tool.result,
        tool.detailed_content,
        tool.error,
        tool.turn_number,
    )


def shape(block: Block) -> tuple[Any, ...]:
    """Everything a renderer draws from a block, minus identity and live-only usage."""
    match block:
        case UserBlock():
            return ("user", block.content, block.is_nudge, block.nudge_number, block.mode)
        case TurnBlock():
            return (
                "turn",
                block.number,
                block.turn_id,
                block.model,
                block.status,
                block.duration,
                block.text,
                block.reasoning,
                block.output_tokens,
                block.retries,
                tuple(tool_shape(tool) for tool in block.tools),
            )
        case ToolCallBlock():
            return ("tool", *tool_shape(block))
        case TaskCompleteBlock():
            return ("task_complete", block.summary, block.success)
        case ErrorBlock():
            return ("error", block.error_type, block.message, block.hint)
        case AbortBlock():
            return ("abort", block.reason)
        case NoticeBlock():
            return ("notice", block.kind, block.message, block.subtype)
        case RawBlock():
            return ("raw", block.type, block.data)


def shapes(t: Transcript) -> list[tuple[Any, ...]]:
    return [shape(b) for b in t.items]


GREP = ToolSpec(
    "call-grep",
    "grep",
    {"pattern": "def main"},
    output="app.py:3: def main():",
    lines=("searching app.py", "searching lib/\nsearching lib/util.py\n"),
)
VIEW = ToolSpec("call-view", "view", {"path": "nope.py"}, success=False, output="no such file")


def two_turn_session() -> Stream:
    s = Stream()
    s.start()
    s.user("where is main?")
    s.turn("0", "Let me search.", (GREP, VIEW))
    s.turn("1", "main is in app.py.")
    s.idle()
    return s


# --- a whole interactive session -------------------------------------------------


def test_two_turn_interactive_session_with_tools() -> None:
    t = fold(two_turn_session().events)

    assert [type(b).__name__ for b in t.items] == ["UserBlock", "TurnBlock", "TurnBlock"]
    first, second = turns_of(t)
    assert (first.number, first.turn_id, second.number, second.turn_id) == (1, "0", 2, "1")
    assert (first.status, second.status) == ("done", "done")
    assert first.model == MODEL
    assert first.text == "Let me search."
    assert second.text == "main is in app.py."
    # turn 1: start, 2 deltas, message, usage, grep (start, 2 partials, complete +2 s),
    # view (start, complete +2 s), end -> 13 s; turn 2: 2 deltas, message, usage, end.
    assert first.duration == 13.0
    assert second.duration == 5.0

    grep, view = first.tools
    assert (grep.name, grep.status, view.name, view.status) == (
        "grep",
        "success",
        "view",
        "failure",
    )
    assert grep.arguments == {"pattern": "def main"}
    assert grep.duration == 4.0  # 2 partials (1 s each) + complete (2 s)
    assert view.duration == 2.0
    assert grep.result == "app.py:3: def main():"
    assert grep.detailed_content == "[app.py:3: def main():]"
    assert grep.last_line is None  # only while running
    assert view.error == "no such file"
    assert (grep.turn_number, view.turn_number) == (1, 1)
    assert second.tools == []

    assert t.turns == 2
    assert t.tool_calls == 2
    assert (t.input_tokens, t.output_tokens) == (200, 40)
    assert t.cost == pytest.approx(0.02)
    assert (first.input_tokens, first.output_tokens, first.cost) == (100, 20, 0.01)
    assert t.busy is False
    assert t.final_text() == "main is in app.py."
    assert t.final_answer == "main is in app.py."
    assert (t.session_id, t.cwd, t.branch, t.model, t.mode) == (
        "sess-1",
        "/repo",
        "main",
        MODEL,
        "interactive",
    )
    assert t.task_completed is False and t.aborted is False and t.last_error is None
    assert t.get_tool("call-view") is view
    assert t.get_turn("1") is second
    assert t.current_turn is None
    assert t.events == len(two_turn_session().events)


def test_busy_while_working_and_last_line_while_running() -> None:
    s = Stream()
    s.user("go")
    t = Transcript()
    for event in s.events:
        t.apply(event)
    assert t.busy is True

    t.apply(s.emit(AssistantTurnStartData(turn_id="0", model=MODEL)))
    requests = [ToolRequest(tool_call_id="c1", name="grep", arguments={"pattern": "x"})]
    t.apply(s.emit(AssistantMessageData(message_id="m", content="", tool_requests=requests)))
    t.apply(s.emit(ToolExecutionStartData(tool_call_id="c1", tool_name="grep")))
    t.apply(s.emit(ToolExecutionPartialResultData(tool_call_id="c1", partial_output="a\nb.py\n\n")))
    tool = t.get_tool("c1")
    assert tool is not None
    assert tool.status == "running"
    assert tool.last_line == "b.py"
    assert tool.arguments == {"pattern": "x"}  # start without arguments keeps the request's
    assert tool.duration is None
    assert t.current_turn is not None and t.current_turn.status == "running"
    assert t.busy is True


# --- streaming -----------------------------------------------------------------


def test_streamed_deltas_are_replaced_by_the_final_message_not_doubled() -> None:
    t = Transcript()
    t.apply(ev(AssistantTurnStartData(turn_id="0", model=MODEL)))
    t.apply(ev(AssistantMessageDeltaData(message_id="m1", delta_content="Hel")))
    t.apply(ev(AssistantMessageDeltaData(message_id="m1", delta_content="lo wor")))
    (turn,) = turns_of(t)
    assert turn.text == "Hello wor"

    changes = t.apply(ev(AssistantMessageData(message_id="m1", content="Hello world.")))
    assert turn.text == "Hello world."
    assert changes == [Change("updated", turn)]
    # A stray late delta of a finished message changes nothing.
    assert t.apply(ev(AssistantMessageDeltaData(message_id="m1", delta_content="!!"))) == []
    assert turn.text == "Hello world."


def test_reasoning_final_with_a_fresh_id_replaces_its_deltas() -> None:
    t = Transcript()
    t.apply(ev(AssistantTurnStartData(turn_id="0")))
    t.apply(ev(AssistantReasoningDeltaData(reasoning_id="r1", delta_content="Think")))
    t.apply(ev(AssistantReasoningDeltaData(reasoning_id="r1", delta_content="ing...")))
    (turn,) = turns_of(t)
    assert turn.reasoning == "Thinking..."
    t.apply(ev(AssistantReasoningData(reasoning_id="r2", content="Thinking it over.")))
    assert turn.reasoning == "Thinking it over."


def test_a_retry_drops_what_the_failed_attempt_streamed() -> None:
    t = Transcript()
    t.apply(ev(AssistantTurnStartData(turn_id="0", model=MODEL)))
    t.apply(ev(AssistantMessageDeltaData(message_id="a1", delta_content="Partial ans")))
    (turn,) = turns_of(t)
    changes = t.apply(ev(AssistantTurnRetryData(turn_id="0", reason="rate_limit: slow down")))
    assert changes == [Change("updated", turn)]
    assert turn.text == ""
    assert (turn.retries, turn.retry_reason) == (1, "rate_limit: slow down")
    t.apply(ev(AssistantMessageDeltaData(message_id="a2", delta_content="Full")))
    t.apply(ev(AssistantMessageData(message_id="a2", content="Full answer.")))
    assert turn.text == "Full answer."

    # The session.warning form of a retry counts too, and is shown as a notice.
    t.apply(ev(SessionWarningData(warning_type="model_retry", message="retry 2 of 3")))
    assert turn.retries == 2
    assert isinstance(t.items[-1], NoticeBlock)
    assert (t.items[-1].kind, t.items[-1].subtype) == ("warning", "model_retry")


def test_usage_supersedes_the_message_output_tokens_without_double_counting() -> None:
    t = Transcript()
    t.apply(ev(AssistantTurnStartData(turn_id="0")))
    t.apply(ev(AssistantMessageData(message_id="m", content="hi", output_tokens=10)))
    (turn,) = turns_of(t)
    assert (turn.output_tokens, t.output_tokens) == (10, 10)
    t.apply(ev(AssistantUsageData(model=MODEL, input_tokens=50, output_tokens=12, cost=0.5)))
    assert (turn.input_tokens, turn.output_tokens, turn.cost) == (50, 12, 0.5)
    assert (t.input_tokens, t.output_tokens, t.cost) == (50, 12, 0.5)


# --- autopilot -------------------------------------------------------------------


def autopilot_session() -> Stream:
    s = Stream()
    s.user("fix the failing test", "autopilot")
    s.turn("0", "I think it is fixed.")
    s.user("Continue.", "autopilot", nudge=True)
    s.turn("1", "Still checking.")
    s.user("Continue.", "autopilot", nudge=True)
    done = ToolSpec("call-done", "task_complete", {"summary": "Fixed the off-by-one in app.py."})
    s.turn("2", "", (done,), end=False)
    s.emit(SessionTaskCompleteData(summary="Fixed the off-by-one in app.py.", success=True))
    s.emit(AssistantTurnEndData(turn_id="2", model=MODEL))
    s.idle(mode="autopilot")
    return s


def test_autopilot_nudges_are_numbered_and_task_complete_is_the_answer() -> None:
    t = fold(autopilot_session().events)

    users = users_of(t)
    assert [u.is_nudge for u in users] == [False, True, True]
    assert [u.nudge_number for u in users] == [None, 1, 2]
    assert [u.mode for u in users] == ["autopilot"] * 3
    assert [type(b).__name__ for b in t.items] == [
        "UserBlock",
        "TurnBlock",
        "UserBlock",
        "TurnBlock",
        "UserBlock",
        "TurnBlock",
        "TaskCompleteBlock",
    ]
    task = t.items[-1]
    assert isinstance(task, TaskCompleteBlock)
    assert (task.summary, task.success) == ("Fixed the off-by-one in app.py.", True)
    assert [turn.number for turn in turns_of(t)] == [1, 2, 3]
    assert turns_of(t)[2].tools[0].status == "success"
    assert (t.nudges_used, t.nudges_total, t.turns, t.tool_calls) == (2, 2, 3, 1)
    assert t.task_completed is True
    assert t.mode == "autopilot"
    assert t.final_text() == "Fixed the off-by-one in app.py."

    # A new typed message starts a new count; the session-wide total keeps going.
    t.apply(ev(UserMessageData(content="now add a test", agent_mode="autopilot")))
    assert (t.nudges_used, t.task_completed, t.final_text()) == (0, False, None)
    t.apply(
        ev(
            UserMessageData(
                content="Continue.", agent_mode="autopilot", is_autopilot_continuation=True
            )
        )
    )
    assert users_of(t)[-1].nudge_number == 1
    assert (t.nudges_used, t.nudges_total) == (1, 3)


def test_autopilot_stopped_at_the_cap_is_a_notice_and_the_last_reply_is_the_answer() -> None:
    s = Stream()
    s.user("go", "autopilot")
    s.turn("0", "Done, I believe.")
    s.emit(SessionAutopilotStoppedData(reason="continuation cap reached: 0 nudges"))
    s.idle(mode="autopilot")
    t = fold(s.events)
    notice = t.items[-1]
    assert isinstance(notice, NoticeBlock)
    assert (notice.kind, notice.message) == ("autopilot", "continuation cap reached: 0 nudges")
    assert t.autopilot_stopped is True
    assert t.final_text() == "Done, I believe."


# --- errors and aborts -----------------------------------------------------------


@pytest.mark.parametrize(
    ("error_type", "status_code", "hint"),
    [
        ("auth", 401, "check your API key (or the provider login) and send again"),
        ("rate_limit", 429, "wait and retry, or switch model with --model"),
        ("context_limit", None, "start a new session or shorten the request"),
        ("server", 503, "the provider had a problem; send again to retry"),
        (
            "timeout",
            None,
            "the server went quiet; send again, or allow a slow one more with --idle-timeout",
        ),
        (
            "connection",
            None,
            "check that the model server is running and its URL is right, then send again",
        ),
        (
            "empty_response",
            None,
            "the model sent back nothing; send again, or switch model with --model",
        ),
        ("provider_weirdness", 429, "wait and retry, or switch model with --model"),
        ("provider_weirdness", 401, "check your API key (or the provider login) and send again"),
    ],
)
def test_error_hints(error_type: str, status_code: int | None, hint: str) -> None:
    assert error_hint(error_type, status_code) == hint


def test_an_error_after_retries_marks_the_turn_and_carries_a_hint() -> None:
    s = Stream()
    s.user("hello")
    s.emit(AssistantTurnStartData(turn_id="0", model=MODEL))
    s.emit(AssistantMessageDeltaData(message_id="a1", delta_content="Hel"))
    s.emit(AssistantTurnRetryData(turn_id="0", reason="rate_limit: 429 — retry 1 of 1"))
    s.emit(AssistantTurnEndData(turn_id="0", model=MODEL))  # the loop ends the turn first
    t = fold(s.events)
    (turn,) = turns_of(t)
    status_before_error = turn.status
    assert status_before_error == "done"

    changes = t.apply(
        s.emit(
            SessionErrorData(error_type="rate_limit", message="Too many requests", status_code=429)
        )
    )
    error = t.items[-1]
    assert isinstance(error, ErrorBlock)
    assert changes == [Change("updated", turn), Change("added", error)]
    assert (error.error_type, error.message, error.status_code) == (
        "rate_limit",
        "Too many requests",
        429,
    )
    assert error.hint == "wait and retry, or switch model with --model"
    assert turn.status == "error"
    assert (turn.retries, turn.text) == (1, "")
    assert t.last_error is error
    assert t.final_text() is None
    t.apply(s.emit(SessionIdleData()))
    assert t.busy is False
    # The next typed message clears the per-send error.
    t.apply(s.emit(UserMessageData(content="again")))
    assert t.last_error is None


def test_abort_interrupts_the_running_tool_and_the_turn() -> None:
    # The loop's order: partial reply and interrupted tool calls, turn_end, abort, idle.
    s = Stream()
    s.user("run the tests")
    s.emit(AssistantTurnStartData(turn_id="0", model=MODEL))
    requests = [
        ToolRequest(tool_call_id="c-run", name="shell", arguments={"command": "pytest"}),
        ToolRequest(tool_call_id="c-view", name="view", arguments={"path": "a.py"}),
    ]
    s.emit(AssistantMessageData(message_id="m", content="Running.", tool_requests=requests))
    s.emit(ToolExecutionStartData(tool_call_id="c-run", tool_name="shell", turn_id="0"))
    s.emit(ToolExecutionPartialResultData(tool_call_id="c-run", partial_output="collected 9"))
    t = fold(s.events)
    run = t.get_tool("c-run")
    view = t.get_tool("c-view")
    assert run is not None and view is not None
    assert (run.status, run.last_line, view.status) == ("running", "collected 9", "pending")

    interrupted = ToolErrorPayload(message="Interrupted", code="interrupted")
    for call_id in ("c-run", "c-view"):
        t.apply(
            s.emit(
                ToolExecutionCompleteData(
                    tool_call_id=call_id, success=False, error=interrupted, turn_id="0"
                ),
                after=3.0,
            )
        )
    t.apply(s.emit(AssistantTurnEndData(turn_id="0")))
    changes = t.apply(s.emit(AbortData(reason="user_initiated")))
    t.apply(s.emit(SessionIdleData(aborted=True)))

    (turn,) = turns_of(t)
    abort = t.items[-1]
    assert isinstance(abort, AbortBlock)
    assert abort.reason == "user_initiated"
    assert changes == [Change("added", abort)]  # the turn was already closed as aborted
    assert (run.status, view.status) == ("interrupted", "interrupted")
    assert run.last_line is None
    assert run.error == "Interrupted"
    assert run.duration == 4.0  # partial (+1 s) and complete (+3 s)
    assert view.duration is None  # never started
    assert turn.status == "aborted"
    assert (t.aborted, t.busy, t.final_text()) == (True, False, None)


def test_abort_while_the_turn_is_still_open() -> None:
    t = Transcript()
    t.apply(ev(UserMessageData(content="go")))
    t.apply(ev(AssistantTurnStartData(turn_id="0"), "2026-11-30T12:00:01Z"))
    requests = [ToolRequest(tool_call_id="c1", name="shell", arguments={"command": "sleep 9"})]
    t.apply(ev(AssistantMessageData(message_id="m", content="", tool_requests=requests)))
    t.apply(
        ev(ToolExecutionStartData(tool_call_id="c1", tool_name="shell"), "2026-11-30T12:00:02Z")
    )

    changes = t.apply(ev(AbortData(), "2026-11-30T12:00:05Z"))
    (turn,) = turns_of(t)
    tool = turn.tools[0]
    abort = t.items[-1]
    assert [(c.kind, c.item, c.parent) for c in changes] == [
        ("updated", tool, turn),
        ("updated", turn, None),
        ("added", abort, None),
    ]
    assert (tool.status, tool.duration) == ("interrupted", 3.0)
    assert (turn.status, turn.duration) == ("aborted", 4.0)
    # A turn_end arriving afterwards does not turn it back into "done".
    t.apply(ev(AssistantTurnEndData(turn_id="0"), "2026-11-30T12:00:06Z"))
    assert turn.status == "aborted"


# --- unknown and odd events ------------------------------------------------------


def test_an_unknown_event_type_is_kept_as_a_raw_block() -> None:
    t = Transcript()
    event = event_from_dict(
        {
            "type": "subagent.started",
            "data": {"agentName": "explorer", "depth": 2},
            "id": "e1",
            "timestamp": "2026-11-30T12:35:33.147Z",
        }
    )
    changes = t.apply(event)
    (raw,) = t.items
    assert changes == [Change("added", raw)]
    assert isinstance(raw, RawBlock)
    assert (raw.type, raw.data) == ("subagent.started", {"agentName": "explorer", "depth": 2})
    assert raw.timestamp == datetime(2026, 11, 30, 12, 35, 33, 147000, tzinfo=UTC)

    # A known type whose data does not fit the model is kept too, and not counted.
    t.apply(event_from_dict({"type": "assistant.turn_start", "data": {"model": 3}}))
    assert isinstance(t.items[-1], RawBlock)
    assert t.items[-1].type == "assistant.turn_start"
    assert t.turns == 0


def test_tool_events_for_unannounced_calls_get_a_block() -> None:
    t = Transcript()
    # No turn at all (a Copilot CLI log fragment): a detached block at the top level.
    t.apply(ev(ToolExecutionStartData(tool_call_id="x1", tool_name="bash"), "2026-11-30T12:00:00Z"))
    t.apply(
        ev(
            ToolExecutionCompleteData(
                tool_call_id="x1", success=True, result=ToolResultPayload(content="done")
            ),
            "2026-11-30T12:00:03Z",
        )
    )
    (detached,) = t.items
    assert isinstance(detached, ToolCallBlock)
    assert (detached.name, detached.status, detached.duration) == ("bash", "success", 3.0)
    assert detached.turn_number is None

    # Inside an open turn, the unannounced call joins that turn.
    t.apply(ev(AssistantTurnStartData(turn_id="7")))
    changes = t.apply(ev(ToolExecutionCompleteData(tool_call_id="x2", success=False, turn_id="7")))
    turn = t.items[-1]
    assert isinstance(turn, TurnBlock)
    (tool,) = turn.tools
    assert changes == [Change("added", tool, turn)]
    assert (tool.name, tool.status, tool.turn_number) == ("unknown", "failure", 1)
    assert t.tool_calls == 2

    # Odd order never crashes: ends of unknown turns, usage and partials out of place.
    t.apply(ev(AssistantTurnEndData(turn_id="7")))
    assert t.apply(ev(AssistantTurnEndData(turn_id="nope"))) == []
    t.apply(ev(ToolExecutionPartialResultData(tool_call_id="x1", partial_output="late")))
    assert detached.last_line is None and detached.status == "success"
    fresh = Transcript()
    assert fresh.apply(ev(AssistantUsageData(model=MODEL, input_tokens=5, output_tokens=7))) == []
    assert (fresh.input_tokens, fresh.output_tokens) == (5, 7)


def test_an_assistant_message_outside_a_turn_opens_an_implied_turn() -> None:
    t = Transcript()
    changes = t.apply(ev(AssistantMessageData(message_id="m", content="hi there")))
    (turn,) = t.items
    assert isinstance(turn, TurnBlock)
    assert changes == [Change("added", turn)]
    assert (turn.number, turn.text, turn.status, t.turns) == (1, "hi there", "running", 1)


def test_bad_timestamps_give_no_duration() -> None:
    assert parse_timestamp("") is None
    assert parse_timestamp("yesterday") is None
    assert parse_timestamp("2026-11-30T12:35:33") == datetime(2026, 11, 30, 12, 35, 33, tzinfo=UTC)
    t = Transcript()
    t.apply(ev(AssistantTurnStartData(turn_id="0"), ""))
    t.apply(ev(AssistantTurnEndData(turn_id="0"), "not a time"))
    (turn,) = turns_of(t)
    assert (turn.status, turn.started_at, turn.ended_at, turn.duration) == (
        "done",
        None,
        None,
        None,
    )


def test_turn_ids_may_repeat_across_sends() -> None:
    s = Stream()
    s.user("one")
    s.turn("0", "First.")
    s.user("two")
    s.turn("0", "Second.")
    t = fold(s.events)
    first, second = turns_of(t)
    assert (first.number, first.text, second.number, second.text) == (1, "First.", 2, "Second.")
    assert first.status == second.status == "done"
    assert t.get_turn("0") is second


# --- replay ----------------------------------------------------------------------


def test_replay_without_ephemeral_events_gives_the_same_blocks_as_live() -> None:
    s = two_turn_session()
    s.user("and now autopilot", "autopilot")
    s.turn("2", "I think so.")
    s.user("Continue.", "autopilot", nudge=True)
    s.turn("3", "", (ToolSpec("c-done", "task_complete", {"summary": "All set."}),), end=False)
    s.emit(SessionTaskCompleteData(summary="All set.", success=True))
    s.emit(AssistantTurnEndData(turn_id="3"))
    s.emit(SessionModeChangedData(previous_mode="autopilot", new_mode="interactive"))
    s.idle()

    live = fold(s.events)
    persisted = s.persisted()
    assert len(persisted) < len(s.events)
    assert not any(e.type == "assistant.message_delta" for e in persisted)
    replayed = fold(persisted, replay=True)

    assert shapes(replayed) == shapes(live)
    assert [s[0] for s in shapes(live)] == [
        "user",
        "turn",
        "turn",
        "user",
        "turn",
        "user",
        "turn",
        "task_complete",
        "notice",
    ]
    for counter in ("turns", "tool_calls", "output_tokens", "nudges_used", "nudges_total"):
        assert getattr(replayed, counter) == getattr(live, counter), counter
    assert (live.turns, live.tool_calls, live.output_tokens) == (4, 3, 80)
    assert (replayed.session_id, replayed.mode) == ("sess-1", "interactive")
    assert replayed.final_text() == live.final_text() == "All set."
    assert live.busy is False and replayed.busy is False
    # assistant.usage is ephemeral: without the session.usage_checkpoint a session
    # writes after it (this hand-built stream has none), input tokens and cost are
    # known live only. tests/transcript/test_turn_stats.py replays a session's real log.
    assert (live.input_tokens, replayed.input_tokens) == (400, 0)


def test_an_aborted_send_replays_the_same() -> None:
    s = Stream()
    s.user("go")
    s.emit(AssistantTurnStartData(turn_id="0"))
    s.emit(AssistantMessageDeltaData(message_id="m", delta_content="Half a rep"))
    s.emit(AssistantMessageData(message_id="m", content="Half a rep", turn_id="0"))  # partial
    s.emit(AssistantTurnEndData(turn_id="0"))
    s.emit(AbortData())
    s.idle(aborted=True)
    live = fold(s.events)
    replayed = fold(s.persisted(), replay=True)
    assert shapes(replayed) == shapes(live)
    assert turns_of(live)[0].status == "aborted"
    assert (replayed.aborted, replayed.busy, replayed.final_text()) == (True, False, None)


def test_finish_replay_settles_busy_from_what_is_pending() -> None:
    s = Stream()
    s.user("go")
    s.turn("0", "Looking.", (GREP,), end=False)  # the file stops inside a turn
    assert fold(s.persisted(), replay=True).busy is True

    s.emit(AssistantTurnEndData(turn_id="0"))
    assert fold(s.persisted(), replay=True).busy is False
    # Without finish_replay only session.idle says the work is over.
    assert fold(s.persisted()).busy is True

    s.user("and then?")  # a prompt nothing answered yet
    assert fold(s.persisted(), replay=True).busy is True


def test_resume_closes_what_a_crash_left_open() -> None:
    # Crash during a model call: on restart the session closes the turn, then resumes.
    s = Stream()
    s.user("go")
    s.emit(AssistantTurnStartData(turn_id="0"))
    s.emit(AssistantTurnEndData(turn_id="0"))
    s.emit(SessionWarningData(warning_type="log_repair", message="line 9: torn"))
    s.emit(
        SessionResumeData(event_count=4, resume_time="2026-11-30T13:00:00Z", selected_model="m2")
    )
    t = fold(s.persisted(), replay=True)
    (turn,) = turns_of(t)
    resume = t.items[-1]
    assert isinstance(resume, NoticeBlock)
    assert (resume.kind, resume.message) == ("resume", "session resumed (4 events)")
    assert turn.status == "aborted"
    assert (t.busy, t.model) == (False, "m2")

    # Crash during a tool: its call was closed as interrupted, so the turn was cut short.
    s = Stream()
    s.user("go")
    s.turn("0", "Searching.", (GREP,), end=False)
    t = fold(s.persisted())
    interrupted = ToolErrorPayload(message="Interrupted by exit", code="interrupted")
    t.apply(ev(ToolExecutionCompleteData(tool_call_id="c-new", success=False, error=interrupted)))
    t.apply(ev(AssistantTurnEndData(turn_id="0")))
    assert turns_of(t)[0].status == "aborted"
    assert turns_of(t)[0].tools[1].status == "interrupted"


# --- notices, permissions ---------------------------------------------------------


def test_notices_for_mode_model_info_warning_and_compaction() -> None:
    t = Transcript()
    t.apply(ev(SessionModeChangedData(previous_mode="interactive", new_mode="plan")))
    t.apply(ev(SessionModelChangeData(previous_model="a", new_model="b")))
    t.apply(ev(SessionInfoData(info_type="tip", message="Press ? for help", tip="try it")))
    t.apply(ev(SessionWarningData(warning_type="log_repair", message="line 3 skipped")))
    t.apply(ev(SessionCompactionStartData(current_tokens=900, token_limit=1000)))
    compaction = t.items[-1]
    changes = t.apply(ev(SessionCompactionCompleteData(success=True, messages_removed=12)))
    assert changes == [Change("updated", compaction)]
    assert [(b.kind, b.message, b.subtype) for b in t.items if isinstance(b, NoticeBlock)] == [
        ("mode", "mode: interactive → plan", None),
        ("model", "model: a → b", None),
        ("info", "Press ? for help", "tip"),
        ("warning", "line 3 skipped", "log_repair"),
    ]
    # The compaction is one info row, its start updated by its end.
    assert isinstance(compaction, InfoRowBlock)
    assert (compaction.title, compaction.state) == ("context compacted: 12 messages removed", "ok")
    assert (t.mode, t.model) == ("plan", "b")


def test_permissions_attach_to_their_tool_call() -> None:
    t = Transcript()
    t.apply(ev(AssistantTurnStartData(turn_id="0")))
    requests = [ToolRequest(tool_call_id="c1", name="shell", arguments={"command": "rm x"})]
    t.apply(ev(AssistantMessageData(message_id="m", content="", tool_requests=requests)))
    tool = t.get_tool("c1")
    assert tool is not None
    t.apply(
        ev(
            PermissionRequestedData(
                request_id="p1", permission_request={"kind": "shell", "toolCallId": "c1"}
            )
        )
    )
    assert tool.permission == "requested"
    changes = t.apply(ev(PermissionCompletedData(request_id="p1", result={"kind": "approved"})))
    assert tool.permission == "approved"
    assert changes == [Change("updated", tool, turns_of(t)[0])]

    # One that names no known call is shown as a notice, updated when answered.
    t.apply(ev(PermissionRequestedData(request_id="p2", permission_request={"kind": "url"})))
    notice = t.items[-1]
    t.apply(ev(PermissionCompletedData(request_id="p2", result={"kind": "denied"})))
    assert isinstance(notice, NoticeBlock)
    assert (notice.kind, notice.message) == ("permission", "url: denied")


# --- apply reports what changed --------------------------------------------------


def test_apply_returns_the_changed_blocks() -> None:
    t = Transcript()
    assert t.apply(ev(SessionStartData(session_id="s", copilot_version="1", start_time=""))) == []

    changes = t.apply(ev(UserMessageData(content="hi")))
    user = t.items[-1]
    assert changes == [Change("added", user)]

    changes = t.apply(ev(AssistantTurnStartData(turn_id="0")))
    turn = t.items[-1]
    assert isinstance(turn, TurnBlock)
    assert changes == [Change("added", turn)]

    assert t.apply(ev(AssistantMessageDeltaData(message_id="m", delta_content="Lo"))) == [
        Change("updated", turn)
    ]
    requests = [ToolRequest(tool_call_id="c1", name="view", arguments={"path": "a"})]
    changes = t.apply(
        ev(AssistantMessageData(message_id="m", content="Look.", tool_requests=requests))
    )
    (tool,) = turn.tools
    assert changes == [Change("updated", turn), Change("added", tool, turn)]
    assert t.apply(ev(AssistantUsageData(model=MODEL, input_tokens=1, output_tokens=2))) == [
        Change("updated", turn)
    ]
    assert t.apply(ev(ToolExecutionStartData(tool_call_id="c1", tool_name="view"))) == [
        Change("updated", tool, turn)
    ]
    assert t.apply(ev(ToolExecutionCompleteData(tool_call_id="c1", success=True))) == [
        Change("updated", tool, turn)
    ]
    assert t.apply(ev(AssistantTurnEndData(turn_id="0"))) == [Change("updated", turn)]
    assert t.apply(ev(SessionIdleData())) == []
    # Tools stay nested in their turn: the top level is still the user and the turn.
    assert t.items == [user, turn]
    assert len({b.block_id for b in (user, turn, tool)}) == 3
