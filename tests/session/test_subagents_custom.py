"""Custom agents (``.github/agents/*.agent.md``) as ``task`` agent types: the sub-agent
runs with the agent's prompt, its tools and its name; one the model may not invoke is
not offered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent.models.base import ModelClient, RetryPolicy, StreamItem
from agent.models.scripted import Script, ScriptedModel
from tests.support.scripting import FakeCountingModel, new_session
from tests.support.subagents import task_call


@pytest.fixture(autouse=True)
def _no_user_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))


REVIEWER = """---
name: Code Reviewer
description: Reviews code for bugs and unclear names.
tools: ["read", "search"]
---
You are a careful code reviewer. Point at bugs first.
"""
HIDDEN = """---
description: Only for people.
disable-model-invocation: true
---
You are hidden.
"""


class FakeRecordingModel:
    """The session's scripted model; each sub-agent's model records what it saw."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.subs: dict[str, FakeCountingModel] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def retry_policy(self) -> RetryPolicy:
        return self.inner.retry_policy

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        return self.inner.stream(messages, tools, call_index=call_index)

    def for_subagent(self, name: str, agent_type: str) -> ModelClient:
        sub = self.inner.for_subagent(name, agent_type)
        assert isinstance(sub, ScriptedModel)
        self.subs[name] = FakeCountingModel(sub)
        return self.subs[name]


def repository(tmp_path: Path) -> None:
    agents = tmp_path / "ws" / ".github" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.agent.md").write_text(REVIEWER)
    (agents / "hidden.agent.md").write_text(HIDDEN)
    (tmp_path / "ws" / "app.py").write_text("def main():\n    retrun 1\n")


async def test_the_model_delegates_to_a_custom_agent(tmp_path: Path) -> None:
    repository(tmp_path)
    script = {
        "turns": [
            {"text": "", "tool_calls": [task_call("review", "Review app.py.", "reviewer")]},
            {"text": "Reviewed."},
        ],
        "subagents": {
            "review": {
                "turns": [
                    {"text": "", "tool_calls": [{"name": "view", "arguments": {"path": "app.py"}}]},
                    {"text": "Line 2: `retrun` should be `return`."},
                ]
            }
        },
    }
    model = FakeRecordingModel(ScriptedModel(Script.model_validate(script), "custom"))
    session, rec = await new_session(model, tmp_path, mode="autopilot")
    # The task tool offers it by its id, beside the built-in kinds; not the hidden one.
    [task] = [t for t in session.tool_schemas() if t["function"]["name"] == "task"]
    kinds = task["function"]["parameters"]["properties"]["agent_type"]["enum"]
    assert kinds == ["explore", "task", "general-purpose", "reviewer"]
    await session.send_and_wait("Review my code.")

    [started] = rec.of("subagent.started")
    assert started.data.agent_name == "reviewer"
    assert started.data.agent_display_name == "Code Reviewer"
    [done] = [e for e in rec.of("tool.execution_complete") if e.agent_id is None]
    assert done.data.success and done.data.result.content.startswith("Line 2: `retrun`")
    # Its own prompt first, and only its tools: read and search.
    seen = model.subs["review"]
    assert seen.seen_messages[0][0]["content"].startswith(
        "You are a careful code reviewer. Point at bugs first."
    )
    assert seen.seen_tools[0] == ["view", "grep", "glob"]
    await session.close()


async def test_an_unknown_agent_type_names_the_custom_ones_too(tmp_path: Path) -> None:
    repository(tmp_path)
    script = {
        "turns": [
            {"text": "", "tool_calls": [task_call("x", "Do it.", "hidden")]},
            {"text": "ok"},
        ]
    }
    session, rec = await new_session(
        ScriptedModel(Script.model_validate(script), "custom"), tmp_path
    )
    await session.send_and_wait("go")
    [done] = [e for e in rec.of("tool.execution_complete") if e.agent_id is None]
    assert done.data.error.message == (
        "Unknown agent_type: hidden. Valid types are: explore, task, general-purpose, reviewer"
    )
    await session.close()
