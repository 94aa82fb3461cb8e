"""MCP tools under the permission rules: kind ``mcp``, rules ``server`` and
``server(tool)`` as Copilot writes them, deny wins; the gate's request in Copilot's
``PermissionRequestMcp`` shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent.permissions.rules import PermissionAnswer, PermissionPolicy, PermissionPrompt, RuleError
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agent.tools.registry import ToolRegistry, default_tools, rule_tool_names
from tests.support.scripting import new_session, scripted

SERVERS = {"time", "everything"}


def policy(
    allow: list[str] | None = None, deny: list[str] | None = None, allow_all: bool = False
) -> PermissionPolicy:
    return PermissionPolicy.from_flags(
        allow, deny, allow_all, tools=rule_tool_names(), servers=SERVERS
    )


def verdict(p: PermissionPolicy, server: str, tool: str) -> str:
    return p.decide("mcp", f"{server}-{tool}", mcp=(server, tool))[0]


@pytest.mark.parametrize(
    ("allow", "deny", "server", "tool", "expected"),
    [
        ([], [], "time", "get_current_time", "ask"),  # every MCP call asks by default
        (["time"], [], "time", "get_current_time", "allow"),
        (["time(get_current_time)"], [], "time", "get_current_time", "allow"),
        (["time(get_current_time)"], [], "time", "convert_time", "ask"),
        (["everything"], [], "time", "get_current_time", "ask"),
        (["everything"], ["everything(get-sum)"], "everything", "get-sum", "deny"),
        (["everything"], ["everything(get-sum)"], "everything", "echo", "allow"),
        (["everything(echo)"], ["everything"], "everything", "echo", "deny"),
        (["shell", "write"], [], "time", "get_current_time", "ask"),
    ],
)
def test_server_and_tool_rules(
    allow: list[str], deny: list[str], server: str, tool: str, expected: str
) -> None:
    assert verdict(policy(allow, deny), server, tool) == expected


def test_deny_wins_over_allow_all_and_session_approval() -> None:
    p = policy(deny=["time(convert_time)"], allow_all=True)
    p.approve_for_session("mcp", tool_name="time-convert_time")
    assert verdict(p, "time", "convert_time") == "deny"
    assert verdict(p, "time", "get_current_time") == "allow"


def test_a_session_approval_covers_that_tool_only() -> None:
    p = policy()
    p.approve_for_session("mcp", tool_name="time-convert_time")
    assert verdict(p, "time", "convert_time") == "allow"
    assert verdict(p, "time", "get_current_time") == "ask"


def test_only_configured_servers_take_an_argument() -> None:
    with pytest.raises(RuleError, match="unknown kind 'timer'"):
        policy(allow=["timer(x)"])
    with pytest.raises(RuleError, match="take an argument"):
        policy(allow=["write(x)"])
    with pytest.raises(RuleError, match="unknown kind 'time'"):  # no such server configured
        PermissionPolicy.from_flags(["time(x)"], [], tools=rule_tool_names())


class FakeMcpTool(Tool):
    """Stands in for an MCP server's tool: same kind and origin, no server."""

    name: ClassVar[str] = "srv-do_it"
    description: ClassVar[str] = "does it"
    kind = "mcp"

    class Args(ToolArgs):
        x: int = 0

    def mcp_origin(self) -> tuple[str, str]:
        return "srv", "do_it"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"did {args.x}")


def with_fake(mode: str) -> ToolRegistry:
    registry = default_tools(autopilot=mode == "autopilot")
    registry.register(FakeMcpTool())
    return registry


async def test_the_gate_asks_with_copilot_s_mcp_request_and_remembers_the_session(
    tmp_path: Path,
) -> None:
    call = {"name": "srv-do_it", "arguments": {"x": 1}}
    model = scripted([{"tool_calls": [call]}, {"tool_calls": [call]}, {"text": "done"}])
    session, recorder = await new_session(model, tmp_path, registry_factory=with_fake)
    asked: list[PermissionPrompt] = []

    async def asker(prompt: PermissionPrompt) -> PermissionAnswer:
        asked.append(prompt)
        return PermissionAnswer("session")

    session.permissions.asker = asker
    await session.send_and_wait("go")
    await session.close()
    assert len(asked) == 1  # the second call is covered by the session approval
    assert (asked[0].server_name, asked[0].server_tool) == ("srv", "do_it")
    requests = recorder.of("permission.requested")
    assert requests[0].data.permission_request == {  # type: ignore[attr-defined]
        "kind": "mcp",
        "toolCallId": asked[0].tool_call_id,
        "serverName": "srv",
        "toolName": "do_it",
        "toolTitle": "srv-do_it",
        "args": {"x": 1},
        "readOnly": False,
    }
    completed = recorder.of("permission.completed")[0].data
    assert completed.result == {  # type: ignore[attr-defined]
        "kind": "approved-for-session",
        "approval": {"kind": "mcp", "serverName": "srv", "toolName": "do_it"},
    }
    starts = recorder.of("tool.execution_start")
    assert [(s.data.mcp_server_name, s.data.mcp_tool_name) for s in starts] == [  # type: ignore[attr-defined]
        ("srv", "do_it"),
        ("srv", "do_it"),
    ]
    results = recorder.of("tool.execution_complete")
    assert [r.data.success for r in results] == [True, True]  # type: ignore[attr-defined]


async def test_unattended_denial_says_which_rule_would_allow_it(tmp_path: Path) -> None:
    model = scripted([{"tool_calls": [{"name": "srv-do_it"}]}, {"text": "ok"}])
    session, recorder = await new_session(
        model, tmp_path, mode="autopilot", registry_factory=with_fake
    )
    await session.send_and_wait("go")
    await session.close()
    result = recorder.of("tool.execution_complete")[0].data
    assert result.success is False  # type: ignore[attr-defined]
    assert "--allow-tool 'srv(do_it)'" in result.error.message  # type: ignore[attr-defined]
