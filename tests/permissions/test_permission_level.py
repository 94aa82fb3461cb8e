"""Autopilot's permission level: asked once in the app when the rules would deny.

Switching to autopilot (Shift+Tab, the palette, or starting in it) with rules that
would deny edits or shell commands shows a choice: 1 allow all tools, 2 allow edits
only, 3 keep my rules; Esc cancels the switch. The answer is recorded as the SDK's
``elicitation.requested`` / ``elicitation.completed`` pair, shown in the status bar,
and restored on resume. Headless runs never ask and keep to their flags.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import widgets.arming as arming
from agent.events.permission_level import CONTENT_KEY, SOURCE, Level
from agent.events.schema import Mode
from agent.log.store import SessionStore, read_events
from agent.permissions.rules import PermissionPolicy
from agent.session.session import Session
from agent.transcript.blocks import NoticeBlock
from agent.transcript.fold import Transcript
from app.app import LoopdeckApp
from app.cli import main
from tests.support.app_harness import send
from tests.support.cli import log_of
from tests.support.clock import quick_arm as quick_arm  # the fixture
from tests.support.permission_level import (
    EDIT_AND_BUILD,
    Harness,
    dialog_armed,
    dialog_gone,
    opened,
)
from tests.support.permission_ui import FIXED, GREET, SIZE, wait_idle
from tests.support.permission_ui import workspace as workspace  # the fixture
from tests.support.pilot import text_of, texts, wait_for
from tests.support.scripting import FakeRecorder, scripted
from tests.support.timed_keys import press_at
from widgets.message_blocks import NoticeView
from widgets.permission_level import PermissionLevelScreen

# A resumed session's model calls go on counting: its first call was the "Hello." turn.
AFTER_HELLO = [{"text": "Hello."}, *EDIT_AND_BUILD]
NO_RULE = "denied-no-approval-rule-and-could-not-request-from-user"


pytestmark = pytest.mark.usefixtures("quick_arm")


# --- what counts as "the rules would deny" ---------------------------------------------------


@pytest.mark.parametrize(
    ("allow", "deny", "allow_all", "denied"),
    [
        ([], [], False, ["write", "shell"]),
        (["shell(git:*)"], [], False, ["write", "shell"]),  # other commands would be denied
        (["write"], [], False, ["shell"]),
        (["write", "shell"], [], False, []),
        (["write"], ["shell"], False, []),  # denied by the user's own rule: nothing to ask
        ([], [], True, []),
    ],
)
def test_denied_kinds_follow_the_rules(
    allow: list[str], deny: list[str], allow_all: bool, denied: list[str]
) -> None:
    from agent.permissions.gate import PermissionGate
    from agent.permissions.level import denied_kinds
    from agent.tools.registry import default_tools

    class FakeHost:
        mode: Mode = "autopilot"

    gate = PermissionGate(FakeHost(), PermissionPolicy.from_flags(allow, deny, allow_all))  # type: ignore[arg-type]
    assert denied_kinds(gate, default_tools(autopilot=True)) == denied


# --- Shift+Tab: choose each level, then an edit and a command ----------------------------


@pytest.mark.parametrize(
    ("keys", "level", "label", "edited", "built", "results"),
    [
        (("1",), "allow-all", "all tools", True, True, ["approved", "approved"]),
        (("down", "enter"), "edits", "edits only", True, False, ["approved", NO_RULE]),
        (("3",), "rules", "my rules", False, False, [NO_RULE, NO_RULE]),
    ],
)
async def test_shift_tab_asks_for_the_level_and_autopilot_keeps_to_it(
    workspace: Path,
    keys: tuple[str, ...],
    level: Level,
    label: str,
    edited: bool,
    built: bool,
    results: list[str],
) -> None:
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("shift+tab", "shift+tab")  # via plan
        dialog = await dialog_armed(pilot, h)
        assert h.session.mode == "plan"  # not autopilot yet: the choice comes first
        assert dialog.denied == ["write", "shell"]
        shown = " ".join(text_of(w) for w in dialog.query("*"))
        assert "Allow all tools in this workspace" in shown and "Keep my rules" in shown

        await pilot.press(*keys)
        await dialog_gone(pilot, h)
        assert h.session.mode == "autopilot"
        assert f"autopilot 0/5 nudges · {label}" in text_of(h.app.status)
        [question] = h.questions()
        [answer] = h.answers()
        assert question.elicitation_source == SOURCE
        assert answer.request_id == question.request_id
        assert answer.action == "accept" and answer.content == {CONTENT_KEY: level}
        assert any(n.startswith("• autopilot permissions:") for n in texts(h.app, NoticeView))

        await send(pilot, h, "fix the greeting and build")
        await wait_idle(pilot, h)
        assert h.results() == results
        assert (workspace / "greet.py").read_text() == (FIXED if edited else GREET)
        assert (workspace / "built.txt").exists() is built
        assert not h.questions()[1:]  # the run itself asked nothing more


async def test_esc_cancels_the_switch_and_a_choice_is_asked_only_once(workspace: Path) -> None:
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("shift+tab", "shift+tab")  # via plan
        await dialog_armed(pilot, h)
        await pilot.press("escape")
        await dialog_gone(pilot, h)
        assert h.session.mode == "plan"  # where the switch started
        assert [a.action for a in h.answers()] == ["cancel"]
        modes = [
            (e.data.previous_mode, e.data.new_mode) for e in h.recorder.of("session.mode_changed")
        ]  # type: ignore[attr-defined]
        assert modes == [("interactive", "plan")]
        assert "·" not in text_of(h.app.status).split("│")[2]  # no level shown
        assert h.app.focused is h.app.prompt

        # Not chosen yet: the next switch asks again; this time a level is chosen.
        await pilot.press("shift+tab")
        await dialog_armed(pilot, h)
        await pilot.press("1")
        await dialog_gone(pilot, h)
        assert h.session.mode == "autopilot"

        # Back to interactive and into autopilot again: no second question.
        await pilot.press("shift+tab")
        await pilot.pause()
        assert h.session.mode == "interactive"
        assert "all tools" in text_of(h.app.status)  # the level is the session's
        await pilot.press("shift+tab", "shift+tab")  # via plan
        await pilot.pause()
        assert h.dialog() is None and h.session.mode == "autopilot"
        assert len(h.questions()) == 2 and len(h.answers()) == 2


async def test_keys_pressed_as_the_dialog_appears_do_not_choose(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An Enter meant for the prompt must not allow every tool."""
    monkeypatch.setattr(arming, "ARM_DELAY", 60.0)
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("shift+tab", "shift+tab")  # via plan
        await wait_for(pilot, lambda: h.dialog() is not None, "the level dialog")
        await pilot.press("enter", "1")
        await pilot.pause()
        assert h.dialog() is not None and h.session.mode == "plan"
        assert not h.answers()


async def test_a_choice_typed_once_the_dialog_shows_counts_however_late_it_is_handled(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard is measured from the dialog's first paint to when the key arrived: a
    "1" typed before the paint chooses nothing, one typed ARM_DELAY after it chooses,
    even if the loop (busy on a loaded machine) handles it much later."""
    monkeypatch.setattr(arming, "ARM_DELAY", 0.3)
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("shift+tab", "shift+tab")  # via plan
        await wait_for(pilot, lambda: (d := h.dialog()) is not None and d.arming.drawn, "paint")
        dialog = h.dialog()
        assert dialog is not None
        painted = dialog.arming.shown_at
        await press_at(pilot, "enter", painted - 0.01)
        await press_at(pilot, "2", painted - 0.01)
        assert h.dialog() is dialog and not h.answers()
        await press_at(pilot, "1", painted + 0.31)
        await dialog_gone(pilot, h)
        assert h.session.mode == "autopilot" and h.session.permission_level.level == "allow-all"


async def test_the_palette_command_asks_too(workspace: Path) -> None:
    h = Harness(workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        [command] = [
            c for c in h.app.get_system_commands(h.app.screen) if c.title == "Toggle autopilot"
        ]
        command.callback()
        await dialog_armed(pilot, h)
        await pilot.press("2")
        await dialog_gone(pilot, h)
        assert h.session.mode == "autopilot" and h.session.permission_level.level == "edits"


async def test_rules_that_deny_nothing_are_not_questioned(workspace: Path) -> None:
    h = Harness(workspace, policy=PermissionPolicy.from_flags(allow=["write", "shell"]))
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await pilot.press("shift+tab", "shift+tab")  # via plan
        await pilot.pause()
        assert h.dialog() is None and h.session.mode == "autopilot"
        assert not h.questions()


# --- starting in autopilot (the demo, --autopilot) ------------------------------------------


async def test_starting_in_autopilot_asks_before_the_first_prompt(workspace: Path) -> None:
    h = Harness(workspace, mode="autopilot", initial_prompt="fix the greeting and build")
    async with h.app.run_test(size=SIZE) as pilot:
        await dialog_armed(pilot, h)
        assert h.model.calls == 0 and not h.recorder.of("user.message")  # waits for the choice
        await pilot.press("2")
        await dialog_gone(pilot, h)
        await wait_idle(pilot, h)
        assert h.results() == ["approved", NO_RULE]
        assert (workspace / "greet.py").read_text() == FIXED
        assert not (workspace / "built.txt").exists()
        assert "edits only" in text_of(h.app.status)


async def test_esc_at_the_start_stays_interactive_and_keeps_the_prompt(workspace: Path) -> None:
    h = Harness(workspace, mode="autopilot", initial_prompt="fix the greeting and build")
    async with h.app.run_test(size=SIZE) as pilot:
        await dialog_armed(pilot, h)
        await pilot.press("escape")
        await dialog_gone(pilot, h)
        assert h.session.mode == "interactive"
        assert h.app.prompt.text == "fix the greeting and build"  # not sent, not lost
        assert h.model.calls == 0
        [changed] = h.recorder.of("session.mode_changed")
        assert changed.data.new_mode == "interactive"  # type: ignore[attr-defined]


# --- resume, replay, headless --------------------------------------------------------------


async def _session_with_level(
    store: SessionStore, cwd: Path, level: Level, mode: Mode = "autopilot"
) -> str:
    """A recorded session in which the user chose ``level``, then left."""
    session = await Session.create(
        model=scripted([{"text": "Hello."}]), cwd=cwd, mode="interactive", store=store
    )
    session.permission_level.enable()
    request = session.permission_level.ask()
    session.permission_level.answer(request, level)
    await session.send_and_wait("hi")
    session.set_mode(mode)
    await session.close()
    return session.id


async def test_a_resumed_session_restores_the_level(workspace: Path, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    sid = await _session_with_level(store, workspace, "edits")
    model = scripted(AFTER_HELLO)
    recorder = FakeRecorder()

    async def opener() -> Session:
        session = await Session.resume(store=store, session_id=sid, model=model)
        session.subscribe(recorder)
        return session

    app = LoopdeckApp(opener, nudge_cap=5)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None, "the session to open")
        await pilot.pause()
        session = app.session
        assert session is not None
        assert session.mode == "autopilot" and session.permission_level.level == "edits"
        assert not isinstance(app.screen, PermissionLevelScreen)  # not asked again
        assert "edits only" in text_of(app.status)
        app.prompt.text = "fix the greeting and build"
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: bool(recorder.of("session.idle")) and not session.busy, "idle"
        )
        results = [e.data.result["kind"] for e in recorder.of("permission.completed")]  # type: ignore[attr-defined]
        assert results == ["approved", NO_RULE]
        assert not recorder.of("elicitation.requested")


async def test_a_question_left_open_in_the_log_is_asked_again(
    workspace: Path, tmp_path: Path
) -> None:
    """The app quit while asking: the resumed session asks afresh, not never."""
    store = SessionStore(tmp_path / "home")
    first = await Session.create(
        model=scripted([{"text": "Hello."}]), cwd=workspace, mode="interactive", store=store
    )
    await first.send_and_wait("hi")
    first.permission_level.ask()  # and nobody answered
    await first.close()

    async def opener() -> Session:
        return await Session.resume(store=store, session_id=first.id, model=scripted([]))

    app = LoopdeckApp(opener, nudge_cap=5)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None, "the session to open")
        await pilot.press("shift+tab", "shift+tab")  # via plan
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, PermissionLevelScreen) and app.screen.arming.armed,
            "the level dialog",
        )
        await pilot.press("1")
        await wait_for(pilot, lambda: not isinstance(app.screen, PermissionLevelScreen), "close")
        assert app.session is not None and app.session.mode == "autopilot"
        assert app.session.permission_level.level == "allow-all"


async def test_the_level_is_in_the_log_and_parses_with_the_official_parser(
    workspace: Path, tmp_path: Path
) -> None:
    from copilot.generated.session_events import (
        ElicitationCompletedData as SdkCompleted,
    )
    from copilot.generated.session_events import (
        ElicitationRequestedData as SdkRequested,
    )
    from copilot.generated.session_events import session_event_from_dict

    store = SessionStore(tmp_path / "home")
    sid = await _session_with_level(store, workspace, "allow-all")
    lines = store.events_path(sid).read_text("utf-8").splitlines()
    parsed = [session_event_from_dict(json.loads(line)) for line in lines]
    [question] = [p.data for p in parsed if isinstance(p.data, SdkRequested)]
    [answer] = [p.data for p in parsed if isinstance(p.data, SdkCompleted)]
    assert question.elicitation_source == SOURCE and question.requested_schema is not None
    assert question.requested_schema.properties[CONTENT_KEY]["enum"] == [
        "allow-all",
        "edits",
        "rules",
    ]
    assert answer.content == {CONTENT_KEY: "allow-all"}
    # Replay folds the same log: it knows the level and shows the choice.
    transcript = Transcript()
    for event in read_events(store.events_path(sid)).events:
        transcript.apply(event)
    assert transcript.permission_level == "allow-all"
    notices = [b.message for b in transcript.items if isinstance(b, NoticeBlock)]
    assert "autopilot permissions: allow all tools in this workspace" in notices


def test_headless_autopilot_keeps_to_its_flags_even_on_a_session_with_a_level(
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    monkeypatch.chdir(workspace)
    sid = asyncio.run(_session_with_level(SessionStore(loopdeck_home), workspace, "allow-all"))
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": AFTER_HELLO}), "utf-8")
    capsys.readouterr()
    code = main(["-p", "fix it", "--autopilot", "--resume", sid, "--model", f"scripted:{script}"])
    assert code == 0
    assert (workspace / "greet.py").read_text() == GREET  # rule-driven: denied
    assert not (workspace / "built.txt").exists()
    log = log_of(loopdeck_home, sid)
    assert [e["type"] for e in log].count("elicitation.requested") == 1  # only the app's
    results = [e["data"]["result"]["kind"] for e in log if e["type"] == "permission.completed"]
    assert results == [NO_RULE, NO_RULE]
