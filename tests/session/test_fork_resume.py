"""``--resume`` never writes outside loopdeck's store: a Copilot CLI session (by its
id or its path), or any log elsewhere, is forked into a new loopdeck session whose
model history is the origin's conversation."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from copilot.generated.session_events import session_event_from_dict

from agent.log.store import ForeignSession, SessionNotFound, SessionStore
from agent.models.scripted import Script, ScriptedModel
from tests.support.cli import only_session, run
from tests.support.paths import FIXTURES
from tests.support.scripting import FakeCountingModel

REAL = FIXTURES / "copilot-real"
TOOL_CALL_LOG = REAL / "irrlicht-auto-executed-tool-call" / "events.jsonl"
SHUTDOWN_MID_TURN_LOG = REAL / "irrlicht-tool-gate-permission-prompt" / "events.jsonl"
COPILOT_ID = "6a23e131-105b-42e5-829d-c8072e38f75d"  # the tool-call log's own id


def tree_state(root: Path) -> dict[str, tuple[int, str]]:
    """Every file and folder under ``root``: its mode and a hash of its bytes."""
    state: dict[str, tuple[int, str]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        state[str(path.relative_to(root))] = (info.st_mode, digest)
    return state


@pytest.fixture
def copilot_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Copilot home holding one real session (with its SOURCE file beside it)."""
    home = tmp_path / "copilot-home"
    folder = home / "session-state" / COPILOT_ID
    folder.mkdir(parents=True)
    shutil.copy(TOOL_CALL_LOG, folder / "events.jsonl")
    shutil.copy(TOOL_CALL_LOG.parent / "SOURCE", folder / "SOURCE")
    monkeypatch.setenv("COPILOT_HOME", str(home))
    return home


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> FakeCountingModel:
    """The model every run of ``main`` gets: a scripted reply, and what it was sent."""
    script = Script.model_validate(
        {"turns": [{"text": "Carrying on."}], "when_exhausted": "repeat_last"}
    )
    model = FakeCountingModel(ScriptedModel(script, "fork-test"))
    monkeypatch.setattr("app.model_setup.make_model", lambda *args, **kwargs: model)
    monkeypatch.setenv("LOOPDECK_MODEL", "scripted:fork-test")  # what make_model is asked for
    return model


def assert_copilot_conversation(messages: list[dict[str, Any]], prompt: str) -> None:
    """The first request holds the Copilot session's conversation, then ``prompt``."""
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"], roles
    user, call, result, answer, new = messages[1:]
    assert user["content"].startswith("Run the shell command `echo hello` with the bash tool")
    assert call["content"].startswith("Running 'echo hello' via the bash tool")
    [tool_call] = call["tool_calls"]
    assert tool_call["id"] == "call_41LZqJ0SZon9Fecj9kHu2iPR"
    assert tool_call["function"]["name"] == "bash"
    assert json.loads(tool_call["function"]["arguments"])["command"] == "echo hello"
    assert result["tool_call_id"] == "call_41LZqJ0SZon9Fecj9kHu2iPR"
    assert result["content"].startswith("hello\n")
    assert answer["content"] == "done"
    assert new == {"role": "user", "content": prompt}


@pytest.mark.parametrize("how", ["id prefix", "folder path", "events.jsonl path"])
def test_resuming_a_copilot_session_forks_it_and_leaves_every_byte_of_copilot_alone(
    how: str,
    copilot_home: Path,
    loopdeck_home: Path,
    tmp_path: Path,
    fake_model: FakeCountingModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = copilot_home / "session-state" / COPILOT_ID
    spec = {
        "id prefix": COPILOT_ID[:8],
        "folder path": str(folder),
        "events.jsonl path": str(folder / "events.jsonl"),
    }[how]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    before = tree_state(copilot_home)
    code, _, err = run(capsys, "-p", "Now say bye.", "--resume", spec, "--cwd", str(workspace))
    assert code == 0, err
    assert tree_state(copilot_home) == before  # same files, same bytes, nothing new

    fork = only_session(loopdeck_home)
    assert fork.name != COPILOT_ID
    assert f"Resume this session with: loopdeck --resume {fork.name[:8]}" in err
    assert_copilot_conversation(fake_model.seen_messages[0], "Now say bye.")

    lines = (fork / "events.jsonl").read_text().splitlines()
    for line in lines:  # the fork is a log the official parser reads, line by line
        session_event_from_dict(json.loads(line))
    events = [json.loads(line) for line in lines]
    assert events[0]["type"] == "session.start"
    assert events[0]["data"]["sessionId"] == fork.name
    assert events[1]["type"] == "session.handoff"
    assert events[1]["data"]["remoteSessionId"] == COPILOT_ID
    assert events[1]["data"]["context"] == str(folder / "events.jsonl")
    # The origin's lines follow byte for byte.
    origin = TOOL_CALL_LOG.read_text().splitlines()
    assert lines[2 : 2 + len(origin)] == origin
    assert [e["type"] for e in events[2 + len(origin) :]][:2] == ["session.resume", "user.message"]
    meta = json.loads((fork / "session.json").read_text())
    assert meta["forkedFrom"] == {
        "sessionId": COPILOT_ID,
        "producer": "copilot-agent",
        "path": str(folder / "events.jsonl"),
    }
    assert meta["cwd"] == str(workspace)


def test_a_fork_resumes_in_place_afterwards(
    copilot_home: Path,
    loopdeck_home: Path,
    fake_model: FakeCountingModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "-p", "One.", "--resume", COPILOT_ID[:8])
    assert code == 0, err
    fork = only_session(loopdeck_home)
    code, _, err = run(capsys, "-p", "Two.", "--resume", fork.name[:8])
    assert code == 0, err
    assert only_session(loopdeck_home) == fork  # no second fork: it is loopdeck's own
    second = fake_model.seen_messages[-1]
    assert [m["content"] for m in second if m["role"] == "user"][-2:] == ["One.", "Two."]
    assert json.loads((fork / "session.json").read_text())["forkedFrom"]["sessionId"] == COPILOT_ID


def test_a_session_shut_down_mid_turn_is_forked_with_its_open_call_closed(
    tmp_path: Path,
    loopdeck_home: Path,
    fake_model: FakeCountingModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    origin = tmp_path / "elsewhere"
    origin.mkdir()
    shutil.copy(SHUTDOWN_MID_TURN_LOG, origin / "events.jsonl")
    before = tree_state(origin)
    code, _, err = run(capsys, "-p", "Did it work?", "--resume", str(origin))
    assert code == 0, err
    assert tree_state(origin) == before
    messages = fake_model.seen_messages[0]
    # The call Copilot never finished is answered (providers refuse a dangling call).
    [call] = [m for m in messages if m.get("tool_calls")]
    [answer] = [m for m in messages if m["role"] == "tool"]
    assert answer["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "Interrupted" in answer["content"]
    # Closed as of when Copilot stopped, not months later when it was forked.
    stopped = json.loads(SHUTDOWN_MID_TURN_LOG.read_text().splitlines()[-1])["timestamp"]
    fork = only_session(loopdeck_home)
    events = [json.loads(line) for line in (fork / "events.jsonl").read_text().splitlines()]
    copied = len(SHUTDOWN_MID_TURN_LOG.read_text().splitlines())
    resumed = [e["type"] for e in events].index("session.resume")
    closing = events[2 + copied : resumed]  # between the copy and the resume
    assert [(e["type"], e["timestamp"]) for e in closing] == [
        ("tool.execution_complete", stopped),
        ("assistant.turn_end", stopped),
    ]


def test_a_fork_left_without_a_word_is_not_kept(
    copilot_home: Path, loopdeck_home: Path, fake_model: FakeCountingModel
) -> None:
    import argparse
    import asyncio

    from app.cli import build_parser
    from app.model_setup import open_session

    args: argparse.Namespace = build_parser().parse_args(["--resume", COPILOT_ID[:8]])

    async def open_and_leave() -> str:
        session = await open_session(args, Path.cwd())
        assert (loopdeck_home / "session-state" / session.id / "events.jsonl").is_file()
        await session.close()
        return session.id

    fork_id = asyncio.run(open_and_leave())
    assert not (loopdeck_home / "session-state" / fork_id).exists()


def test_a_link_out_of_the_store_is_forked_not_written_through(
    copilot_home: Path,
    loopdeck_home: Path,
    fake_model: FakeCountingModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (loopdeck_home / "session-state").mkdir(parents=True)
    link = loopdeck_home / "session-state" / "linked-session"
    link.symlink_to(copilot_home / "session-state" / COPILOT_ID)
    before = tree_state(copilot_home)
    code, _, err = run(capsys, "-p", "Hi.", "--resume", "linked-session")
    assert code == 0, err
    assert tree_state(copilot_home) == before
    forks = [p for p in (loopdeck_home / "session-state").iterdir() if not p.is_symlink()]
    assert len(forks) == 1
    store = SessionStore(loopdeck_home)
    assert not store.owns("linked-session")
    with pytest.raises(ForeignSession):
        store.write_meta("linked-session", {})
    with pytest.raises(ForeignSession):
        store.delete("linked-session")


def test_no_id_leads_out_of_the_store(tmp_path: Path, loopdeck_home: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "events.jsonl").write_text("")
    store = SessionStore(loopdeck_home)
    for spec in (str(outside), "../../outside", "..", ".", ""):
        with pytest.raises(SessionNotFound):
            store.resolve(spec)
        with pytest.raises(SessionNotFound):
            store.session_dir(spec)
    assert os.listdir(outside) == ["events.jsonl"]


def test_resume_of_a_path_that_is_not_a_session_says_so(
    tmp_path: Path, fake_model: FakeCountingModel, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-p", "x", "--resume", str(tmp_path / "nowhere"))
    assert code == 2 and "no such file or folder" in err
    code, _, err = run(capsys, "-p", "x", "--resume", str(tmp_path))
    assert code == 2 and "holds no events.jsonl" in err
    code, _, err = run(capsys, "-p", "x", "--resume", "ffffffff")
    assert code == 2 and "no session 'ffffffff'" in err


def test_an_export_of_a_fork_is_the_fork_and_names_its_origin(
    copilot_home: Path,
    loopdeck_home: Path,
    fake_model: FakeCountingModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "-p", "Now say bye.", "--resume", COPILOT_ID[:8])
    assert code == 0, err
    fork = only_session(loopdeck_home)
    code, out, err = run(capsys, "export", fork.name[:8])
    assert code == 0, err
    assert out.splitlines()[0] == f"# Session {fork.name}"
    assert f"Forked from GitHub Copilot CLI session {COPILOT_ID}" in out
    shown = ("Run the shell command `echo hello`", "echo hello", "Now say bye.", "Carrying on.")
    for text in shown:
        assert text in out


def test_a_sub_agents_conversation_is_not_the_main_history() -> None:
    from agent.log.store import read_events
    from agent.loop.history import History

    history = History()
    for event in read_events(REAL / "irrlicht-foreground-subagent" / "events.jsonl").events:
        history.apply(event)
    users = [m["content"] for m in history.messages if m["role"] == "user"]
    assert len(users) == 1 and users[0].startswith("Delegate this to the task subagent")
    # Every call the main agent made is answered right after it: none is left dangling
    # behind the sub-agent's own messages.
    for i, message in enumerate(history.messages):
        for call in message.get("tool_calls", []):
            answers = history.messages[i + 1 : i + 1 + len(message["tool_calls"])]
            assert call["id"] in [a.get("tool_call_id") for a in answers]
    assert not history.open_calls


def test_every_hint_under_sessions_copilot_is_a_command_that_works(
    copilot_home: Path,
    loopdeck_home: Path,
    tmp_path: Path,
    fake_model: FakeCountingModel,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import re

    from app.viewer import ViewerApp

    # A second Copilot session that worked here, so the listing has others elsewhere.
    here = tmp_path / "here"
    here.mkdir()
    lines = TOOL_CALL_LOG.read_text().splitlines(keepends=True)
    start = json.loads(lines[0])
    start["data"]["context"]["cwd"] = str(here)
    local_id = "0b0e5a1d-0000-4000-8000-000000000000"
    folder = copilot_home / "session-state" / local_id
    folder.mkdir()
    (folder / "events.jsonl").write_text(json.dumps(start) + "\n" + "".join(lines[1:]))
    monkeypatch.chdir(here)
    monkeypatch.setenv("COLUMNS", "250")  # the first prompt uncut
    before = tree_state(copilot_home)

    code, out, err = run(capsys, "sessions", "--copilot")
    assert code == 0, err
    assert out.splitlines()[1].split()[0] == local_id[:8]  # this directory's first
    hints = re.findall(r"loopdeck [^\n]*?(?=   |\n|$)", out.split("\n\n", 1)[1])
    assert hints == [
        "loopdeck sessions --copilot --all",
        "loopdeck --resume ID",
        "loopdeck replay ID",
        "loopdeck export ID",
    ], out
    # The listing it points to shows the other one.
    code, out, err = run(capsys, *hints[0].split()[1:])
    assert code == 0 and COPILOT_ID[:8] in out, err

    opened: list[Path] = []
    monkeypatch.setattr(ViewerApp, "run", lambda self: opened.append(self._viewer.path) or 0)
    monkeypatch.setattr("app.subcommands.need_terminal", lambda prog, instead: True)
    shown_id = COPILOT_ID[:8]
    for hint in hints[1:]:
        argv = hint.replace("ID", shown_id).split()[1:]
        if argv[0] == "--resume":
            argv = ["-p", "Go on.", *argv]  # the app, headless: the same session is opened
        code, out, err = run(capsys, *argv)
        assert code == 0, (hint, err)
        if argv[0] == "export":
            assert "Run the shell command `echo hello`" in out
    assert opened == [copilot_home / "session-state" / COPILOT_ID / "events.jsonl"]
    assert_copilot_conversation(fake_model.seen_messages[0], "Go on.")
    assert tree_state(copilot_home) == before
    # The fork is listed with its origin.
    code, out, err = run(capsys, "sessions", "--all")
    assert code == 0 and f"⑂ copilot {COPILOT_ID[:8]}: Run the shell command" in out, out


def test_lines_of_the_origin_that_are_not_events_are_left_out_with_a_warning(
    tmp_path: Path,
    loopdeck_home: Path,
    fake_model: FakeCountingModel,
    capsys: pytest.CaptureFixture[str],
) -> None:
    origin = tmp_path / "stream"
    origin.mkdir()
    result = '{"type":"result","timestamp":"2026-08-03T10:40:00.000Z","exitCode":0}'
    text = TOOL_CALL_LOG.read_text() + "not json\n" + result + "\n" + '{"type":"assistant.tu'
    (origin / "events.jsonl").write_text(text)
    code, _, err = run(capsys, "-p", "Next.", "--resume", str(origin))
    assert code == 0, err
    assert (origin / "events.jsonl").read_text() == text
    lines = (only_session(loopdeck_home) / "events.jsonl").read_text().splitlines()
    for line in lines:
        session_event_from_dict(json.loads(line))
    copied = TOOL_CALL_LOG.read_text().splitlines()
    assert lines[2 : 2 + len(copied)] == copied
    warning = json.loads(lines[2 + len(copied)])
    assert warning["type"] == "session.warning"
    assert warning["data"]["warningType"] == "fork_skipped_lines"
    assert "line 17, line 18, line 19 not copied" in warning["data"]["message"]
    assert_copilot_conversation(fake_model.seen_messages[0], "Next.")


async def test_a_new_session_never_makes_its_folder_through_a_link_out(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    from agent.session.session import Session

    outside = tmp_path / "outside"
    outside.mkdir()
    (loopdeck_home / "session-state").mkdir(parents=True)
    (loopdeck_home / "session-state" / "chosen-id").symlink_to(outside)
    script = Script.model_validate({"turns": [{"text": "hi"}]})
    with pytest.raises(ForeignSession):
        await Session.create(
            model=ScriptedModel(script, "t"),
            cwd=tmp_path,
            store=SessionStore(loopdeck_home),
            session_id="chosen-id",
        )
    assert list(outside.iterdir()) == []
