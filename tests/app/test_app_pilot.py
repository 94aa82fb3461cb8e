"""The real terminal app driven with Textual's Pilot over scripted sessions.

Each test builds ``LoopdeckApp`` around an opener that creates a :class:`Session`
with a scripted model in a temp workspace, then types, presses keys and reads what
the widgets render.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from textual.widgets import Static

import app.stop_keys as stop_keys
import widgets.turn_view as turn_view
from agent.session.session import Session
from app.app import LoopdeckApp
from app.session_switch import StartupError
from tests.support.app_harness import (
    SIZE,
    FakeGateTool,
    Harness,
    keep_my_rules,
    send,
    settled,
    started,
    wait_idle,
)
from tests.support.app_harness import every_turn_live as every_turn_live  # autouse
from tests.support.app_harness import workspace as workspace  # the fixture
from tests.support.clock import FakeMonotonic
from tests.support.pilot import notifications, text_of, texts, wait_for
from widgets.message_blocks import (
    AbortView,
    ErrorView,
    NoticeView,
    NudgeView,
    TaskCompleteView,
    UserMessageView,
)
from widgets.tool_card import ToolCard
from widgets.turn_view import TurnHeader, TurnView

# --- 1. a prompt typed and sent -------------------------------------------------------


async def test_typed_prompt_is_sent_and_answered(workspace: Path) -> None:
    h = Harness([{"text": "Hello there, **human**."}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await pilot.press(*"hello")
        assert h.app.prompt.text == "hello"
        await pilot.press("enter")
        await wait_idle(pilot, h)

        assert h.app.prompt.text == ""
        users = h.app.query(UserMessageView)
        assert len(users) == 1 and users[0].block.content == "hello"
        assert "❯ hello" in text_of(users[0])
        turns = list(h.app.query(TurnView))
        assert len(turns) == 1 and turns[0].block.status == "done"
        turn_text = text_of(turns[0])
        assert "Turn 1" in turn_text
        assert "Hello there, human." in turn_text  # Markdown rendered, not raw **
        assert "-failed" not in turns[0].classes
        assert [m["content"] for m in h.model.seen_messages[0] if m["role"] == "user"] == ["hello"]
        status = text_of(h.app.status)
        assert "turns 1" in status and "idle" in status


# --- 2. tool cards --------------------------------------------------------------------


async def test_tool_cards_appear_complete_fail_and_expand(workspace: Path) -> None:
    h = Harness(
        [
            {
                "text": "Looking around.",
                "tool_calls": [
                    {"name": "grep", "arguments": {"pattern": "def handler_"}},
                    {"name": "glob", "arguments": {"pattern": "**/*.py"}},
                ],
            },
            {"text": "", "tool_calls": [{"name": "view", "arguments": {"path": "missing.txt"}}]},
            {"text": "Six handlers in src/app.py."},
        ],
        workspace,
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "find the handlers")
        await wait_idle(pilot, h)

        cards = list(h.app.query(ToolCard))
        assert [c.block.name for c in cards] == ["grep", "glob", "view"]
        grep, glob, view = cards
        assert grep.block.status == "success" and "-success" in grep.classes
        assert glob.block.status == "success" and "-success" in glob.classes
        assert view.block.status == "failure" and "-failure" in view.classes
        assert "-success" not in view.classes

        # Each card sits in its turn, under the turn header.
        turns = list(h.app.query(TurnView))
        assert len(turns) == 3
        kids = list(turns[0].children)
        assert isinstance(kids[0], TurnHeader) and kids[-2:] == [grep, glob]
        assert "Looking around." in text_of(turns[0]).split("✓ grep")[0]
        assert list(turns[1].query(ToolCard)) == [view]

        grep_text = text_of(grep)
        assert "✓ grep" in grep_text and "def handler_" in grep_text
        assert "src/app.py:1:def handler_0():" in grep_text
        assert "handler_5" not in grep_text  # preview only
        assert "3 more lines (enter to expand)" in grep_text
        glob_text = text_of(glob)
        assert "✓ glob" in glob_text and "**/*.py" in glob_text
        view_text = text_of(view)
        assert "✗ view" in view_text and "missing.txt" in view_text
        assert "does not exist" in view_text

        # Enter on a focused card expands it to the full output, and back.
        grep.focus()
        await pilot.press("enter")
        expanded = text_of(grep)
        assert grep.expanded
        assert "src/app.py:16:def handler_5():" in expanded
        assert "more lines" not in expanded
        await pilot.press("enter")
        assert not grep.expanded and "handler_5" not in text_of(grep)
        assert h.app.query(UserMessageView).first().block.content == "find the handlers"

        # A click expands too.
        glob.scroll_visible(animate=False)
        await pilot.pause()
        assert "tests/test_app.py" not in text_of(glob)
        await pilot.click(glob)
        assert glob.expanded
        assert "tests/test_app.py" in text_of(glob)


async def test_reply_text_survives_a_turn_ending_before_its_first_flush(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The turn is on screen while it runs (held by the gate tool) and ends before the
    # streamed text is flushed: the final render creates the Markdown and fills it at
    # once. It used to be wiped by the Markdown's own first render on mount.
    monkeypatch.setattr(turn_view, "FLUSH_SECONDS", 30.0)
    gate = FakeGateTool()
    h = Harness(
        [
            {"text": "Looking around.", "tool_calls": [{"name": "gate", "arguments": {}}]},
            {"text": "Done."},
        ],
        workspace,
        registry_factory=gate.registry,
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "go")
        await wait_for(pilot, lambda: bool(h.app.query(ToolCard)), "the gate card")
        turn = h.app.query_one(TurnView)
        assert turn.block.text == "Looking around." and turn.block.status == "running"
        gate.opened.set()
        await wait_idle(pilot, h)
        await settled(pilot)
        assert "Looking around." in text_of(turn)
        assert "Done." in text_of(list(h.app.query(TurnView))[1])


# --- 3. Esc aborts ---------------------------------------------------------------------


async def test_escape_aborts_the_running_turn(workspace: Path) -> None:
    h = Harness([{"text": "a long and slow answer " * 20, "delay_ms": 10_000}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "take your time")
        await wait_for(
            pilot,
            lambda: h.session.busy and bool(h.app.query(TurnView)),
            "the turn to start",
        )
        await pilot.pause(0.2)
        assert h.app.status.busy and "working" in text_of(h.app.status)
        assert "Esc aborts" in text_of(h.app.hint)

        pressed = time.monotonic()
        await pilot.press("escape")
        await wait_idle(pilot, h)
        assert time.monotonic() - pressed < 1.0

        assert len(h.app.query(AbortView)) == 1
        assert "Aborted" in text_of(h.app.query_one(AbortView))
        turn = h.app.query_one(TurnView)
        assert turn.block.status == "aborted"
        assert "-failed" in turn.classes
        assert "aborted" in text_of(turn.header)
        status = text_of(h.app.status)
        assert "idle" in status and "working" not in status
        assert "Esc aborts" not in text_of(h.app.hint)


# --- 4. Shift+Tab switches mode ---------------------------------------------------------


async def test_shift_tab_cycles_interactive_plan_autopilot(workspace: Path) -> None:
    h = Harness([{"text": "x"}], workspace, nudge_cap=5)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        assert h.session.mode == "interactive"
        assert "interactive" in text_of(h.app.status)

        await pilot.press("shift+tab")
        await pilot.pause()
        assert h.session.mode == "plan"
        assert texts(h.app, NoticeView) == ["• mode: interactive → plan"]
        assert "plan" in text_of(h.app.status) and "-plan" in h.app.status.classes

        await pilot.press("shift+tab")
        await keep_my_rules(pilot, h)  # asked once: the rules would deny edits and shell
        assert h.session.mode == "autopilot"
        notices = texts(h.app, NoticeView)
        assert notices == [
            "• mode: interactive → plan",
            "• autopilot permissions: keep my rules",
            "• mode: plan → autopilot",
        ]
        assert [e.type for e in h.recorder.events] == [
            "session.mode_changed",
            "elicitation.requested",
            "elicitation.completed",
            "session.mode_changed",
        ]
        status = text_of(h.app.status)
        assert "autopilot" in status and "0/5 nudges · my rules" in status
        assert "-autopilot" in h.app.status.classes and "-plan" not in h.app.status.classes
        assert h.app.prompt.text == ""  # the key did not reach the prompt

        await pilot.press("shift+tab")
        await pilot.pause()
        assert h.session.mode == "interactive"
        assert texts(h.app, NoticeView)[-1] == "• mode: autopilot → interactive"
        status = text_of(h.app.status)
        assert "interactive" in status and "autopilot" not in status
        assert "-autopilot" not in h.app.status.classes


# --- 5. autopilot: nudges then task_complete -------------------------------------------


async def test_autopilot_nudges_then_task_complete(workspace: Path) -> None:
    h = Harness(
        [
            {"text": "My plan is to look around."},
            {"text": "Still planning."},
            {
                "text": "",
                "tool_calls": [
                    {"name": "task_complete", "arguments": {"summary": "Renamed **main**."}}
                ],
            },
        ],
        workspace,
        mode="autopilot",
        nudge_cap=5,
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await keep_my_rules(pilot, h)  # asked before the first autopilot run
        await started(pilot, h)
        await send(pilot, h, "rename main")
        await wait_idle(pilot, h)

        nudges = texts(h.app, NudgeView)
        assert len(nudges) == 2
        assert "autopilot nudge 1 of 5" in nudges[0]
        assert "autopilot nudge 2 of 5" in nudges[1]
        assert "not yet marked the task as complete" in nudges[0]
        assert len(h.app.query(UserMessageView)) == 1  # nudges are not user messages

        done = h.app.query(TaskCompleteView)
        assert len(done) == 1
        done_text = text_of(done[0])
        assert "Task complete" in done_text and "Renamed main." in done_text
        # Timeline order: user, turn, nudge, turn, nudge, turn (task_complete), done.
        blocks = (UserMessageView, TurnView, NudgeView, TaskCompleteView)
        order = [type(w).__name__ for w in h.app.timeline.children if isinstance(w, blocks)]
        assert order == [
            "UserMessageView",
            "TurnView",
            "NudgeView",
            "TurnView",
            "NudgeView",
            "TurnView",
            "TaskCompleteView",
        ]
        assert "2/5" in text_of(h.app.status)


# --- 6. prompt history and new lines ------------------------------------------------------


async def test_history_recall_and_newlines(workspace: Path) -> None:
    h = Harness([{"text": "one"}, {"text": "two"}, {"text": "three"}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        prompt = h.app.prompt
        await send(pilot, h, "first")
        await wait_idle(pilot, h, 1)
        await send(pilot, h, "second")
        await wait_idle(pilot, h, 2)

        await pilot.press(*"dra")
        await pilot.press("up")
        assert prompt.text == "second"
        await pilot.press("up")
        assert prompt.text == "first"
        await pilot.press("up")
        assert prompt.text == "first"  # the oldest stays
        await pilot.press("down")
        assert prompt.text == "second"
        await pilot.press("down")
        assert prompt.text == "dra"  # the draft comes back
        prompt.clear()

        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        await pilot.pause()
        assert prompt.text == "a\nb\nc"
        assert h.idles() == 2 and len(h.recorder.of("user.message")) == 2  # nothing sent

        await pilot.press("enter")
        await wait_idle(pilot, h, 3)
        assert prompt.text == ""
        users = h.app.query(UserMessageView)
        assert [u.block.content for u in users] == [
            "first",
            "second",
            "a\nb\nc",
        ]
        assert text_of(users[-1]).splitlines()[-1].endswith("c")
        await pilot.press("up")
        assert prompt.text == "a\nb\nc"


# --- 7. typing while busy queues ------------------------------------------------------------


async def test_message_sent_while_busy_is_queued_then_sent(workspace: Path) -> None:
    gate = FakeGateTool()
    h = Harness(
        [
            {"text": "", "tool_calls": [{"name": "gate", "arguments": {}}]},
            {"text": "first reply"},
            {"text": "second reply"},
        ],
        workspace,
        registry_factory=gate.registry,
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "one")
        await wait_for(
            pilot,
            lambda: h.app.status.busy and bool(h.app.query(ToolCard)),
            "the first send to reach the gate",
        )
        # A send to an idle session is not "queued", even for the moment before it runs.
        assert not any(m.startswith("Queued") for m in notifications(h.app))
        await send(pilot, h, "two")
        await pilot.pause()

        assert h.session.queued == 1
        assert "1 queued" in text_of(h.app.status)
        assert any(m.startswith("Queued") for m in notifications(h.app))
        assert h.app.prompt.text == ""
        await pilot.pause(0.1)
        assert h.idles() == 0 and h.session.queued == 1  # it waits for the first

        gate.opened.set()
        await wait_idle(pilot, h, 2)
        assert h.idles() == 2 and h.session.queued == 0
        types = h.recorder.types()
        idles = [i for i, t in enumerate(types) if t == "session.idle"]
        users = [i for i, t in enumerate(types) if t == "user.message"]
        assert len(users) == 2 and users[0] < idles[0] < users[1] < idles[1]
        assert [u.block.content for u in h.app.query(UserMessageView)] == ["one", "two"]
        turns = [text_of(t) for t in h.app.query(TurnView)]
        assert len(turns) == 3
        assert "gate opened" in turns[0]
        assert "first reply" in turns[1] and "second reply" in turns[2]
        status = text_of(h.app.status)
        assert "queued" not in status and "idle" in status


# --- 8. Ctrl+C twice quits ----------------------------------------------------------------


async def test_ctrl_c_once_warns_twice_quits(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stop_keys, "time", FakeMonotonic())  # the presses are "quick"
    h = Harness([{"text": "x"}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert h.app.is_running and h.app.return_value is None
        assert "Press Ctrl+C again to quit." in notifications(h.app)

        await pilot.press("ctrl+c")
        await pilot.pause()
        assert h.app.return_value == 0
        assert h.app._exit


async def test_ctrl_c_presses_far_apart_do_not_quit(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app's clock, moved by the test: "far apart" and "quick" do not depend on how
    # fast a loaded machine delivers the key presses.
    clock = FakeMonotonic()
    monkeypatch.setattr(stop_keys, "time", clock)
    h = Harness([{"text": "x"}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await pilot.press("ctrl+c")
        clock.now += stop_keys.QUIT_WINDOW + 0.1
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert h.app.is_running and h.app.return_value is None
        # The second press armed the window again: a quick third one quits.
        clock.now += stop_keys.QUIT_WINDOW - 0.1
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert h.app.return_value == 0


# --- 9. a provider error --------------------------------------------------------------------


async def test_auth_error_shows_an_error_view_with_a_hint(workspace: Path) -> None:
    h = Harness([{"error": {"type": "auth", "message": "bad key"}}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "hi")
        await wait_idle(pilot, h)

        errors = h.app.query(ErrorView)
        assert len(errors) == 1
        error_text = text_of(errors[0])
        assert "Error" in error_text and "(auth)" in error_text and "bad key" in error_text
        assert "API key" in error_text
        turn = h.app.query_one(TurnView)
        assert turn.block.status == "error" and "-failed" in turn.classes
        assert h.model.calls == 1  # auth is not retried
        assert "idle" in text_of(h.app.status)


# --- 10. start-up failure ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "No model is configured. Pass --model or set LOOPDECK_MODEL.",
        # Brackets are text, not markup (a stray closing tag used to crash the app).
        "Cannot read config file /home/u/[old]/config.toml: closing [/bold] tag",
    ],
)
async def test_startup_failure_is_shown_not_raised(message: str) -> None:
    async def opener() -> Session:
        raise StartupError(message)

    app = LoopdeckApp(opener)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(app.query(".startup-error")), "the startup error")
        await pilot.pause()
        shown = app.query_one(".startup-error", Static)
        assert message in text_of(shown)
        assert "no session" in text_of(app.status)
        assert app.session is None and app.is_running

        # Sending says why nothing happens (not "still opening"), and keeps running.
        await pilot.press(*"hi", "enter")
        await pilot.pause()
        assert any(message in m for m in notifications(app))
        assert not any("still opening" in m for m in notifications(app))
        assert app.is_running and app.return_value is None


# --- start-up options -----------------------------------------------------------------------------


async def test_initial_prompt_is_sent_and_prefill_waits(workspace: Path) -> None:
    h = Harness([{"text": "answered"}], workspace, initial_prompt="go now", prefill="draft text")
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await wait_idle(pilot, h)
        assert [u.block.content for u in h.app.query(UserMessageView)] == ["go now"]
        assert "answered" in text_of(h.app.query_one(TurnView))
        assert h.app.prompt.text == "draft text"
        assert h.app.prompt.has_focus


async def test_the_session_opens_after_the_first_frame(workspace: Path) -> None:
    """Opening a session imports the model client, the loop and its tools: the empty
    screen is laid out and drawn before that starts."""
    h = Harness([{"text": "hello"}], workspace)
    drawn_when_opened: list[bool] = []
    open_session = h.app._opener

    async def opener() -> Session:
        drawn_when_opened.append(h.app.prompt.region.height > 0)
        return await open_session()

    h.app._opener = opener
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        assert drawn_when_opened == [True]


async def test_a_message_sent_while_the_session_opens_is_sent_once_it_is(
    workspace: Path,
) -> None:
    h = Harness([{"text": "Hello back."}], workspace)
    release = asyncio.Event()
    open_session = h.app._opener

    async def slow_opener() -> Session:
        await release.wait()
        return await open_session()

    h.app._opener = slow_opener
    async with h.app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*"hello", "enter")
        await pilot.pause()
        assert h.app.session is None
        assert any("still opening" in m for m in notifications(h.app))
        release.set()
        await wait_idle(pilot, h)
        assert [e.data.content for e in h.recorder.of("user.message")] == ["hello"]


async def test_a_message_sent_before_a_failed_start_goes_back_to_the_prompt() -> None:
    release = asyncio.Event()

    async def failing_opener() -> Session:
        await release.wait()
        raise StartupError("No model is configured.")

    app = LoopdeckApp(failing_opener)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*"hello", "enter")
        await pilot.pause()
        assert app.prompt.text == ""
        release.set()
        await wait_for(pilot, lambda: bool(app.query(".startup-error")), "the startup error")
        assert app.prompt.text == "hello"
