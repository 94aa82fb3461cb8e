"""ask_user and update_todos in the engine, the log, the fold, replay, exports and -p.

The model's question is recorded as ``user_input.requested`` / ``user_input.completed``
and its answer is the tool's result. Nobody is asked in autopilot or with ``-p``: the
model reads that the user is not available and decides. The todo list changes with
``session.todos_changed`` (a signal, as in the SDK), its rows taken from the
update_todos call. Every new line parses with the official SDK parser.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import (
    ToolExecutionCompleteData,
    UserInputCompletedData,
    UserInputRequestedData,
)
from agent.events.todos import TodoItem, TodoStatus
from agent.log.store import SessionStore, read_events
from agent.session.session import Session
from agent.session.user_input import NoOneToAsk, UserAnswer, UserQuestion
from agent.transcript.blocks import NoticeBlock, TurnBlock
from agent.transcript.fold import fold
from app.cli import main
from app.export import export_session
from tests.support.ask_user import CHOICES, QUESTION, ask, todos
from tests.support.paths import FIXTURES
from tests.support.scripting import new_session, scripted

session_events = pytest.importorskip("copilot.generated.session_events")

REAL = FIXTURES / "copilot-real"


def results(events: list[Any]) -> dict[str, ToolExecutionCompleteData]:
    out = {}
    for event in events:
        if isinstance(event.data, ToolExecutionCompleteData):
            out[event.data.tool_call_id] = event.data
    return out


def content(data: ToolExecutionCompleteData) -> str:
    assert data.result is not None
    return data.result.content


class FakeUser:
    """Answers each question with the next prepared answer; records what was asked."""

    def __init__(self, *answers: UserAnswer) -> None:
        self.answers = list(answers)
        self.asked: list[UserQuestion] = []

    async def __call__(self, question: UserQuestion) -> UserAnswer:
        self.asked.append(question)
        return self.answers.pop(0)


# --- asking ----------------------------------------------------------------------------


async def test_the_answer_is_the_tool_result_and_both_events_are_recorded(
    tmp_path: Path,
) -> None:
    model = scripted([{"text": "", "tool_calls": [ask()]}, {"text": "Using MySQL."}])
    session, rec = await new_session(model, tmp_path)
    user = FakeUser(UserAnswer("MySQL", was_freeform=False))
    session.questions.asker = user
    await session.send_and_wait("set up storage")
    await session.close()

    assert [q.question for q in user.asked] == [QUESTION]
    assert user.asked[0].choices == tuple(CHOICES)
    assert user.asked[0].tool_call_id == "call_0_0"
    requested = rec.of("user_input.requested")[0].data
    completed = rec.of("user_input.completed")[0].data
    assert isinstance(requested, UserInputRequestedData)
    assert isinstance(completed, UserInputCompletedData)
    assert (requested.question, requested.choices, requested.allow_freeform) == (
        QUESTION,
        CHOICES,
        True,
    )
    assert requested.tool_call_id == "call_0_0"
    assert (completed.request_id, completed.answer, completed.was_freeform) == (
        requested.request_id,
        "MySQL",
        False,
    )
    assert content(results(rec.events)["call_0_0"]) == "The user chose: MySQL"
    # The model reads the answer in its next turn.
    tool_messages = [m for m in model.seen_messages[1] if m.get("role") == "tool"]
    assert tool_messages[-1]["content"] == "The user chose: MySQL"


@pytest.mark.parametrize("mode", ["autopilot", "interactive"])
async def test_nobody_is_asked_in_autopilot_or_with_nobody_attached(
    tmp_path: Path, mode: str
) -> None:
    """Autopilot never asks (even with an asker); interactive without one (-p) cannot."""
    model = scripted(
        [
            {"text": "", "tool_calls": [ask()]},
            {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"summary": "ok"}}]},
        ]
    )
    session, rec = await new_session(model, tmp_path, mode=mode)  # type: ignore[arg-type]
    user = FakeUser(UserAnswer("MySQL", was_freeform=False))
    if mode == "autopilot":
        session.questions.asker = user
    await session.send_and_wait("set up storage")
    await session.close()

    assert user.asked == []
    assert rec.of("user_input.requested") == [] and rec.of("user_input.completed") == []
    told = content(results(rec.events)["call_0_0"])
    assert "not available" in told and "decide yourself" in told
    assert rec.types().count("session.idle") == 1


async def test_an_app_that_answers_in_every_mode_is_asked_in_autopilot(tmp_path: Path) -> None:
    model = scripted([{"text": "", "tool_calls": [ask()]}, {"text": "ok"}])
    session, rec = await new_session(model, tmp_path, mode="autopilot")
    session.questions.asker = FakeUser(UserAnswer("Postgres please", was_freeform=True))
    session.questions.ask_in_every_mode = True
    await session.send_and_wait("set up storage")
    await session.close()
    assert content(results(rec.events)["call_0_0"]) == "The user answered: Postgres please"


async def test_an_asker_that_finds_nobody_tells_the_model_to_decide(tmp_path: Path) -> None:
    model = scripted([{"text": "", "tool_calls": [ask()]}, {"text": "ok"}])
    session, rec = await new_session(model, tmp_path)

    async def gone(question: UserQuestion) -> UserAnswer:
        raise NoOneToAsk("the app is not connected")

    session.questions.asker = gone
    await session.send_and_wait("set up storage")
    await session.close()
    told = content(results(rec.events)["call_0_0"])
    assert "not available" in told and "the app is not connected" in told
    completed = rec.of("user_input.completed")[0].data
    assert isinstance(completed, UserInputCompletedData) and completed.answer is None


async def test_an_abort_while_asked_closes_the_question_and_idles_once(tmp_path: Path) -> None:
    model = scripted([{"text": "", "tool_calls": [ask()]}, {"text": "never"}])
    session, rec = await new_session(model, tmp_path)
    asked = asyncio.Event()

    async def waits_forever(question: UserQuestion) -> UserAnswer:
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    session.questions.asker = waits_forever
    running = session.send("set up storage")
    await asyncio.wait_for(asked.wait(), 10)
    session.abort()
    outcome = await asyncio.wait_for(running, 10)
    await session.close()
    assert outcome.aborted
    completed = rec.of("user_input.completed")[0].data
    assert isinstance(completed, UserInputCompletedData) and completed.answer is None
    assert rec.types().count("session.idle") == 1 and rec.types()[-1] == "session.idle"
    assert model.calls == 1


async def test_a_bad_ask_user_call_fails_readably_and_asks_nobody(tmp_path: Path) -> None:
    bad = {"name": "ask_user", "arguments": {"choices": ["a"]}}  # no question
    model = scripted([{"text": "", "tool_calls": [bad]}, {"text": "ok"}])
    session, rec = await new_session(model, tmp_path)
    user = FakeUser()
    session.questions.asker = user
    await session.send_and_wait("go")
    await session.close()
    done = results(rec.events)["call_0_0"]
    assert not done.success and done.error is not None
    assert "missing required field 'question'" in done.error.message
    assert user.asked == [] and rec.of("user_input.requested") == []


# --- todos -----------------------------------------------------------------------------


A = ("a", "Reading", "done")
B = ("b", "Writing", "in_progress")
C = ("c", "Testing", "pending")


async def test_todos_change_with_each_call_and_come_back_on_resume(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    model = scripted(
        [
            {
                "text": "",
                "tool_calls": [todos(("a", "Reading", "in_progress"), (*B[:2], "pending"))],
            },
            {"text": "", "tool_calls": [todos(A, B, C)]},
            {"text": "Halfway."},
        ]
    )
    session, rec = await new_session(model, tmp_path, store=store)
    await session.send_and_wait("work in steps")
    assert [(i.id, i.status) for i in session.todos.items] == [
        ("a", "done"),
        ("b", "in_progress"),
        ("c", "pending"),
    ]
    assert len(rec.of("session.todos_changed")) == 2
    assert content(results(rec.events)["call_1_0"]).splitlines() == [
        "Todos (1/3 done):",
        "✓ Reading [a]",
        "▸ Writing [b]",
        "○ Testing [c]",
    ]
    session_id = session.id
    await session.close()

    resumed = await Session.resume(store=store, session_id=session_id, model=model)
    try:
        assert [(i.id, i.status) for i in resumed.todos.items] == [
            ("a", "done"),
            ("b", "in_progress"),
            ("c", "pending"),
        ]
    finally:
        await resumed.close()


async def test_a_bad_todo_list_changes_nothing(tmp_path: Path) -> None:
    twice = todos(("a", "One", "pending"), ("a", "Two", "pending"))
    unknown = {
        "name": "update_todos",
        "arguments": {"todos": [{"id": "x", "title": "X", "status": "later"}]},
    }
    model = scripted(
        [
            {"text": "", "tool_calls": [todos(A)]},
            {"text": "", "tool_calls": [twice, unknown]},
            {"text": "ok"},
        ]
    )
    session, rec = await new_session(model, tmp_path)
    await session.send_and_wait("go")
    await session.close()
    done = results(rec.events)
    assert "ids must be unique; repeated: a" in content(done["call_1_0"])
    assert not done["call_1_1"].success
    assert len(rec.of("session.todos_changed")) == 1
    assert session.todos.items == [TodoItem(id="a", title="Reading", status="done")]
    t = fold(rec.events)
    assert t.todos.items == session.todos.items


# --- the log: official parser, replay, exports, -p -------------------------------------------


async def asked_and_listed(tmp_path: Path) -> Path:
    """A stored session with a todo list and an answered question; its events.jsonl."""
    store = SessionStore(tmp_path / "home")
    model = scripted(
        [
            {"text": "", "tool_calls": [todos(A, B, C)]},
            {"text": "", "tool_calls": [ask()]},
            {"text": "Going with SQLite."},
        ]
    )
    session, _ = await new_session(model, tmp_path, store=store)
    session.questions.asker = FakeUser(UserAnswer("SQLite", was_freeform=False))
    await session.send_and_wait("set up storage")
    await session.close()
    return store.events_path(session.id)


async def test_every_new_line_parses_with_the_official_parser(tmp_path: Path) -> None:
    path = await asked_and_listed(tmp_path)
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    seen = set()
    for line in lines:
        parsed = session_events.session_event_from_dict(line)
        assert parsed.type.value == line["type"]
        seen.add(line["type"])
        if line["type"] == "user_input.requested":
            assert parsed.data.question == QUESTION and parsed.data.choices == CHOICES
            assert parsed.data.tool_call_id == "call_1_0"
        if line["type"] == "user_input.completed":
            assert parsed.data.answer == "SQLite" and parsed.data.was_freeform is False
    assert {"user_input.requested", "user_input.completed", "session.todos_changed"} <= seen


async def test_replay_and_both_exports_draw_the_question_the_answer_and_the_todos(
    tmp_path: Path,
) -> None:
    path = await asked_and_listed(tmp_path)
    t = fold(read_events(path).events, replay=True)
    lines = [b.message for b in t.items if isinstance(b, NoticeBlock)]
    assert f"? {QUESTION} → SQLite" in lines
    assert "todos 1/3 · ▸ Writing" in lines
    assert t.todos.items is not None and len(t.todos.items) == 3
    markdown = export_session(path, "md")
    assert f"*? {QUESTION} → SQLite*" in markdown
    assert "*todos 1/3 · ▸ Writing*" in markdown
    assert "✓ Reading [a]" in markdown  # the list itself, in the update_todos call's output
    page = export_session(path, "html")
    assert f"? {QUESTION} → SQLite" in page
    assert "todos 1/3 · ▸ Writing" in page


def test_a_question_from_another_producer_without_a_tool_call_is_drawn() -> None:
    """user_input events as the SDK defines them, whoever wrote them; an answer to an
    unknown question stays a raw row, never dropped."""
    from agent.events.schema import event_from_dict

    raw = [
        {"type": "user_input.requested", "data": {"requestId": "r1", "question": "Ship it?"}},
        {
            "type": "user_input.completed",
            "data": {"requestId": "r1", "answer": "yes", "wasFreeform": True},
        },
        {"type": "user_input.completed", "data": {"requestId": "r9", "answer": "??"}},
        {"type": "session.todos_changed", "data": {}},
    ]
    events = [
        event_from_dict({**e, "id": f"00000000-0000-4000-8000-00000000000{i}", "timestamp": ""})
        for i, e in enumerate(raw)
    ]
    t = fold(events, replay=True)
    drawn = [getattr(b, "message", None) or getattr(b, "type", None) for b in t.items]
    # A todo signal whose list is unknown (Copilot keeps its list in SQL) still shows.
    assert drawn == ["? Ship it? → “yes” (typed)", "user_input.completed", "todos changed"]


def test_the_real_copilot_question_session_replays_and_exports_its_question() -> None:
    """In the recorded Copilot session the model was told to ask in plain text (not with
    ask_user): the question is its reply, and replay and exports show it."""
    path = REAL / "irrlicht-user-blocking-question" / "events.jsonl"
    question = "Do you want me to build a library, a CLI tool, or a web application?"
    t = fold(read_events(path).events, replay=True)
    turns = [b for b in t.items if isinstance(b, TurnBlock)]
    assert [turn.text for turn in turns] == [question]
    assert question in export_session(path, "md")
    assert question in export_session(path, "html")


def test_headless_tells_the_model_nobody_can_answer(
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    script = tmp_path / "s.json"
    turns = [
        {"text": "", "tool_calls": [todos(A, B, C), ask()]},
        {"text": "I chose SQLite myself."},
    ]
    script.write_text(json.dumps({"turns": turns}), "utf-8")
    capsys.readouterr()
    code = main(["-p", "set up storage", "--model", f"scripted:{script}"])
    out, err = capsys.readouterr()
    assert code == 0 and out == "I chose SQLite myself.\n"
    assert f"✓ ask_user question={QUESTION}" in err
    assert "✓ update_todos todos 1/3 · ▸ Writing" in err  # the progress, not the list's JSON
    [folder] = [p for p in (loopdeck_home / "session-state").iterdir() if p.is_dir()]
    lines = [json.loads(x) for x in (folder / "events.jsonl").read_text("utf-8").splitlines()]
    assert not [x for x in lines if x["type"].startswith("user_input.")]
    [done] = [
        x
        for x in lines
        if x["type"] == "tool.execution_complete" and x["data"]["toolCallId"] == "call_0_1"
    ]
    assert "not available" in done["data"]["result"]["content"]


def test_a_long_todo_list_shows_the_rows_around_the_current_item() -> None:
    from widgets.todo_panel import todo_text

    def steps(current: int, count: int) -> list[TodoItem]:
        def status(n: int) -> TodoStatus:
            return "done" if n < current else "in_progress" if n == current else "pending"

        return [
            TodoItem(id=f"t{n}", title=f"Step {n}", status=status(n)) for n in range(1, count + 1)
        ]

    assert todo_text(steps(6, 9)).plain.splitlines() == [
        "Todos 5/9",
        "… 3 more above",
        "✓ Step 4",
        "✓ Step 5",
        "▸ Step 6",
        "○ Step 7",
        "○ Step 8",
        "○ Step 9",
    ]
    assert todo_text(steps(2, 9)).plain.splitlines() == [
        "Todos 1/9",
        "✓ Step 1",
        "▸ Step 2",
        "○ Step 3",
        "○ Step 4",
        "○ Step 5",
        "○ Step 6",
        "… 3 more",
    ]
    assert todo_text(steps(2, 3)).plain.splitlines() == [
        "Todos 1/3",
        "✓ Step 1",
        "▸ Step 2",
        "○ Step 3",
    ]


def test_the_card_line_of_a_todo_call_is_its_progress() -> None:
    from agent.events import todos
    from widgets.format import summarize_arguments

    args = {"todos": [{"id": "a", "title": "A", "status": "done"}, {"id": "b", "title": "B"}]}
    items = todos.parse_todos(args)
    assert items is not None
    assert summarize_arguments(todos.TOOL_NAME, args) == todos.summary(items)
