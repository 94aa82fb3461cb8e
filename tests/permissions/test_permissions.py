"""Permission rules, the gate in the loop, and the events that record decisions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent.events.schema import (
    PermissionCompletedData,
    PermissionRequestedData,
    ToolExecutionCompleteData,
)
from agent.permissions.rules import (
    PermissionAnswer,
    PermissionPolicy,
    PermissionPrompt,
    Rule,
    RuleError,
    command_identifiers,
)
from agent.permissions.shell_commands import parse_line
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agent.tools.registry import ToolRegistry
from tests.support.permission_ui import bash
from tests.support.scripting import new_session, scripted

# --- rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "argument"),
    [
        ("shell", "shell", None),
        ("shell(git:*)", "shell", "git:*"),
        ("shell(git push)", "shell", "git push"),
        ("write", "write", None),
        (" shell( rm ) ", "shell", "rm"),
    ],
)
def test_rules_parse(text: str, kind: str, argument: str | None) -> None:
    assert Rule.parse(text) == Rule(kind, argument)


@pytest.mark.parametrize("text", ["", "shell(", "write(x)", "shell()", "a b"])
def test_bad_rules_are_refused_with_a_message(text: str) -> None:
    with pytest.raises(RuleError):
        Rule.parse(text)


def test_command_words_split_every_way_commands_are_chained() -> None:
    line = "FOO=1 sudo -E rm -rf x && ls | grep a; echo $(whoami) `id` || (cd /; make)"
    assert [c.name for c in parse_line(line).commands] == [
        "rm",
        "ls",
        "grep",
        "echo",
        "whoami",
        "id",
        "cd",
        "make",
    ]
    assert command_identifiers("git add . && git commit -m 'x'") == ["git"]


@pytest.mark.parametrize(
    ("allow", "deny", "command", "verdict"),
    [
        (["shell(git:*)"], [], "git status", "allow"),
        (["shell(git:*)"], [], "gitk", "ask"),
        (["shell(git:*)"], [], "git log && rm -rf /", "ask"),  # every segment must be allowed
        (["shell(git:*)"], ["shell(git push)"], "git push origin main", "deny"),
        (["shell(git:*)"], ["shell(git push)"], "git pull", "allow"),
        (["shell"], ["shell(rm)"], "ls; rm -rf build", "deny"),  # deny wins over allow
        (["shell"], ["shell(rm)"], "echo $(rm x)", "deny"),
        (["shell"], ["shell(rm)"], "sudo rm x", "deny"),
        (["shell"], [], "anything at all", "allow"),
        ([], [], "ls", "ask"),
        (["shell(npm test)"], [], "npm test -- --watch", "allow"),
        (["shell(npm test)"], [], "npm install", "ask"),
    ],
)
def test_shell_rules(allow: list[str], deny: list[str], command: str, verdict: str) -> None:
    policy = PermissionPolicy.from_flags(allow, deny)
    assert policy.decide("shell", "bash", command)[0] == verdict


def test_deny_wins_over_allow_all_and_session_approvals() -> None:
    policy = PermissionPolicy.from_flags([], ["shell(rm)", "write"], allow_all=True)
    policy.approve_for_session("shell", "rm -rf x")
    policy.approve_for_session("write")
    assert policy.decide("shell", "bash", "rm -rf x")[0] == "deny"
    assert policy.decide("write", "edit")[0] == "deny"
    assert policy.decide("shell", "bash", "ls")[0] == "allow"


def test_reads_are_allowed_writes_ask_by_default() -> None:
    policy = PermissionPolicy()
    assert policy.decide("read", "view")[0] == "allow"
    assert policy.decide("write", "edit")[0] == "ask"
    assert policy.decide("shell", "bash", "ls")[0] == "ask"
    assert PermissionPolicy.from_flags(["write"]).decide("write", "create")[0] == "allow"
    assert PermissionPolicy.from_flags(["edit"]).decide("write", "edit")[0] == "allow"


def test_session_approval_covers_the_command_names_approved() -> None:
    policy = PermissionPolicy()
    policy.approve_for_session("shell", "pytest -q && git status")
    assert policy.decide("shell", "bash", "pytest tests/x.py")[0] == "allow"
    assert policy.decide("shell", "bash", "git diff")[0] == "allow"
    assert policy.decide("shell", "bash", "make")[0] == "ask"


# --- the gate in a running loop ---------------------------------------------------


class FakeShellArgs(ToolArgs):
    command: str


class FakeShellTool(Tool):
    name: ClassVar[str] = "bash"
    description: ClassVar[str] = "runs nothing, records what it was asked"
    kind = "shell"
    Args = FakeShellArgs
    ran: ClassVar[list[str]] = []

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        FakeShellTool.ran.append(args.command)
        return ToolResult(content=f"ran {args.command}")


class FakeWriteArgs(ToolArgs):
    path: str
    file_text: str


class FakeWriteTool(Tool):
    name: ClassVar[str] = "create"
    description: ClassVar[str] = "pretends to write"
    kind = "write"
    Args = FakeWriteArgs

    def preview(self, args: Any, ctx: ToolContext) -> str:
        return f"--- /dev/null\n+++ b/{args.path}\n@@ -0,0 +1 @@\n+{args.file_text}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult(content=f"created {args.path}")


def fake_tools(mode: str) -> ToolRegistry:
    return ToolRegistry([FakeShellTool(), FakeWriteTool()])


@pytest.fixture(autouse=True)
def _reset_fake() -> None:
    FakeShellTool.ran = []


async def test_without_a_human_asking_tools_are_denied_and_the_loop_goes_on(
    tmp_path: Path,
) -> None:
    model = scripted([{"text": "", "tool_calls": [bash("make")]}, {"text": "ok, I won't"}])
    session, rec = await new_session(model, tmp_path, registry_factory=fake_tools)
    outcome = await session.send_and_wait("build it")
    assert FakeShellTool.ran == []
    completed = rec.of("permission.completed")[0].data
    assert isinstance(completed, PermissionCompletedData)
    assert completed.result["kind"] == "denied-no-approval-rule-and-could-not-request-from-user"
    tool = rec.of("tool.execution_complete")[0].data
    assert isinstance(tool, ToolExecutionCompleteData) and not tool.success
    assert tool.error is not None and "--allow-tool" in tool.error.message
    assert outcome.final_text == "ok, I won't"
    # The model read why.
    assert "needs approval" in model.seen_messages[1][-1]["content"]


async def test_rules_allow_and_deny_with_events(tmp_path: Path) -> None:
    policy = PermissionPolicy.from_flags(["shell(git:*)"], ["shell(git push)"])
    model = scripted(
        [{"text": "", "tool_calls": [bash("git status"), bash("git push")]}, {"text": "done"}]
    )
    session, rec = await new_session(model, tmp_path, registry_factory=fake_tools, policy=policy)
    await session.send_and_wait("sync")
    assert FakeShellTool.ran == ["git status"]
    results = [e.data.result["kind"] for e in rec.of("permission.completed")]  # type: ignore[union-attr]
    assert results == ["approved", "denied-by-rules"]
    requested = rec.of("permission.requested")[1].data
    assert isinstance(requested, PermissionRequestedData)
    assert requested.permission_request["fullCommandText"] == "git push"
    denied = rec.of("tool.execution_complete")[1].data
    assert isinstance(denied, ToolExecutionCompleteData)
    assert denied.error is not None and "shell(git push)" in denied.error.message


class FakeHuman:
    def __init__(self, *answers: PermissionAnswer) -> None:
        self.answers = list(answers)
        self.prompts: list[PermissionPrompt] = []

    async def __call__(self, prompt: PermissionPrompt) -> PermissionAnswer:
        self.prompts.append(prompt)
        return self.answers.pop(0)


async def test_interactive_asks_the_human_once_always_and_no(tmp_path: Path) -> None:
    model = scripted(
        [
            {"text": "", "tool_calls": [bash("pytest -q")]},
            {"text": "", "tool_calls": [bash("pytest -x")]},  # approved for the session
            {"text": "", "tool_calls": [bash("rm -rf build")]},
            {
                "text": "",
                "tool_calls": [
                    {"name": "create", "arguments": {"path": "a.txt", "file_text": "hi"}}
                ],
            },
            {"text": "understood"},
        ]
    )
    session, rec = await new_session(model, tmp_path, registry_factory=fake_tools)
    human = FakeHuman(
        PermissionAnswer("session"),
        PermissionAnswer("deny", "do not delete the build"),
        PermissionAnswer("approve"),
    )
    session.permissions.asker = human
    await session.send_and_wait("test")
    assert FakeShellTool.ran == ["pytest -q", "pytest -x"]
    assert [p.command for p in human.prompts[:2]] == ["pytest -q", "rm -rf build"]
    write_prompt = human.prompts[2]
    assert write_prompt.kind == "write" and write_prompt.diff is not None
    assert "+hi" in write_prompt.diff
    kinds = [e.data.result["kind"] for e in rec.of("permission.completed")]  # type: ignore[union-attr]
    assert kinds == ["approved-for-session", "approved", "denied-interactively-by-user", "approved"]
    assert "do not delete the build" in model.seen_messages[3][-1]["content"]


async def test_autopilot_never_asks(tmp_path: Path) -> None:
    done = {"name": "task_complete", "arguments": {"summary": "s"}}
    model = scripted(
        [{"text": "", "tool_calls": [bash("make")]}, {"text": "", "tool_calls": [done]}]
    )

    def tools(mode: str) -> ToolRegistry:
        from agent.tools.task_complete import TaskCompleteTool

        return ToolRegistry([FakeShellTool(), TaskCompleteTool()])

    session, rec = await new_session(model, tmp_path, mode="autopilot", registry_factory=tools)
    human = FakeHuman()
    session.permissions.asker = human
    await session.send_and_wait("build")
    assert human.prompts == [] and FakeShellTool.ran == []
    assert rec.of("permission.completed")[0].data.result["kind"].startswith("denied")  # type: ignore[union-attr]


async def test_abort_while_waiting_for_the_human(tmp_path: Path) -> None:
    model = scripted([{"text": "", "tool_calls": [bash("make")]}])
    session, rec = await new_session(model, tmp_path, registry_factory=fake_tools)
    waiting = asyncio.Event()

    async def never_answers(prompt: PermissionPrompt) -> PermissionAnswer:
        waiting.set()
        await asyncio.sleep(60)
        raise AssertionError("unreachable")

    session.permissions.asker = never_answers
    future = session.send("go")
    await asyncio.wait_for(waiting.wait(), 2)
    session.abort()
    outcome = await asyncio.wait_for(future, 2)
    assert outcome.aborted and FakeShellTool.ran == []
    assert rec.of("permission.completed")[0].data.result["kind"] == "cancelled"  # type: ignore[union-attr]
    assert rec.types()[-1] == "session.idle"


# --- unknown kinds; which part of a chained command was refused ---------------------


@pytest.mark.parametrize("text", ["bogus", "bogus(x)", "Shell", "view", "wirte"])
def test_unknown_rule_kinds_are_refused_naming_the_valid_ones(text: str) -> None:
    with pytest.raises(RuleError) as caught:
        PermissionPolicy.from_flags([text], tools=["create", "edit", "bash"])
    message = str(caught.value)
    assert f"unknown kind {text.split('(')[0]!r}" in message
    assert "shell, write, create, edit, bash" in message


def test_known_kinds_and_tool_names_pass_and_embedders_may_name_their_own_tools() -> None:
    policy = PermissionPolicy.from_flags(
        ["shell(git:*)", "write", "edit"], ["bash"], tools=["create", "edit", "bash"]
    )
    assert [str(r) for r in policy.allow] == ["shell(git:*)", "write", "edit"]
    # Without a list of tools (an SDK app's own tools are known per session) any name goes.
    assert PermissionPolicy.from_flags(["weather"]).allow == [Rule("weather")]


async def test_a_denied_part_of_a_chained_command_is_named(tmp_path: Path) -> None:
    policy = PermissionPolicy.from_flags(["shell"], ["shell(rm)"])
    model = scripted([{"text": "", "tool_calls": [bash("ls && rm -rf build")]}, {"text": "ok"}])
    session, rec = await new_session(model, tmp_path, registry_factory=fake_tools, policy=policy)
    await session.send_and_wait("clean")
    denied = rec.of("tool.execution_complete")[0].data
    assert isinstance(denied, ToolExecutionCompleteData) and denied.error is not None
    assert denied.error.message == (
        "Permission denied: `rm -rf build` in the shell command `ls && rm -rf build` "
        "is denied by the rule shell(rm)."
    )


async def test_the_part_no_rule_allows_is_named_when_nobody_can_be_asked(
    tmp_path: Path,
) -> None:
    policy = PermissionPolicy.from_flags(["shell(echo)", "shell(ls)"])
    model = scripted(
        [{"text": "", "tool_calls": [bash("echo a && make all | ls; curl x")]}, {"text": "ok"}]
    )
    session, rec = await new_session(model, tmp_path, registry_factory=fake_tools, policy=policy)
    await session.send_and_wait("build")
    assert FakeShellTool.ran == []
    denied = rec.of("tool.execution_complete")[0].data
    assert isinstance(denied, ToolExecutionCompleteData) and denied.error is not None
    assert "needs approval (not allowed by any rule: `make all`, `curl x`)" in (
        denied.error.message
    )
    assert "`echo a`" not in denied.error.message


def test_shell_parts_give_each_simple_command_its_verdict() -> None:
    policy = PermissionPolicy.from_flags(["shell(git:*)"], ["shell(git push)"])
    parts = policy.shell_parts("bash", "git add . && git push && make")
    assert [(part.text, part.verdict) for part in parts] == [
        ("git add .", "allow"),
        ("git push", "deny"),
        ("make", "ask"),
    ]
