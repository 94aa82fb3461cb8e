"""The permission prompt in the real app, driven with Pilot over scripted sessions.

Interactive: an ``edit`` or ``bash`` call shows the inline prompt with exactly what
will change or run; ``y`` runs it once, ``a`` approves it for the session, ``n``
denies it and sends the user's feedback to the model. Keys typed in the moment the
prompt appears do not answer it. Autopilot never asks about a call: once the user
kept their rules (the level asked before autopilot, tests/permissions/test_permission_level.py),
a call without a rule is denied and the loop goes on; with ``allow_all`` it runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual._time import get_time
from textual.pilot import Pilot
from textual.widgets import Input

import widgets.arming as arming
from agent.permissions.rules import PermissionPolicy
from tests.support.app_harness import every_turn_live as every_turn_live  # autouse
from tests.support.clock import quick_arm as quick_arm  # the fixture
from tests.support.permission_ui import (
    EDIT,
    FIXED,
    GREET,
    NEW_LINE,
    OLD_LINE,
    SIZE,
    Harness,
    armed,
    bash,
    keep_my_rules,
    prompt_shown,
    start,
    wait_idle,
)
from tests.support.permission_ui import workspace as workspace  # the fixture
from tests.support.pilot import text_of, type_text, wait_for
from tests.support.timed_keys import press_at
from widgets.message_blocks import TaskCompleteView
from widgets.permission_prompt import PermissionPromptView
from widgets.tool_card import ToolCard

# --- interactive: y / n / a -----------------------------------------------------------


@pytest.mark.usefixtures("quick_arm")
async def test_edit_prompt_shows_the_diff_and_y_runs_it(workspace: Path) -> None:
    h = Harness(
        [{"text": "Changing the greeting.", "tool_calls": [EDIT]}, {"text": "Done."}], workspace
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "say hi instead")
        view = await prompt_shown(pilot, h)
        await pilot.pause()

        shown = text_of(view)
        assert "Edit greet.py?" in shown
        assert OLD_LINE in shown and NEW_LINE in shown
        assert "--- a/greet.py" in shown and "+++ b/greet.py" in shown
        assert "y yes, once" in shown and "a always allow file edits this session" in shown
        assert view.has_focus
        # The diff takes exactly its own lines (no empty row for its final newline).
        assert h.asked[0].diff is not None
        diff_lines = h.asked[0].diff.splitlines()
        assert view.query_one(".what").size.height == len(diff_lines)
        # Nothing ran yet: the card waits, the file is as it was.
        card = h.app.query_one(ToolCard)
        assert card.block.status == "running" and card.block.permission == "requested"
        assert "waiting for your approval" in text_of(card)
        assert (workspace / "greet.py").read_text("utf-8") == GREET
        assert h.completed() == []

        await armed(pilot, view)
        await pilot.press("y")
        await wait_idle(pilot, h)

        assert (workspace / "greet.py").read_text("utf-8") == FIXED
        assert h.completed() == [{"kind": "approved"}]
        assert [t.success for t in h.tool_results()] == [True]
        assert card.block.status == "success" and "-success" in card.classes
        card_text = text_of(card)
        assert "✓ edit" in card_text and "waiting for your approval" not in card_text
        assert not h.app.query(PermissionPromptView)  # removed once answered
        assert h.app.prompt.has_focus
        assert len(h.asked) == 1 and NEW_LINE in diff_lines
        # Expanded, the card shows the diff it applied: its head, then the diff's lines.
        card.focus()
        await pilot.press("enter")
        assert card.expanded and NEW_LINE in text_of(card)
        assert card.size.height == 1 + len(diff_lines)
        # The model read the edit's result.
        assert "Edited greet.py" in h.model.seen_messages[1][-1]["content"]


@pytest.mark.usefixtures("quick_arm")
async def test_n_with_feedback_denies_and_the_model_reads_why(workspace: Path) -> None:
    h = Harness(
        [{"text": "", "tool_calls": [EDIT]}, {"text": "Understood, keeping Hello."}], workspace
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "say hi instead")
        view = await prompt_shown(pilot, h)
        await armed(pilot, view)
        await pilot.press("n")
        await pilot.pause()

        feedback = view.query_one(Input)
        assert feedback.has_focus and not view.answer.done()
        # y / a / n now spell feedback, they no longer answer.
        await type_text(pilot, "say hello")
        assert feedback.value == "say hello"
        assert not view.answer.done() and h.completed() == []
        await pilot.press("enter")
        await wait_idle(pilot, h)

        assert (workspace / "greet.py").read_text("utf-8") == GREET
        assert h.completed() == [{"kind": "denied-interactively-by-user", "feedback": "say hello"}]
        (result,) = h.tool_results()
        assert not result.success
        card = h.app.query_one(ToolCard)
        assert card.block.status == "failure" and "-failure" in card.classes
        assert "denied by you" in text_of(card)
        # The next model call saw the denial and the feedback as the tool's result.
        assert h.model.calls == 2
        last = h.model.seen_messages[1][-1]
        assert last["role"] == "tool"
        assert "The user denied writing greet.py" in last["content"]
        assert "Their feedback: say hello" in last["content"]
        assert "Understood, keeping Hello." in text_of(h.app.timeline)


@pytest.mark.usefixtures("quick_arm")
async def test_n_then_enter_denies_without_feedback(workspace: Path) -> None:
    h = Harness([{"text": "", "tool_calls": [bash("rm -rf build")]}, {"text": "ok"}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "clean up")
        view = await prompt_shown(pilot, h)
        shown = text_of(view)
        assert "Run this command?" in shown and "rm -rf build" in shown
        await armed(pilot, view)
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("enter")
        await wait_idle(pilot, h)

        assert h.completed() == [{"kind": "denied-interactively-by-user"}]
        message = h.model.seen_messages[1][-1]["content"]
        assert "The user denied the shell command `rm -rf build`." in message
        assert "feedback" not in message


@pytest.mark.usefixtures("quick_arm")
async def test_a_approves_the_command_for_the_session(workspace: Path) -> None:
    h = Harness(
        [
            {"text": "", "tool_calls": [bash("echo first-run")]},
            {"text": "", "tool_calls": [bash("echo second-run")]},  # same command name
            {"text": "", "tool_calls": [bash("printf third-run")]},  # a new one: asked
            {"text": "all three ran"},
        ],
        workspace,
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "echo twice")
        view = await prompt_shown(pilot, h)
        # `a` says exactly what it lets through: echo, not every command.
        assert "a always allow `echo` commands this session" in text_of(view)
        await armed(pilot, view)
        await pilot.press("a")
        # echo is approved; printf is not and gets its own prompt.
        await wait_for(
            pilot,
            lambda: h.prompt_view() not in (None, view),
            "the prompt for printf",
        )
        second = h.prompt_view()
        assert second is not None and "printf third-run" in text_of(second)
        await armed(pilot, second)
        await pilot.press("y")
        await wait_idle(pilot, h)

        assert [p.command for p in h.asked] == ["echo first-run", "printf third-run"]
        kinds = [r["kind"] for r in h.completed()]
        assert kinds == ["approved-for-session", "approved", "approved"]
        assert h.completed()[0]["approval"] == {
            "kind": "commands",
            "commandIdentifiers": ["echo"],
        }
        results = h.tool_results()
        assert [r.success for r in results] == [True, True, True]
        assert [r.result.content.splitlines()[0] for r in results if r.result] == [
            "first-run",
            "second-run",
            "third-run",
        ]
        # The first turn is history by now: drawn by a TurnDigest, the note included.
        first = h.app.query(".turn").first()
        assert "echo first-run" in text_of(first)
        assert "approved for this session" in text_of(first)
        cards = list(h.app.query(ToolCard))
        assert cards and all(c.block.status == "success" for c in cards)


async def drawn(pilot: Pilot[Any], view: PermissionPromptView) -> None:
    """Wait until the prompt has been painted (its arming clock has started)."""
    await wait_for(pilot, lambda: view.arming.drawn, "the prompt to be drawn")


async def test_keys_typed_as_the_prompt_appears_do_not_answer_it(workspace: Path) -> None:
    """A "y" meant for the chat prompt must not approve an edit; ARM_DELAY after the
    paint it does. Each key counts by when it arrived, not when it was handled."""
    h = Harness([{"text": "", "tool_calls": [EDIT]}, {"text": "Done."}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "say hi instead")
        view = await prompt_shown(pilot, h)
        await drawn(pilot, view)
        painted = view.arming.shown_at
        # The user goes on typing as the prompt appears under their fingers.
        await press_at(pilot, "y", painted - 0.01)  # before the paint, handled after it
        await press_at(pilot, "y", painted + arming.ARM_DELAY - 0.01)
        await pilot.pause()
        assert not view.answer.done()
        assert h.completed() == []
        assert h.app.query_one(PermissionPromptView) is view and view.has_focus
        assert "waiting for your approval" in text_of(h.app.query_one(ToolCard))
        assert (workspace / "greet.py").read_text("utf-8") == GREET

        # A key that arrived ARM_DELAY after the paint answers.
        await press_at(pilot, "y", painted + arming.ARM_DELAY + 0.01)
        await wait_idle(pilot, h)
        assert h.completed() == [{"kind": "approved"}]
        assert (workspace / "greet.py").read_text("utf-8") == FIXED
        assert len(h.asked) == 1


async def test_the_delay_counts_from_when_the_prompt_is_drawn(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first draw slower than ARM_DELAY (a big diff, a slow terminal) must not use up
    the delay: a key typed as the prompt becomes visible still does not answer it."""
    render_lines = PermissionPromptView.render_lines
    slow_draws: list[float] = []

    def slow_first_draw(self: PermissionPromptView, crop: Any) -> Any:
        if not slow_draws:
            slow_draws.append(get_time())
            time.sleep(2 * arming.ARM_DELAY)
        return render_lines(self, crop)

    monkeypatch.setattr(PermissionPromptView, "render_lines", slow_first_draw)
    h = Harness([{"text": "", "tool_calls": [EDIT]}, {"text": "Done."}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "say hi instead")
        view = await prompt_shown(pilot, h)
        await drawn(pilot, view)
        assert slow_draws, "the prompt was not drawn"
        # Typed while it was being drawn, more than ARM_DELAY after the draw began.
        await press_at(pilot, "y", slow_draws[0] + arming.ARM_DELAY + 0.01)
        await pilot.pause()
        assert not view.answer.done() and h.completed() == []

        await press_at(pilot, "y", view.arming.shown_at + arming.ARM_DELAY + 0.01)
        await wait_idle(pilot, h)
        assert h.completed() == [{"kind": "approved"}]


async def test_a_key_typed_once_the_prompt_shows_answers_it_however_late_it_is_handled(
    workspace: Path,
) -> None:
    """On a loaded machine the loop may handle a key long after it was typed: a "y"
    that arrived ARM_DELAY after the paint answers, whenever it is handled (the guard
    measured at handling time dropped keys typed well after the prompt was visible)."""
    h = Harness([{"text": "", "tool_calls": [EDIT]}, {"text": "Done."}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "say hi instead")
        view = await prompt_shown(pilot, h)
        await drawn(pilot, view)
        await press_at(pilot, "y", view.arming.shown_at + arming.ARM_DELAY + 0.01)
        await wait_idle(pilot, h)
        assert h.completed() == [{"kind": "approved"}]


# --- autopilot never asks ---------------------------------------------------------------


DONE = {"name": "task_complete", "arguments": {"summary": "Checked the build."}}


async def test_autopilot_denies_without_asking_and_goes_on(workspace: Path) -> None:
    h = Harness(
        [
            {"text": "Building first.", "tool_calls": [bash("touch built.txt")]},
            {"text": "The command was denied; finishing without it.", "tool_calls": [DONE]},
        ],
        workspace,
        mode="autopilot",
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await keep_my_rules(pilot, h)
        await start(pilot, h, "build it")
        await wait_idle(pilot, h)

        assert h.asked == [] and not h.app.query(PermissionPromptView)
        assert not (workspace / "built.txt").exists()
        assert [r["kind"] for r in h.completed()] == [
            "denied-no-approval-rule-and-could-not-request-from-user"
        ]
        card = next(c for c in h.app.query(ToolCard) if c.block.name == "bash")
        assert card.block.status == "failure" and "-failure" in card.classes
        assert "denied automatically" in text_of(card)
        # The loop went on: the model read why, and completed the task.
        assert h.model.calls == 2
        assert "autopilot cannot ask the user" in h.model.seen_messages[1][-1]["content"]
        done = h.app.query(TaskCompleteView)
        assert len(done) == 1 and "Checked the build." in text_of(done[0])


async def test_autopilot_with_allow_all_runs_the_command(workspace: Path) -> None:
    h = Harness(
        [
            {"text": "", "tool_calls": [bash("touch built.txt && echo built")]},
            {"text": "", "tool_calls": [DONE]},
        ],
        workspace,
        mode="autopilot",
        policy=PermissionPolicy.from_flags(allow_all=True),
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "build it")
        await wait_idle(pilot, h)

        assert h.asked == [] and not h.app.query(PermissionPromptView)
        assert (workspace / "built.txt").exists()
        assert h.completed() == [{"kind": "approved"}]
        card = next(c for c in h.app.query(ToolCard) if c.block.name == "bash")
        assert card.block.status == "success"
        card_text = text_of(card)
        assert "built" in card_text and "denied" not in card_text
        assert len(h.app.query(TaskCompleteView)) == 1


async def test_the_prompt_comes_after_the_turn_that_asks(workspace: Path) -> None:
    """The timeline draws in passes; the prompt must not overtake the turn it is about."""
    h = Harness(
        [{"text": "Changing the greeting.", "tool_calls": [EDIT]}, {"text": "Done."}], workspace
    )
    async with h.app.run_test(size=SIZE) as pilot:
        await start(pilot, h, "say hi instead")
        await prompt_shown(pilot, h)
        await pilot.pause(0.2)
        shown = [type(c).__name__ for c in h.app.timeline.children if c.display]
        assert shown[-3:] == ["UserMessageView", "TurnView", "PermissionPromptView"], shown
