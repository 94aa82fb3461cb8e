"""ask_user and the todo list in the real app, driven with Pilot over scripted sessions.

The model's question appears inline at the end of the timeline: a choice is picked by
its number (or Up/Down and Enter), any other key starts a typed answer. Keys typed
just before the question appears never answer it. The answer reaches the model as the
tool's result and stays in the timeline under the question. The todo list the model
keeps with update_todos is pinned above the prompt, with its progress, while it has
open items; each change is a line in the timeline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input

import widgets.arming as arming
from agent.events.schema import ToolExecutionCompleteData, UserInputCompletedData
from tests.support.ask_user import CHOICES, QUESTION, ask, todos
from tests.support.clock import quick_arm as quick_arm  # the fixture
from tests.support.permission_ui import SIZE, Harness, wait_idle
from tests.support.pilot import text_of, type_text, wait_for
from tests.support.timed_keys import paste_at, press_at
from widgets.ask_user_prompt import AskUserPromptView
from widgets.message_blocks import NoticeView

ASK_THEN_ANSWER = [{"text": "One question first.", "tool_calls": [ask()]}, {"text": "Noted."}]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def question_view(h: Harness) -> AskUserPromptView | None:
    views = list(h.app.query(AskUserPromptView))
    assert len(views) <= 1, "two questions at once"
    return views[0] if views else None


async def shown(pilot: Pilot[Any], h: Harness) -> AskUserPromptView:
    await wait_for(pilot, lambda: question_view(h) is not None, "the question")
    view = question_view(h)
    assert view is not None
    await wait_for(pilot, lambda: view.arming.armed, "the question to take keys")
    return view


async def send(pilot: Pilot[Any], h: Harness, text: str) -> None:
    await wait_for(pilot, lambda: h.app.session is not None, "the session to open")
    h.app.prompt.text = text
    await pilot.press("enter")


def answers(h: Harness) -> list[tuple[str | None, bool | None]]:
    out = []
    for event in h.recorder.of("user_input.completed"):
        assert isinstance(event.data, UserInputCompletedData)
        out.append((event.data.answer, event.data.was_freeform))
    return out


def ask_result(h: Harness) -> str:
    for event in h.recorder.of("tool.execution_complete"):
        assert isinstance(event.data, ToolExecutionCompleteData)
        if event.data.tool_call_id == "call_0_0" and event.data.result is not None:
            return event.data.result.content
    raise AssertionError("ask_user did not complete")


def notices(h: Harness) -> list[str]:
    return [text_of(view) for view in h.app.query(NoticeView)]


# --- ask_user ----------------------------------------------------------------------------


@pytest.mark.usefixtures("quick_arm")
async def test_a_choice_answers_by_its_number(workspace: Path) -> None:
    h = Harness(ASK_THEN_ANSWER, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "set up the storage")
        view = await shown(pilot, h)
        drawn = text_of(view)
        assert QUESTION in drawn
        assert all(f"{n} {c}" in drawn for n, c in enumerate(CHOICES, start=1))
        assert view.has_focus
        await pilot.press("2")
        await wait_idle(pilot, h)
        assert answers(h) == [("MySQL", False)]
        assert ask_result(h) == "The user chose: MySQL"
        assert question_view(h) is None
        assert h.app.prompt.has_focus
        assert f"? {QUESTION} → MySQL" in "\n".join(notices(h))


@pytest.mark.usefixtures("quick_arm")
async def test_arrows_and_enter_pick_the_marked_choice(workspace: Path) -> None:
    h = Harness(ASK_THEN_ANSWER, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "set up the storage")
        await shown(pilot, h)
        await pilot.press("down", "down", "down", "up", "enter")
        await wait_idle(pilot, h)
        assert answers(h) == [("SQLite", False)]


@pytest.mark.usefixtures("quick_arm")
async def test_a_typed_answer_is_sent_with_enter(workspace: Path) -> None:
    h = Harness(ASK_THEN_ANSWER, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "set up the storage")
        await shown(pilot, h)
        await type_text(pilot, "DuckDB 1.1")
        await pilot.pause()
        assert answers(h) == []  # a digit inside a typed answer picks nothing
        await pilot.press("enter")
        await wait_idle(pilot, h)
        assert answers(h) == [("DuckDB 1.1", True)]
        assert ask_result(h) == "The user answered: DuckDB 1.1"
        assert f"? {QUESTION} → “DuckDB 1.1” (typed)" in "\n".join(notices(h))


@pytest.mark.usefixtures("quick_arm")
async def test_a_question_without_choices_takes_text(workspace: Path) -> None:
    turns = [
        {"text": "", "tool_calls": [ask("What should the CLI be called?", None)]},
        {"text": "ok"},
    ]
    h = Harness(turns, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "name it")
        await shown(pilot, h)
        await pilot.press("enter")  # nothing typed: nothing sent
        await type_text(pilot, "deckard")
        await pilot.press("enter")
        await wait_idle(pilot, h)
        assert answers(h) == [("deckard", True)]


async def test_keys_typed_as_the_question_appears_do_not_answer_it(workspace: Path) -> None:
    """A "1" and an Enter meant for the chat prompt must not pick a choice."""
    h = Harness(ASK_THEN_ANSWER, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "set up the storage")
        await wait_for(pilot, lambda: question_view(h) is not None, "the question")
        view = question_view(h)
        assert view is not None
        await wait_for(pilot, lambda: view.arming.drawn, "the question to be drawn")
        painted = view.arming.shown_at
        for at in (painted - 0.01, painted + arming.ARM_DELAY - 0.01):
            for key in ("1", "enter", "x"):
                await press_at(pilot, key, at)
        await paste_at(pilot, "typed for the prompt", painted - 0.01)
        await pilot.pause()
        assert not view.answer.done()
        assert answers(h) == []
        assert view.has_focus and question_view(h) is view
        assert not list(view.query("Input"))  # no typed answer was started either

        # A key that arrived ARM_DELAY after the paint answers.
        await press_at(pilot, "3", painted + arming.ARM_DELAY + 0.01)
        await wait_idle(pilot, h)
        assert answers(h) == [("SQLite", False)]


async def answer_shown(pilot: Pilot[Any], h: Harness) -> AskUserPromptView:
    """The question, painted; keys sent now count (ARM_DELAY is 0 in these tests)."""
    await wait_for(pilot, lambda: question_view(h) is not None, "the question")
    view = question_view(h)
    assert view is not None
    await wait_for(pilot, lambda: view.arming.drawn, "the question to be drawn")
    return view


async def test_a_fast_burst_of_keys_is_the_whole_answer(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys typed faster than the focus moves to the answer field are all kept, in order
    (they reached the question, which dropped all but the first)."""
    monkeypatch.setattr(arming, "ARM_DELAY", 0.0)
    h = Harness(ASK_THEN_ANSWER, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "set up the storage")
        view = await answer_shown(pilot, h)
        at = view.arming.shown_at + 0.5
        events_ = [events.Key(k, k) for k in "redis"]
        events_ += [events.Key("backspace", None), events.Key("s", "s")]
        events_ += [events.Key("enter", "\r")]
        for event in events_:  # all queued before the app handles any: a burst
            event.time = at
            event.set_sender(h.app)
            h.app.post_message(event)
        await wait_idle(pilot, h)
        assert answers(h) == [("redis", True)]


async def test_a_paste_is_the_whole_answer(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paste into the question starts the typed answer with all of its text, and a
    second paste into the answer keeps every line too."""
    monkeypatch.setattr(arming, "ARM_DELAY", 0.0)
    h = Harness(ASK_THEN_ANSWER, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "set up the storage")
        view = await answer_shown(pilot, h)
        at = view.arming.shown_at + 0.5
        await paste_at(pilot, "CockroachDB, because", at)
        await wait_for(pilot, lambda: bool(list(view.query(Input))), "the typed answer")
        await wait_for(pilot, lambda: view.query_one(Input).has_focus, "the answer's focus")
        await paste_at(pilot, " it scales\rand it speaks Postgres\n", at)
        await pilot.press("enter")
        await wait_idle(pilot, h)
        assert answers(h) == [("CockroachDB, because it scales and it speaks Postgres", True)]


@pytest.mark.usefixtures("quick_arm")
async def test_esc_while_asked_aborts_and_leaves_the_question_unanswered(
    workspace: Path,
) -> None:
    h = Harness(ASK_THEN_ANSWER, workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await send(pilot, h, "set up the storage")
        await shown(pilot, h)
        await pilot.press("escape")
        await wait_idle(pilot, h)
        assert answers(h) == [(None, None)]
        assert question_view(h) is None
        assert f"? {QUESTION} — not answered" in "\n".join(notices(h))
        assert h.recorder.types().count("session.idle") == 1
        assert h.model.calls == 1  # the model was not called again


# --- todos -------------------------------------------------------------------------------


@pytest.mark.usefixtures("quick_arm")
async def test_the_todo_list_is_pinned_with_its_progress_while_items_are_open(
    workspace: Path,
) -> None:
    read, change, check = (
        ("read", "Reading the code"),
        ("change", "Changing it"),
        ("check", "Checking"),
    )
    turns = [
        {
            "text": "",
            "tool_calls": [
                todos((*read, "in_progress"), (*change, "pending"), (*check, "pending"))
            ],
        },
        {
            "text": "",
            "tool_calls": [
                todos((*read, "done"), (*change, "in_progress"), (*check, "pending")),
                ask("Shall I go on?", ["Yes", "No"]),
            ],
        },
        {"text": "", "tool_calls": [todos((*read, "done"), (*change, "done"), (*check, "done"))]},
        {"text": "All three done."},
    ]
    h = Harness(turns, workspace)
    panel = h.app.todo_panel
    async with h.app.run_test(size=SIZE) as pilot:
        assert not panel.display  # no list yet
        await send(pilot, h, "do it in steps")
        await shown(pilot, h)  # the second list is out; the model waits on the question
        assert panel.display
        # (the panel's left border draws as a bar before each line)
        pinned = [line.lstrip("█▌▐ ") for line in text_of(panel).splitlines()]
        assert pinned == [
            "Todos 1/3",
            "✓ Reading the code",
            "▸ Changing it",
            "○ Checking",
        ]
        # The panel sits between the timeline and the prompt.
        assert panel.region.y >= h.app.timeline.region.bottom
        assert panel.region.bottom <= h.app.prompt.region.y
        await pilot.press("1")
        await wait_idle(pilot, h)
        assert not panel.display  # every item done: nothing left to pin
        assert len(h.recorder.of("session.todos_changed")) == 3
        lines = [n for n in notices(h) if "todos" in n]
        assert lines == [
            "• todos 0/3 · ▸ Reading the code",
            "• todos 1/3 · ▸ Changing it",
            "• todos 3/3 · all done",
        ]


async def test_a_resumed_session_pins_its_open_todo_list(tmp_path: Path) -> None:
    from agent.log.store import SessionStore
    from agent.session.session import Session
    from app.app import LoopdeckApp
    from tests.support.scripting import scripted

    store = SessionStore(tmp_path / "home")
    model = scripted(
        [
            {
                "text": "",
                "tool_calls": [todos(("a", "Reading", "done"), ("b", "Writing", "pending"))],
            },
            {"text": "Stopping here."},
        ]
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    first = await Session.create(model=model, cwd=ws, store=store)
    await first.send_and_wait("work in steps")
    await first.close()

    async def opener() -> Session:
        return await Session.resume(store=store, session_id=first.id, model=model)

    app = LoopdeckApp(opener)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None, "the session to resume")
        await pilot.pause()
        assert app.todo_panel.display
        pinned = [line.lstrip("█▌▐ ") for line in text_of(app.todo_panel).splitlines()]
        assert pinned == ["Todos 1/2", "✓ Reading", "○ Writing"]
