"""Custom agents and skills in a session driven by a scripted model: selecting an
agent (its tools, its prompt, the event, resume), a skill loaded with the ``skill``
tool (the events Copilot writes, what the model reads next), and both passing the
official SDK's event parser (agent/session/extensions.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.events.schema import Event, SkillInvokedData, UserMessageData
from agent.extensions.agents.catalog import load_agents
from agent.extensions.skills.catalog import load_skills
from agent.log.store import SessionStore, read_events
from agent.session.session import Session
from tests.support.scripting import FakeCountingModel, FakeRecorder, new_session, scripted

session_events = pytest.importorskip("copilot.generated.session_events")

# Written from Copilot CLI's docs (custom agents, agent skills).
REVIEWER = """\
---
name: Code reviewer
description: Reviews a change for bugs, without editing files.
tools: ["read", "search"]
---
You are a careful code reviewer. Report problems by file and line. REVIEWER-MARK
"""
RELEASE_NOTES = """\
---
name: release-notes
description: Write release notes from the commits since the last tag.
allowed-tools: bash
---
# Release notes

1. List the commits since the last tag. RELEASE-MARK
2. Group them under Added, Changed and Fixed.
"""


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".github" / "agents").mkdir(parents=True)
    (ws / ".github" / "agents" / "reviewer.agent.md").write_text(REVIEWER, "utf-8")
    (ws / ".github" / "skills" / "release-notes").mkdir(parents=True)
    (ws / ".github" / "skills" / "release-notes" / "SKILL.md").write_text(RELEASE_NOTES, "utf-8")
    (ws / ".github" / "skills" / "release-notes" / "template.md").write_text("## Added\n", "utf-8")
    return ws


def load(session: Session, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    session.extensions.load(load_agents(session.cwd, env), load_skills(session.cwd, env))


def official(event: Event) -> Any:
    wire = json.loads(json.dumps(event.wire()))
    parsed = session_events.session_event_from_dict(wire)
    assert parsed.type.value == event.type
    return parsed


async def open_session(
    tmp_path: Path, turns: list[dict[str, Any]], store: SessionStore | None = None
) -> tuple[Session, FakeRecorder, FakeCountingModel]:
    workspace(tmp_path)
    model = scripted(turns)
    session, recorder = await new_session(model, tmp_path, store=store)
    load(session, tmp_path)
    return session, recorder, model


async def test_selecting_an_agent_narrows_tools_and_adds_its_prompt(tmp_path: Path) -> None:
    session, recorder, model = await open_session(
        tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    )
    await session.send_and_wait("before")
    assert "edit" in model.seen_tools[0]
    assert "REVIEWER-MARK" not in session.system_prompt()

    agent = session.extensions.select("reviewer")
    assert agent.display_name == "Code reviewer"
    await session.send_and_wait("during")
    assert model.seen_tools[1] == ["view", "grep", "glob", "ask_user", "skill"]
    prompt = model.seen_messages[1][0]["content"]
    assert "# Custom agent: Code reviewer" in prompt
    assert "Report problems by file and line. REVIEWER-MARK" in prompt

    session.extensions.deselect()
    await session.send_and_wait("after")
    assert "edit" in model.seen_tools[2]
    assert "REVIEWER-MARK" not in model.seen_messages[2][0]["content"]

    (selected,) = recorder.of("subagent.selected")
    assert selected.wire()["data"] == {
        "agentName": "reviewer",
        "agentDisplayName": "Code reviewer",
        "tools": ["read", "search"],
    }
    data = official(selected).data
    assert (data.agent_name, data.tools) == ("reviewer", ["read", "search"])
    (deselected,) = recorder.of("subagent.deselected")
    official(deselected)
    await session.close()


async def test_an_unknown_agent_is_refused_with_the_names(tmp_path: Path) -> None:
    session, recorder, _ = await open_session(tmp_path, [])
    with pytest.raises(KeyError, match=r"no custom agent named 'nobody' \(available: reviewer\)"):
        session.extensions.select("nobody")
    assert recorder.of("subagent.selected") == []
    await session.close()


async def test_the_selection_survives_resume(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    session, _, _ = await open_session(tmp_path, [{"text": "ok"}], store)
    session.extensions.select("reviewer")
    await session.send_and_wait("hi")
    await session.close()

    model = scripted([{"text": "again"}])
    resumed = await Session.resume(store=store, session_id=session.id, model=model)
    assert resumed.extensions.agent is None  # the agents are not known yet
    load(resumed, tmp_path)
    agent = resumed.extensions.agent
    assert agent is not None and agent.name == "reviewer"
    await resumed.send_and_wait("more")
    assert "skill" in model.seen_tools[0] and "edit" not in model.seen_tools[0]
    await resumed.close()


SKILL_CALL = {"tool_calls": [{"name": "skill", "arguments": {"skill": "release-notes"}}]}


async def test_a_skill_loaded_by_the_model_is_written_as_copilot_writes_it(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "store")
    session, recorder, model = await open_session(
        tmp_path, [SKILL_CALL, {"text": "Notes written."}], store
    )
    assert "# Skills" in session.system_prompt()
    assert "- release-notes: Write release notes" in session.system_prompt()
    assert "RELEASE-MARK" not in session.system_prompt()  # the body waits until used
    await session.send_and_wait("write the release notes")

    types = recorder.types()
    done = types.index("tool.execution_complete")
    assert types[done : done + 3] == ["tool.execution_complete", "skill.invoked", "user.message"]
    (complete,) = recorder.of("tool.execution_complete")
    assert complete.wire()["data"]["result"]["content"] == (
        'Skill "release-notes" loaded successfully. Follow the instructions in the skill context.'
    )
    (invoked,) = recorder.of("skill.invoked")
    assert isinstance(invoked.data, SkillInvokedData)
    folder = session.cwd / ".github" / "skills" / "release-notes"
    assert invoked.data.path == str(folder / "SKILL.md")
    assert invoked.data.content.startswith("# Release notes")
    assert (invoked.data.trigger, invoked.data.source) == ("agent-invoked", "project")
    assert invoked.data.allowed_tools == ["bash"]
    context = recorder.of("user.message")[-1]
    assert isinstance(context.data, UserMessageData)
    assert context.data.source == "skill-release-notes"
    assert context.data.content.startswith(
        f'<skill-context name="release-notes">\nBase directory for this skill: {folder}\n\n'
    )
    # The next call reads the result, then the instructions.
    last = model.seen_messages[1]
    assert [m["role"] for m in last[-3:]] == ["assistant", "tool", "user"]
    assert "RELEASE-MARK" in last[-1]["content"]
    # Everything written and streamed parses with the official SDK.
    (loaded,) = recorder.of("session.skills_loaded")
    assert loaded.ephemeral
    skill = official(loaded).data.skills[0]
    assert (skill.name, skill.source.value, skill.enabled) == ("release-notes", "project", True)
    parsed = official(invoked).data
    assert (parsed.name, parsed.trigger.value) == ("release-notes", "agent-invoked")
    await session.close()
    on_disk = [e.type for e in read_events(store.events_path(session.id)).events]
    assert "skill.invoked" in on_disk and "session.skills_loaded" not in on_disk
    assert session.extensions.invoked[0].name == "release-notes"


async def test_a_skill_among_other_calls_comes_after_all_their_results(tmp_path: Path) -> None:
    calls = {
        "tool_calls": [
            {"name": "skill", "arguments": {"skill": "release-notes"}},
            {"name": "glob", "arguments": {"pattern": "*.md"}},
        ]
    }
    session, _, model = await open_session(tmp_path, [calls, {"text": "done"}])
    await session.send_and_wait("notes")
    roles = [m["role"] for m in model.seen_messages[1]]
    assert roles[-4:] == ["assistant", "tool", "tool", "user"]
    await session.close()


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("nope", 'Skill "nope" not found. Available skills: release-notes'),
        ("hidden", 'Skill "hidden" not found. Available skills: release-notes'),
    ],
)
async def test_a_skill_that_cannot_be_loaded_is_a_failed_call(
    tmp_path: Path, name: str, says: str
) -> None:
    ws = workspace(tmp_path)
    hidden = ws / ".github" / "skills" / "hidden"
    hidden.mkdir()
    (hidden / "SKILL.md").write_text(
        "---\ndescription: for people\ndisable-model-invocation: true\n---\nx\n", "utf-8"
    )
    model = scripted([{"tool_calls": [{"name": "skill", "arguments": {"skill": name}}]}])
    session, recorder = await new_session(model, tmp_path)
    load(session, tmp_path)
    assert "hidden" not in session.system_prompt()
    await session.send_and_wait("go")
    (complete,) = recorder.of("tool.execution_complete")
    assert complete.wire()["data"]["error"]["message"] == says
    assert recorder.of("skill.invoked") == []
    await session.close()


async def test_a_disabled_skill_is_not_offered(tmp_path: Path) -> None:
    session, _, _ = await open_session(tmp_path, [])
    session.extensions.set_skill_enabled("release-notes", False)
    assert "skill" not in session.tools()
    assert "# Skills" not in session.system_prompt()
    assert session.extensions.load_skill("release-notes", "c1").error == (
        'Skill "release-notes" is disabled. Use /skills to enable it.'
    )
    session.extensions.set_skill_enabled("release-notes", True)
    assert "skill" in session.tools()
    await session.close()


async def test_broken_files_are_warnings_and_nothing_else_stops(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / ".github" / "agents" / "bad.agent.md").write_text("---\nname: x\n---\n", "utf-8")
    bad = ws / ".github" / "skills" / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: bad/name\ndescription: d\n---\n", "utf-8")
    session, recorder = await new_session(scripted([{"text": "fine"}]), tmp_path)
    load(session, tmp_path)
    warnings = [e.wire()["data"] for e in recorder.of("session.warning")]
    assert [w["warningType"] for w in warnings] == ["custom_agents", "skills"]
    assert "bad.agent.md: field 'description' is required; skipped" in warnings[0]["message"]
    assert "bad/SKILL.md: field 'name' may hold letters" in warnings[1]["message"]
    outcome = await session.send_and_wait("hi")
    assert outcome.final_text == "fine"
    await session.close()
