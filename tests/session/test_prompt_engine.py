"""The engine under the prompt's conventions, without the app: the events recorded
for ``!command``, ``/clear``, ``/rename`` and attachments (official parser, Copilot's
own shape), what the model is sent live and after resume, the workspace index and
its fuzzy match, and the command registry's parsing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.events import attachments as att
from agent.log.store import SessionStore, read_events
from agent.permissions.rules import PermissionPolicy
from agent.session.file_index import FuzzyIndex, fuzzy, list_workspace
from agent.session.session import Session
from app import commands
from tests.support.paths import FIXTURES
from tests.support.scripting import new_session, scripted

FIXTURE = FIXTURES / "copilot-real" / "irrlicht-shell-escape-command"


def allow_all() -> PermissionPolicy:
    policy = PermissionPolicy()
    policy.allow_all = True
    return policy


# --- the record --------------------------------------------------------------------------


async def test_a_bang_command_is_recorded_in_copilots_shape(tmp_path: Path) -> None:
    session, recorder = await new_session(scripted([]), tmp_path, policy=allow_all())
    result = await session.run_user_command("echo hello")
    assert result.success
    ours = [e.wire() for e in recorder.events if not e.ephemeral]
    real = [json.loads(line) for line in (FIXTURE / "events.jsonl").read_text().splitlines()]
    real_request = next(e for e in real if e["type"] == "tool.user_requested")
    real_done = next(e for e in real if e["data"].get("isUserRequested"))
    ours = [e for e in ours if e["type"] in ("tool.user_requested", "tool.execution_complete")]
    assert [e["type"] for e in ours] == ["tool.user_requested", "tool.execution_complete"]
    request, done = ours[0]["data"], ours[1]["data"]
    # Field for field what Copilot wrote for `!echo hello` (the call id aside).
    assert request["toolName"] == real_request["data"]["toolName"]
    assert request["arguments"] == real_request["data"]["arguments"]
    assert set(done) == set(real_done["data"])
    assert real_done["data"]["result"] == {"content": "hello"}
    # The same result object; ours also tells the exit status, as the bash tool does.
    assert list(done["result"]) == ["content"]
    assert done["result"]["content"] == "hello\n<exited with exit code 0>"
    assert done["toolCallId"] == request["toolCallId"]


async def test_every_new_event_passes_the_official_parser(tmp_path: Path) -> None:
    from copilot.generated.session_events import session_event_from_dict

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("alpha\n", encoding="utf-8")
    store = SessionStore(tmp_path / "home")
    session, _ = await new_session(
        scripted([{"text": "ok"}, {"text": "ok"}]), tmp_path, store=store, policy=allow_all()
    )
    await session.send_and_wait("first")
    session.clear_context()
    session.rename("A title")
    await session.run_user_command("echo hi")
    attached = att.from_mentions("see @a.txt and @.", session.cwd)
    await session.send("see @a.txt and @.", attachments=attached)
    await session.close()
    lines = store.events_path(session.id).read_text("utf-8").splitlines()
    types = set()
    for line in lines:
        parsed = session_event_from_dict(json.loads(line))
        types.add(parsed.type.value)
        assert parsed.type.value != "unknown", line
    assert {
        "session.context_cleared",
        "session.title_changed",
        "tool.user_requested",
        "tool.execution_complete",
        "user.message",
    } <= types
    user = [json.loads(x)["data"] for x in lines if '"user.message"' in x][-1]
    assert [a["type"] for a in user["attachments"]] == ["file", "directory"]


async def test_resume_sends_the_model_what_the_live_session_sent(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n", encoding="utf-8")
    store = SessionStore(tmp_path / "home")
    model = scripted([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    session, _ = await new_session(model, tmp_path, store=store, policy=allow_all())
    await session.send_and_wait("forget me")
    session.clear_context()
    await session.run_user_command("echo from-the-user")
    await session.send("read @a.txt", attachments=att.from_mentions("read @a.txt", ws))
    await session.send_and_wait("and?")
    live = model.seen_messages[-1][1:]  # without the system prompt
    (ws / "a.txt").write_text("changed since\n", encoding="utf-8")
    await session.close()

    resumed = await Session.resume(store=store, session_id=session.id, model=model, cwd=ws)
    try:
        assert resumed.history.messages[: len(live)] == live
    finally:
        await resumed.close()
    contents = [m["content"] for m in live]
    assert not any("forget me" in str(c) for c in contents)  # cleared
    assert contents[0].startswith("The user ran a shell command themselves:\n$ echo from-the")
    assert "alpha" in contents[1] and contents[1].startswith("read @a.txt")


async def test_rename_is_shown_in_the_session_listing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    session, _ = await new_session(scripted([{"text": "ok"}]), tmp_path, store=store)
    await session.send_and_wait("hello")
    session.rename("Parser work")
    await session.close()
    assert store.summary(session.id).title == "Parser work"
    from app.sessions_table import _row, sessions_for

    found, _ = sessions_for(store, None, show_all=True, search="parser")
    assert [s.id for s in found] == [session.id]  # found by its title
    assert "Parser work" in _row(found[0])  # and listed under it
    (store.session_dir(session.id) / "session.json").unlink(missing_ok=True)
    for meta in store.session_dir(session.id).glob("*.json"):
        meta.unlink()  # without metadata the log itself tells
    assert store.summary(session.id).title == "Parser work"


def test_replay_and_export_draw_the_new_events(tmp_path: Path) -> None:
    from agent.transcript.blocks import NoticeBlock, ShellBlock, UserBlock
    from agent.transcript.fold import fold
    from app.export import to_html, to_markdown

    # Copilot's own !echo hello: a row with its output, not a raw row.
    copilot = fold(read_events(FIXTURE / "events.jsonl").events, replay=True)
    shells = [b for b in copilot.items if isinstance(b, ShellBlock)]
    assert [(b.tool_name, b.status, b.output) for b in shells] == [
        ("local_shell", "success", "hello")
    ]
    lines = [
        '{"type":"user.message","data":{"content":"see @a.txt","attachments":[{"type":"file",'
        '"path":"/w/a.txt","displayName":"a.txt"}],"transformedContent":"see @a.txt + text"},'
        '"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z",'
        '"parentId":null}',
        '{"type":"session.context_cleared","data":{"messagesCleared":2},'
        '"id":"00000000-0000-4000-8000-000000000002","timestamp":"2026-01-01T00:00:01.000Z",'
        '"parentId":"00000000-0000-4000-8000-000000000001"}',
        '{"type":"session.title_changed","data":{"title":"Cart fixes"},'
        '"id":"00000000-0000-4000-8000-000000000003","timestamp":"2026-01-01T00:00:02.000Z",'
        '"parentId":"00000000-0000-4000-8000-000000000002"}',
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    t = fold(read_events(path).events, replay=True)
    user, cleared, renamed = t.items
    assert isinstance(user, UserBlock) and user.attachments == ("a.txt",)
    assert isinstance(cleared, NoticeBlock) and cleared.subtype == "context_cleared"
    assert isinstance(renamed, NoticeBlock) and renamed.message == "Renamed: Cart fixes"
    assert t.title == "Cart fixes"
    markdown = to_markdown(t)
    assert "`@a.txt`" in markdown and "*Renamed: Cart fixes*" in markdown
    assert '<span class="chip">@a.txt</span>' in to_html(t)


# --- attachments -------------------------------------------------------------------------


def test_a_big_file_is_cut_with_a_note(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_text("x" * (att.MAX_FILE_BYTES + 500), encoding="utf-8")
    text = att.expand("look", [{"type": "file", "path": str(big), "displayName": "big.log"}])
    assert text.startswith('look\n\n<attached_file path="big.log">')
    assert text.count("x") == att.MAX_FILE_BYTES
    assert f"only the first {att.MAX_FILE_BYTES:,} of {att.MAX_FILE_BYTES + 500:,} bytes" in text


def test_mentions_attach_only_what_exists(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("", encoding="utf-8")
    found = att.from_mentions("mail me@example.com, see @src/m.py and @src, not @nope", tmp_path)
    assert found == [
        {"type": "file", "path": str(tmp_path / "src" / "m.py"), "displayName": "src/m.py"},
        {"type": "directory", "path": str(tmp_path / "src"), "displayName": "src"},
    ]


def test_normalize_refuses_what_it_cannot_record(tmp_path: Path) -> None:
    with pytest.raises(att.AttachmentError, match="needs a path"):
        att.normalize([{"type": "file"}], tmp_path)
    with pytest.raises(att.AttachmentError, match="not supported"):
        att.normalize([{"type": "github_url", "url": "x"}], tmp_path)
    assert att.normalize([{"type": "file", "path": "a"}], tmp_path) == [
        {"type": "file", "path": str(tmp_path / "a"), "displayName": "a"}
    ]


# --- the workspace index -----------------------------------------------------------------


def _tree(root: Path, names: list[str]) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_the_index_respects_gitignore(tmp_path: Path, git: bool) -> None:
    _tree(tmp_path, ["src/app.py", "build/out.bin", "debug.log", "docs/guide.md"])
    (tmp_path / ".gitignore").write_text("build/\n*.log\n", encoding="utf-8")
    if git:
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    files = list_workspace(tmp_path)
    assert "src/app.py" in files and "docs/guide.md" in files and "src/" in files
    assert not any(f.startswith("build") or f.endswith(".log") for f in files)


def test_fuzzy_prefers_the_file_name_then_tighter_matches() -> None:
    paths = ["docs/parser-notes.md", "src/parser.py", "src/pa/r/s/e/r.py", "tests/test_parser.py"]
    assert fuzzy("parser", paths)[:2] == ["src/parser.py", "docs/parser-notes.md"]
    assert fuzzy("tstpar", paths)[0] == "tests/test_parser.py"
    assert fuzzy("prsr", paths)[0] == "src/parser.py"  # letters apart, shortest wins the tie
    assert fuzzy("zzz", paths) == []


def test_typing_on_narrows_the_last_matches_to_the_same_result() -> None:
    paths = [f"src/pkg{i % 9}/mod_{i}.py" for i in range(500)] + ["docs/", "docs/modes.md"]
    index = FuzzyIndex(paths)
    for query in ("m", "mo", "mod", "mod_1", "mod_1", "mo", "doc", "d"):
        assert index.search(query, 20) == fuzzy(query, paths, 20), query


# --- the registry ------------------------------------------------------------------------


def test_command_parsing_and_suggestions() -> None:
    assert commands.parse("/rename  My title ") == ("rename", "My title")
    assert commands.parse("/usr/bin/env broke") is None
    assert commands.parse("// comment") is None
    assert commands.nearest("hepl") == "help"
    assert commands.nearest("forkk") == "fork"
    first = commands.candidates("/re")
    assert [c.label for c in first][:2] == ["/resume [id]", "/rename <title>"]
    rename = next(c for c in first if c.label.startswith("/rename"))
    assert rename.insert == "/rename " and not rename.submit  # it needs its argument


async def test_a_message_steered_into_a_running_loop_keeps_its_attachments(
    tmp_path: Path,
) -> None:
    import asyncio

    from tests.support.app_harness import FakeGateTool

    gate = FakeGateTool()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "b.txt").write_text("bravo-content\n", encoding="utf-8")
    model = scripted(
        [{"text": "", "tool_calls": [{"name": "gate", "arguments": {}}]}, {"text": "done"}]
    )
    session, recorder = await new_session(model, tmp_path, registry_factory=gate.registry)
    running = session.send("start")
    while not recorder.of("tool.execution_start"):
        await asyncio.sleep(0.01)
    steered = session.send(
        "also @b.txt", immediate=True, attachments=att.from_mentions("also @b.txt", ws)
    )
    gate.opened.set()
    await asyncio.wait_for(asyncio.gather(running, steered), 10)
    message = recorder.of("user.message")[-1].wire()["data"]
    assert message["content"] == "also @b.txt"
    assert message["attachments"][0]["displayName"] == "b.txt"
    assert "bravo-content" in model.seen_messages[-1][-1]["content"]


async def test_resume_closes_a_bang_command_the_crash_cut_short(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    session, _ = await new_session(scripted([{"text": "ok"}]), tmp_path, store=store)
    await session.send_and_wait("hello")
    await session.close()
    # As if the process died while `!sleep 60` ran: its request, no result.
    path = store.events_path(session.id)
    last = read_events(path).events[-1].id
    path.write_text(
        path.read_text("utf-8")
        + json.dumps(
            {
                "type": "tool.user_requested",
                "data": {
                    "toolCallId": "cut-1",
                    "toolName": "local_shell",
                    "arguments": {"command": "sleep 60"},
                },
                "id": "00000000-0000-4000-8000-0000000000aa",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "parentId": last,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    resumed = await Session.resume(
        store=store, session_id=session.id, model=scripted([]), cwd=tmp_path / "ws"
    )
    try:
        assert resumed.history.user_commands == {}
        closing = resumed.history.messages[-1]["content"]
        assert closing.startswith("The user ran a shell command themselves:\n$ sleep 60\nError:")
    finally:
        await resumed.close()
    from agent.transcript.fold import fold

    replay = fold(read_events(path).events, replay=True)
    assert not replay.busy  # not drawn as still running


async def test_a_mode_without_the_shell_refuses_a_bang_command(tmp_path: Path) -> None:
    """Where a mode offers no bash (plan mode), a !command is refused, not run unchecked."""
    from agent.events.schema import Mode
    from agent.tools.registry import ToolRegistry
    from agent.tools.view import ViewTool

    def registry(mode: Mode) -> ToolRegistry:
        return ToolRegistry([ViewTool()])

    session, recorder = await new_session(
        scripted([]), tmp_path, registry_factory=registry, policy=allow_all()
    )
    result = await session.run_user_command("touch made")
    assert not result.success and "cannot run in interactive mode" in (result.error or "")
    assert not (tmp_path / "ws" / "made").exists()
    assert recorder.of("permission.requested") == []
    done = recorder.of("tool.execution_complete")[0].wire()["data"]
    assert done["success"] is False and done["isUserRequested"] is True


async def test_add_dir_widens_the_sandbox_too(tmp_path: Path) -> None:
    from agent.sandbox.policy import Sandbox, SandboxSettings

    other = tmp_path / "other"
    other.mkdir()
    sandbox = Sandbox(SandboxSettings(), cwd=tmp_path / "ws")
    session, _ = await new_session(scripted([]), tmp_path, sandbox=sandbox)
    try:
        session.add_dir(other)
        session.add_dir(other)
        assert session.extra_dirs == [other.resolve()]
        assert sandbox.add_dirs == [other.resolve()]
        confinement = sandbox.confinement("interactive")
        if confinement is not None:  # a kernel that can confine
            assert other.resolve() in confinement.writable
    finally:
        await session.close()
