"""The prompt's conventions, driven through the app: the completion menu for ``/``
and ``@``, slash commands (/clear, /fork, /model, /rename, an unknown one),
``!command`` and collapsed pastes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, Static

from agent.log.store import SessionStore, read_events
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.app_harness import SIZE, Harness, make_workspace, send, started, wait_idle
from tests.support.pilot import text_of, wait_for
from tests.support.scripting import FakeRecorder, padded, scripted
from widgets.message_blocks import NoticeView, UserMessageView
from widgets.model_picker import ModelPicker
from widgets.permission_prompt import PermissionPromptView
from widgets.shell_view import ShellView

ANSWERS = [{"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}]


def outputs(app: LoopdeckApp) -> list[str]:
    return [str(w.render()) for w in app.query(".command-output").results(Static)]


def menu_labels(app: LoopdeckApp) -> list[str]:
    return [c.label for c in app.menu.candidates] if app.menu.is_open else []


async def typed(pilot: Pilot[Any], text: str) -> None:
    for char in text:
        await pilot.press(char)
    await pilot.pause()


# --- the completion menu ---------------------------------------------------------------


async def test_slash_opens_the_menu_which_filters_as_you_type(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await typed(pilot, "/")
        everything = menu_labels(h.app)
        assert "/help" in everything and "/clear" in everything and len(everything) > 15
        await typed(pilot, "cl")
        assert menu_labels(h.app)[0] == "/clear"
        assert all("cl" in label for label in menu_labels(h.app))
        await pilot.press("escape")
        assert not h.app.menu.is_open
        assert h.app.prompt.text == "/cl"  # Esc closed the menu, left the text
        await typed(pilot, "e")  # typing again reopens it
        assert menu_labels(h.app) == ["/clear"]
        await pilot.press("tab")
        assert h.app.prompt.text == "/clear"
        assert not h.app.menu.is_open
        assert h.session.model_calls == 0  # Tab only completes


async def test_up_down_move_in_the_menu_and_enter_runs_the_chosen_command(
    tmp_path: Path,
) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await typed(pilot, "/c")
        labels = menu_labels(h.app)
        assert labels[:4] == ["/clear", "/context", "/compact [focus]", "/cwd"]
        await pilot.press("down", "down", "up")
        assert h.app.menu.chosen is not None and h.app.menu.chosen.label == "/context"
        await pilot.press("down", "down")
        await pilot.press("enter")  # /cwd takes no argument: Enter runs it
        await wait_for(pilot, lambda: bool(outputs(h.app)), "the command's output")
        assert outputs(h.app)[-1].startswith(f"Working directory: {h.session.cwd}")
        assert h.app.prompt.text == ""
        assert h.session.model_calls == 0


async def test_at_completes_workspace_files_fuzzily_and_attaches_them(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "notes").mkdir()
    (ws / "notes" / "todo.txt").write_text("buy milk\n", encoding="utf-8")
    (ws / ".gitignore").write_text("secret*\n", encoding="utf-8")
    (ws / "secret_plan.txt").write_text("hidden\n", encoding="utf-8")
    h = Harness(ANSWERS, ws)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await wait_for(pilot, lambda: h.app.files.ready, "the workspace index")
        await typed(pilot, "read @")
        assert not any("secret" in label for label in menu_labels(h.app))  # .gitignore
        await typed(pilot, "ntd")  # fuzzy: n(otes/)t(o)d(o.txt)
        assert menu_labels(h.app)[0] == "notes/todo.txt"
        await pilot.press("tab")
        assert h.app.prompt.text == "read @notes/todo.txt "
        await typed(pilot, "please")
        await pilot.press("enter")
        await wait_idle(pilot, h)
        message = h.recorder.of("user.message")[0].wire()["data"]
        assert message["content"] == "read @notes/todo.txt please"
        assert message["attachments"] == [
            {
                "type": "file",
                "path": str(ws / "notes" / "todo.txt"),
                "displayName": "notes/todo.txt",
            }
        ]
        sent = h.model.seen_messages[0][-1]["content"]
        assert "buy milk" in sent  # the model got the file's text
        chips = text_of(h.app.query_one(UserMessageView))
        assert "@notes/todo.txt" in chips


# --- commands --------------------------------------------------------------------------


async def test_an_unknown_command_is_not_sent_and_the_nearest_is_suggested(
    tmp_path: Path,
) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/hepl me")
        await wait_for(pilot, lambda: bool(outputs(h.app)), "the command's answer")
        assert outputs(h.app) == [
            "Unknown command /hepl: not sent to the model. Did you mean /help?"
        ]
        assert h.model.calls == 0
        assert h.recorder.of("user.message") == []
        # A path is a message, not a command.
        await send(pilot, h, "/usr/bin/env is missing")
        await wait_idle(pilot, h)
        assert h.recorder.of("user.message")[0].wire()["data"]["content"].startswith("/usr/bin")


async def test_help_lists_every_command_of_the_registry(tmp_path: Path) -> None:
    from app.commands import REGISTRY

    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/help")
        await wait_for(pilot, lambda: bool(outputs(h.app)), "the help")
        shown = outputs(h.app)[-1]
        for command in REGISTRY:
            assert f"/{command.name}" in shown
        palette = [c.title for c in h.app.get_system_commands(h.app.screen)]
        assert {f"/{c.name}" for c in REGISTRY} <= set(palette)


async def test_clear_starts_a_fresh_context_and_keeps_the_old_turns_visible(
    tmp_path: Path,
) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "remember the word pelican")
        await wait_idle(pilot, h)
        await send(pilot, h, "/clear")
        await wait_for(pilot, lambda: bool(h.recorder.of("session.context_cleared")), "clear")
        cleared = h.recorder.of("session.context_cleared")[0].wire()["data"]
        assert cleared == {"messagesCleared": 2}
        await send(pilot, h, "what was the word?")
        await wait_idle(pilot, h, 2)
        second_call = h.model.seen_messages[1]
        assert [m["role"] for m in second_call] == ["system", "user"]
        assert "pelican" not in str(second_call)
        users = [text_of(v) for v in h.app.query(UserMessageView)]
        assert any("pelican" in u for u in users)  # still on screen, above the divider
        notices = [text_of(v) for v in h.app.query(NoticeView)]
        assert any("Context cleared" in n for n in notices)


async def test_model_switches_by_name_and_by_the_picker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.models.select import PROVIDER_DEFAULTS

    for keys, _ in PROVIDER_DEFAULTS:
        for key in keys:
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LOOPDECK_MODEL", "openai/gpt-4o")
    monkeypatch.setenv("GROQ_API_KEY", "test-key")
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        before = h.session.model.name
        await send(pilot, h, "/model scripted:demo")
        await wait_for(pilot, lambda: bool(h.recorder.of("session.model_change")), "switch")
        change = h.recorder.of("session.model_change")[0].wire()["data"]
        assert change == {"newModel": "scripted:demo", "previousModel": before}
        await send(pilot, h, "/model")
        await wait_for(pilot, lambda: isinstance(h.app.screen, ModelPicker), "the picker")
        picker = h.app.screen
        assert isinstance(picker, ModelPicker)
        assert picker.choices == [
            ("scripted:demo", "current"),
            ("openai/gpt-4o", "configured"),
            ("groq/llama-3.3-70b-versatile", "GROQ_API_KEY is set"),
        ]
        free = picker.query_one("#model-free", Input)
        free.focus()
        free.value = "scripted:no-such-script"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(outputs(h.app)), "the refusal")
        assert outputs(h.app)[-1].startswith("Model not changed:")
        assert h.session.model.name == "scripted:demo"  # a bad name changes nothing


async def test_mode_commands_go_through_the_one_mode_switch(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/plan")
        await wait_for(pilot, lambda: h.session.mode == "plan", "plan mode")
        await send(pilot, h, "/mode interactive")
        await wait_for(pilot, lambda: h.session.mode == "interactive", "interactive")
        await send(pilot, h, "/mode sideways")
        await wait_for(pilot, lambda: "No mode" in "".join(outputs(h.app)), "a refusal")
        changes = [e.wire()["data"]["newMode"] for e in h.recorder.of("session.mode_changed")]
        assert changes == ["plan", "interactive"]


async def test_rename_records_the_title(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/rename  Fix the   parser ")
        await wait_for(pilot, lambda: bool(h.recorder.of("session.title_changed")), "rename")
        assert h.recorder.of("session.title_changed")[0].wire()["data"] == {
            "title": "Fix the parser"
        }
        assert any("Renamed: Fix the parser" in text_of(v) for v in h.app.query(NoticeView))


async def test_fork_continues_in_a_new_session_and_leaves_the_original_alone(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path)
    store = SessionStore(tmp_path / "home")
    model = scripted(ANSWERS)
    recorder = FakeRecorder()

    async def opener() -> Session:
        session = await Session.create(model=model, cwd=ws, store=store)
        session.subscribe(recorder)
        return session

    async def resumer(session_id: str) -> Session:
        return await Session.resume(store=store, session_id=session_id, model=model, cwd=ws)

    app = LoopdeckApp(opener, resumer=resumer, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None, "the session")
        assert app.session is not None
        original = app.session.id
        app.prompt.text = "the secret is 42"
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(recorder.of("session.idle")), "the answer")
        await pilot.pause()
        before = store.events_path(original).read_bytes()
        app.prompt.text = "/fork"
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.session is not None and app.session.id != original, "the fork"
        )
        fork = app.session
        assert fork is not None
        assert fork.history.messages[0] == {"role": "user", "content": "the secret is 42"}
        app.prompt.text = "and now?"
        await pilot.press("enter")
        await wait_for(pilot, lambda: model.calls == 2 and not fork.busy, "the fork's answer")
        assert "the secret is 42" in str(model.seen_messages[1])
        await fork.persist()
        assert store.events_path(original).read_bytes() == before  # untouched
        forked = read_events(store.events_path(fork.id))
        assert forked.problems == []
        start = forked.events[0].wire()["data"]
        assert forked.events[0].type == "session.start" and start["sessionId"] == fork.id
        contents = [e.wire()["data"]["content"] for e in forked.events if e.type == "user.message"]
        assert contents == ["the secret is 42", "and now?"]


# --- !command ----------------------------------------------------------------------------


async def test_bang_runs_a_shell_command_without_the_model(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    h = Harness(ANSWERS, ws)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "!ls")
        # The user's own command runs at once: no rule is asked, no prompt shown.
        await wait_for(
            pilot,
            lambda: bool(h.recorder.of("tool.execution_complete")),
            "the command's result",
        )
        assert h.model.calls == 0
        assert h.recorder.of("permission.requested") == []
        assert not h.app.query(PermissionPromptView)
        requested = h.recorder.of("tool.user_requested")[0].wire()["data"]
        assert requested["toolName"] == "local_shell"
        assert requested["arguments"] == {
            "command": "ls",
            "description": "Execute shell command: ls",
        }
        done = h.recorder.of("tool.execution_complete")[0].wire()["data"]
        assert done["isUserRequested"] is True and done["success"] is True
        assert "src" in done["result"]["content"]
        assert h.recorder.of("user.message") == []  # Copilot records no user message
        await pilot.pause()
        rows = list(h.app.query(ShellView))  # the user's command: a row of its own
        assert len(rows) == 1 and "ls" in text_of(rows[0])
        await send(pilot, h, "what did I just list?")
        await wait_idle(pilot, h)
        seen = h.model.seen_messages[0]
        assert seen[1]["role"] == "user"
        assert seen[1]["content"].startswith("The user ran a shell command themselves:\n$ ls\n")
        assert "src" in seen[1]["content"]


async def test_bang_command_is_the_users_own_not_the_models(tmp_path: Path) -> None:
    """A command that changes files, which the model's bash call would have to ask
    for, runs at once when the user types it: the rules are written for the model."""
    ws = make_workspace(tmp_path)
    h = Harness(ANSWERS, ws)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "!touch made-by-bang")
        await wait_for(pilot, lambda: bool(h.recorder.of("tool.execution_complete")), "done")
        done = h.recorder.of("tool.execution_complete")[0].wire()["data"]
        assert done["success"] is True and done["isUserRequested"] is True
        assert (ws / "made-by-bang").exists()
        assert h.recorder.of("permission.requested") == []
        assert not h.app.query(PermissionPromptView)


# --- paste -------------------------------------------------------------------------------


async def test_a_long_paste_collapses_and_the_full_text_is_sent(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    pasted = "\n".join(f"line {i}" for i in range(1, 121))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await typed(pilot, "look: ")
        h.app.post_message(events.Paste(pasted))  # a terminal paste reaches the app first
        await pilot.pause()
        assert h.app.prompt.text == "look: [pasted 120 lines]"
        await pilot.press("enter")
        await wait_idle(pilot, h)
        sent = h.recorder.of("user.message")[0].wire()["data"]["content"]
        assert sent == "look: " + pasted
        # Expanded on demand: Ctrl+T puts the text back in the prompt.
        h.app.post_message(events.Paste(pasted))  # a terminal paste reaches the app first
        await pilot.pause()
        assert h.app.prompt.text == "[pasted 120 lines]"
        await pilot.press("ctrl+t")
        assert h.app.prompt.text == pasted
        # A short paste stays as it is.
        h.app.prompt.text = ""
        h.app.post_message(events.Paste("a\nb"))
        await pilot.pause()
        assert h.app.prompt.text == "a\nb"


async def test_context_shows_the_window_use_by_part(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "count me")
        await wait_idle(pilot, h)
        await send(pilot, h, "/context")
        # The first count imports litellm (in a thread): seconds on a loaded machine.
        deadline = 120.0
        start = asyncio.get_running_loop().time()
        while not outputs(h.app):
            assert asyncio.get_running_loop().time() - start < deadline, "no /context output"
            await pilot.pause(0.05)
        shown = outputs(h.app)[-1]
        assert shown.startswith(f"Context for {h.session.model.name}")
        for part in ("system prompt", "tools", "messages", "total", "Session usage"):
            assert part in shown
        assert "(2 messages)" in shown  # the prompt and the answer


async def test_workspace_commands(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "AGENTS.md").write_text("Be brief.\n", encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    h = Harness(ANSWERS, ws)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/add-dir ../other")
        await wait_for(pilot, lambda: len(outputs(h.app)) == 1, "add-dir")
        assert h.session.extra_dirs == [other.resolve()]
        await send(pilot, h, "/cwd")
        await wait_for(pilot, lambda: len(outputs(h.app)) == 2, "cwd")
        assert outputs(h.app)[-1] == (
            f"Working directory: {h.session.cwd}\nAlso allowed: {other.resolve()}"
        )
        await send(pilot, h, "/instructions")
        await wait_for(pilot, lambda: len(outputs(h.app)) == 3, "instructions")
        assert str(ws / "AGENTS.md") in outputs(h.app)[-1]
        await send(pilot, h, "/allow-all")
        await wait_for(pilot, lambda: h.session.permission_level.level == "allow-all", "level")
        assert h.session.permissions.policy.allow_all
        assert h.model.calls == 0


async def test_export_writes_the_session(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    store = SessionStore(tmp_path / "home")
    model = scripted(ANSWERS)

    async def opener() -> Session:
        return await Session.create(model=model, cwd=ws, store=store)

    app = LoopdeckApp(opener, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session is not None, "the session")
        app.prompt.text = "hello there"
        await pilot.press("enter")
        await wait_for(pilot, lambda: model.calls == 1 and not app.working, "the answer")
        app.prompt.text = "/export notes/out.md"
        await pilot.press("enter")
        target = ws / "notes" / "out.md"
        await wait_for(pilot, lambda: bool(outputs(app)), "the export")
        assert outputs(app)[-1].startswith("Not exported:")  # no such folder: said, not lost
        (ws / "notes").mkdir()
        app.prompt.text = "/export notes/out.md"
        await pilot.press("enter")
        await wait_for(pilot, lambda: target.exists(), "the file")
        text = target.read_text("utf-8")
        assert "hello there" in text and "first answer" in text


async def test_model_uses_the_apps_model_factory(tmp_path: Path) -> None:
    """/model builds the client as the command line does (its flags apply), not bare."""
    made: list[str] = []

    def fake_factory(name: str) -> Any:
        made.append(name)
        return scripted([{"text": "from the new model"}], label="switched")

    h = Harness(ANSWERS, make_workspace(tmp_path), model_factory=fake_factory)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/model openai/gpt-5")
        await wait_for(pilot, lambda: bool(h.recorder.of("session.model_change")), "switch")
        assert made == ["openai/gpt-5"]
        assert h.session.model.name == "scripted:switched"


async def test_history_walks_past_a_recalled_command_without_the_menu(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "hello")
        await wait_idle(pilot, h)
        await send(pilot, h, "/cwd")
        await wait_for(pilot, lambda: bool(outputs(h.app)), "cwd")
        await pilot.press("up")
        assert h.app.prompt.text == "/cwd" and not h.app.menu.is_open
        await pilot.press("up")
        assert h.app.prompt.text == "hello"


async def test_exit_quits(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/exit")
        await wait_for(pilot, lambda: h.app.return_code == 0, "the exit")


async def test_esc_stops_a_running_bang_command(tmp_path: Path) -> None:
    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "!sleep 60")
        await wait_for(pilot, lambda: bool(h.recorder.of("tool.user_requested")), "running")
        await pilot.press("escape")
        await wait_for(pilot, lambda: bool(h.recorder.of("tool.execution_complete")), "stopped")
        done = h.recorder.of("tool.execution_complete")[0].wire()["data"]
        assert done["success"] is False and done["error"]["code"] == "interrupted"
        assert done["isUserRequested"] is True
        row = h.app.query_one(ShellView)
        assert row.block.status == "interrupted"


async def test_a_bang_command_waits_for_an_idle_agent(tmp_path: Path) -> None:
    from tests.support.app_harness import FakeGateTool

    gate = FakeGateTool()
    turns = [{"text": "", "tool_calls": [{"name": "gate", "arguments": {}}]}, {"text": "ok"}]
    h = Harness(turns, make_workspace(tmp_path), registry_factory=gate.registry)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "go")
        await wait_for(pilot, lambda: bool(h.recorder.of("tool.execution_start")), "busy")
        await send(pilot, h, "!ls")
        await wait_for(pilot, lambda: bool(outputs(h.app)), "the refusal")
        assert outputs(h.app) == ["A !command runs when the agent is idle (Esc stops the turn)."]
        gate.opened.set()
        await wait_idle(pilot, h)
        assert h.recorder.of("tool.user_requested") == []


async def test_compact_with_a_focus_while_a_summary_runs_says_it_starts_over(
    tmp_path: Path,
) -> None:
    from agent.models.base import COMPACTION_CALL
    from agent.models.scripted import Script, ScriptedModel
    from tests.support.compaction import FakeSlowSummaryModel

    h = Harness(ANSWERS, make_workspace(tmp_path))
    model = FakeSlowSummaryModel(ScriptedModel(Script.model_validate({"turns": ANSWERS}), "s"))
    h.model = model  # type: ignore[assignment]
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, padded("THE TASK: a parser"))
        await wait_idle(pilot, h)
        await send(pilot, h, "and its tests")
        await wait_idle(pilot, h, 2)
        assert h.session.context.start("threshold")  # as at 80 % of the window
        await send(pilot, h, "/compact the parser's tests")
        await wait_for(
            pilot, lambda: "it starts over with your focus" in "".join(outputs(h.app)), "notice"
        )
        model.release.set()
        await wait_for(pilot, lambda: "Compacted:" in "".join(outputs(h.app)), "the report")
        done = [e.data for e in h.recorder.of("session.compaction_complete")]
        assert [d.success for d in done] == [False, True]
        summary_call = model.seen_messages[model.call_indexes.index(COMPACTION_CALL)]
        assert "the parser's tests" in summary_call[-1]["content"]


async def test_compact_summarises_now_and_the_next_turn_starts_from_the_summary(
    tmp_path: Path,
) -> None:
    from agent.loop.history import SUMMARY_PREFIX
    from agent.models.base import COMPACTION_CALL
    from agent.transcript.blocks import InfoRowBlock

    h = Harness(ANSWERS, make_workspace(tmp_path))
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "/compact")
        await wait_for(pilot, lambda: "Nothing to compact yet" in "".join(outputs(h.app)), "no-op")
        await send(pilot, h, padded("THE TASK: a parser"))
        await wait_idle(pilot, h)
        await send(pilot, h, "and its tests")
        await wait_idle(pilot, h, 2)
        await send(pilot, h, "/compact the parser's tests")
        await wait_for(pilot, lambda: "Compacted:" in "".join(outputs(h.app)), "the report")
        done = h.recorder.of("session.compaction_complete")[0].data
        assert done.success and done.trigger == "manual"
        summary_call = h.model.seen_messages[h.model.call_indexes.index(COMPACTION_CALL)]
        assert "the parser's tests" in summary_call[-1]["content"]
        await send(pilot, h, "go on")
        await wait_idle(pilot, h, 3)
        sent = h.model.seen_messages[-1]
        assert sent[1]["content"].startswith(SUMMARY_PREFIX)
        assert "THE TASK: a parser" in sent[1]["content"]
        assert "first answer" not in [m.get("content") for m in sent]
        # The compaction is drawn in the timeline, and /context counts from the summary.
        rows = [b for b in h.app.timeline.transcript.items if isinstance(b, InfoRowBlock)]
        assert [r.kind for r in rows if r.kind == "compaction"] == ["compaction"]
        await send(pilot, h, "/context")
        await wait_for(pilot, lambda: "Context for" in "".join(outputs(h.app)), "/context")
        shown = outputs(h.app)[-1]
        assert "Compaction: in the background from 80%" in shown and "1 so far" in shown
