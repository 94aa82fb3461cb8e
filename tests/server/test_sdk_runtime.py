"""loopdeck as the runtime of the official Copilot SDK (``github-copilot-sdk``), unmodified.

Each test drives ``loopdeck --headless`` through ``copilot.CopilotClient`` the way an
app would, with scripted models so sessions are deterministic. Every await has a
timeout: a protocol mismatch fails the test instead of hanging it. One runtime
process is shared by the tests that only need a session; resume and the TCP
transport start their own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import socket
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

copilot = pytest.importorskip("copilot")

from copilot import (  # noqa: E402
    CopilotClient,
    PermissionHandler,
    RuntimeConnection,
    define_tool,
)
from copilot._jsonrpc import JsonRpcError  # noqa: E402
from copilot.generated.rpc import (  # noqa: E402
    ModeSetRequest,
    PermissionDecisionApproveOnce,
    PermissionDecisionReject,
    PermissionDecisionRequest,
    PingRequest,
    SessionHistoryCompactRequest,
)
from copilot.generated.session_events import (  # noqa: E402
    PermissionRequestCustomTool,
    PermissionRequestedData,
    PermissionRequestWrite,
    SessionEvent,
    SessionEventType,
    SessionIdleData,
    SessionMode,
    ToolExecutionCompleteData,
    UserMessageData,
)
from pydantic import BaseModel, Field  # noqa: E402

from agent.log.store import read_events  # noqa: E402
from agent.loop.history import History  # noqa: E402
from agent.transcript.blocks import RawBlock  # noqa: E402
from agent.transcript.fold import Transcript  # noqa: E402
from tests.support.paths import ROOT  # noqa: E402
from tests.support.scripting import padded  # noqa: E402
from tests.support.sdk_runtime import (  # noqa: E402
    LOOPDECK,
    Recorder,
    Runtime,
    T,
    final_text,
    new_client,
    new_session,
    runtime_env,
    script,
    within,
)
from tests.support.sdk_runtime import shared as shared  # noqa: E402  (the fixture)

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXAMPLE = ROOT / "examples" / "sdk_app.py"


# --- the basics ------------------------------------------------------------------


async def test_send_and_wait_returns_the_final_message_with_events_in_order(
    shared: Runtime,
) -> None:
    session = await new_session(
        shared,
        [
            {
                "text": "Let me look.",
                "tool_calls": [{"name": "view", "arguments": {"path": "README.md"}}],
            },
            {"text": "The answer is 42."},
        ],
    )
    seen = Recorder()
    session.on(seen)

    reply = await within(session.send_and_wait("What is the answer?", timeout=T))

    assert final_text(reply) == "The answer is 42."
    assert seen.types() == [
        "user.message",
        "assistant.turn_start",
        "session.usage_info",  # how full the context window is, before each call
        "assistant.message_start",
        "assistant.message",
        "session.custom_notification",  # loopdeck's turn_stats (time to first token...)
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_end",
        "assistant.turn_start",
        "session.usage_info",
        "assistant.message_start",
        "assistant.message",
        "session.custom_notification",
        "assistant.turn_end",
        "session.idle",
    ]
    assert all(e.type != SessionEventType.UNKNOWN for e in seen.events)
    # Streaming deltas arrive, each before the message it builds.
    all_types = seen.types(deltas=True)
    assert all_types.index("assistant.message_delta") < all_types.index("assistant.message")
    # The reply is the very event the handlers saw last before idle.
    assert reply is not None and reply.id == seen.of("assistant.message")[-1].id
    done = seen.of("tool.execution_complete")[0].data
    assert isinstance(done, ToolExecutionCompleteData) and done.success
    assert done.result is not None and "The answer is 42." in done.result.content
    user = seen.of("user.message")[0].data
    assert isinstance(user, UserMessageData) and user.message_id
    # Ordered parent chain: each persisted event points at the previous one.
    persisted = [e for e in seen.events if not e.ephemeral]
    assert all(b.parent_id == a.id for a, b in itertools.pairwise(persisted))


async def test_models_status_and_session_listing(shared: Runtime) -> None:
    client = shared.client
    status = await within(client.get_status())
    assert status.protocol_version == 3
    assert (await within(client.get_auth_status())).isAuthenticated
    assert "scripted:demo" in [m.id for m in await within(client.list_models())]
    session = await new_session(shared, [{"text": "listed"}])
    await within(session.send_and_wait("list me", timeout=T))
    listed = {s.session_id: s for s in await within(client.list_sessions())}
    assert session.session_id in listed
    assert listed[session.session_id].summary == "list me"
    assert listed[session.session_id].context is not None
    assert listed[session.session_id].context.working_directory == str(shared.workspace)
    metadata = await within(client.get_session_metadata(session.session_id))
    assert metadata is not None and metadata.session_id == session.session_id
    assert await within(client.get_last_session_id()) == session.session_id
    await within(client.delete_session(session.session_id))
    assert not (shared.home / "session-state" / session.session_id).exists()
    assert session.session_id not in {s.session_id for s in await within(client.list_sessions())}
    assert await within(client.get_session_metadata(session.session_id)) is None


async def test_autopilot_nudges_then_completes_with_task_complete(shared: Runtime) -> None:
    session = await new_session(
        shared,
        [
            {"text": "Here is my plan: first read, then answer."},
            {
                "text": "Done now.",
                "tool_calls": [
                    {"name": "task_complete", "arguments": {"summary": "Read the README."}}
                ],
            },
        ],
    )
    await within(session.rpc.mode.set(ModeSetRequest(mode=SessionMode.AUTOPILOT)))
    assert await within(session.rpc.mode.get()) == SessionMode.AUTOPILOT
    seen = Recorder()
    session.on(seen)

    reply = await within(session.send_and_wait("Summarise the README", timeout=T))

    assert final_text(reply) == "Done now."
    users = [e.data for e in seen.of("user.message")]
    assert [
        isinstance(u, UserMessageData) and bool(u.is_autopilot_continuation) for u in users
    ] == [
        False,
        True,
    ]
    complete = seen.of("session.task_complete")
    assert len(complete) == 1 and complete[0].data.summary == "Read the README."  # type: ignore[union-attr]
    idle = seen.events[-1]
    assert isinstance(idle.data, SessionIdleData) and idle.data.mode == SessionMode.AUTOPILOT
    assert seen.of("session.autopilot_stopped") == []


class IssueParams(BaseModel):
    id: str = Field(description="Issue identifier, like LD-7")


async def test_sdk_defined_tool_runs_in_the_app_and_its_result_reaches_the_next_turn(
    shared: Runtime,
) -> None:
    invocations: list[Any] = []

    @define_tool(description="Look up an issue in the tracker")
    def lookup_issue(params: IssueParams, invocation: Any) -> str:
        invocations.append((params.id, invocation.tool_call_id))
        return f"Issue {params.id}: the login test is flaky on CI."

    asked: list[Any] = []

    def approve(request: Any, invocation: Any) -> Any:
        asked.append(request)
        return PermissionDecisionApproveOnce()

    session = await new_session(
        shared,
        [
            {"text": "", "tool_calls": [{"name": "lookup_issue", "arguments": {"id": "LD-7"}}]},
            {"text": "LD-7 is a flaky login test."},
        ],
        tools=[lookup_issue],
        on_permission_request=approve,
    )
    seen = Recorder()
    session.on(seen)

    reply = await within(session.send_and_wait("What is LD-7?", timeout=T))

    assert final_text(reply) == "LD-7 is a flaky login test."
    assert invocations == [("LD-7", "call_0_0")]
    assert len(asked) == 1 and isinstance(asked[0], PermissionRequestCustomTool)
    assert asked[0].tool_name == "lookup_issue" and asked[0].args == {"id": "LD-7"}
    types = seen.types()
    assert types.index("external_tool.requested") < types.index("external_tool.completed")
    assert types.index("external_tool.completed") < types.index("tool.execution_complete")
    done = seen.of("tool.execution_complete")[0].data
    assert isinstance(done, ToolExecutionCompleteData) and done.success
    assert done.result is not None
    assert done.result.content == "Issue LD-7: the login test is flaky on CI."
    # Every event, on the wire and in the log, is one the official parser knows.
    assert all(e.type != SessionEventType.UNKNOWN for e in seen.events)
    logged = await within(session.get_events())
    assert {"external_tool.requested", "external_tool.completed"} <= {e.type.value for e in logged}
    assert all(e.type != SessionEventType.UNKNOWN for e in logged)
    # What the second model call was sent: the history folded from the log has the
    # app's result as the tool message, answered by the final reply.
    on_disk = read_events(shared.home / "session-state" / session.session_id).events
    history = History()
    for event in on_disk:
        history.apply(event)
    roles = [(m["role"], m.get("content")) for m in history.messages]
    assert ("tool", "Issue LD-7: the login test is flaky on CI.") in roles
    assert roles[-1] == ("assistant", "LD-7 is a flaky login test.")
    # Replayed (loopdeck replay/watch), the app's tool is an ordinary tool card.
    transcript = Transcript()
    for event in on_disk:
        transcript.apply(event)
    card = transcript.get_tool("call_0_0")
    assert card is not None and card.name == "lookup_issue" and card.status == "success"
    assert not [item for item in transcript.items if isinstance(item, RawBlock)]


async def test_a_permission_denied_by_the_apps_handler_stops_the_write(shared: Runtime) -> None:
    asked: list[Any] = []

    def deny(request: Any, invocation: Any) -> Any:
        asked.append(request)
        return PermissionDecisionReject(feedback="not in this repo")

    session = await new_session(
        shared,
        [
            {
                "text": "",
                "tool_calls": [
                    {"name": "create", "arguments": {"path": "notes.txt", "file_text": "hi\n"}}
                ],
            },
            {"text": "Understood, I will not write it."},
        ],
        on_permission_request=deny,
    )
    seen = Recorder()
    session.on(seen)

    reply = await within(session.send_and_wait("Write notes.txt", timeout=T))

    assert final_text(reply) == "Understood, I will not write it."
    assert not (shared.workspace / "notes.txt").exists()
    assert len(asked) == 1 and isinstance(asked[0], PermissionRequestWrite)
    assert asked[0].file_name == "notes.txt" and "+hi" in asked[0].diff
    done = seen.of("tool.execution_complete")[0].data
    assert isinstance(done, ToolExecutionCompleteData) and not done.success
    assert done.error is not None and "not in this repo" in done.error.message
    completed = seen.of("permission.completed")[0].data
    assert completed.result.kind == "denied-interactively-by-user"  # type: ignore[union-attr]


async def test_without_a_handler_the_app_answers_pending_permissions_itself(
    shared: Runtime,
) -> None:
    session = await new_session(
        shared,
        [
            {
                "text": "",
                "tool_calls": [
                    {"name": "create", "arguments": {"path": "approved.txt", "file_text": "ok\n"}}
                ],
            },
            {"text": "Written."},
        ],
        on_permission_request=None,
    )
    answered: list[Any] = []

    def on_event(event: SessionEvent) -> None:
        if isinstance(event.data, PermissionRequestedData):
            request = PermissionDecisionRequest(
                request_id=event.data.request_id, result=PermissionDecisionApproveOnce()
            )
            answered.append(
                asyncio.ensure_future(
                    session.rpc.permissions.handle_pending_permission_request(request)
                )
            )

    session.on(on_event)

    reply = await within(session.send_and_wait("Write approved.txt", timeout=T))

    assert final_text(reply) == "Written."
    assert [(await within(a)).success for a in answered] == [True]
    assert (shared.workspace / "approved.txt").read_text() == "ok\n"


async def test_a_model_error_fails_send_and_wait_with_its_message(shared: Runtime) -> None:
    session = await new_session(shared, [{"error": {"type": "auth", "message": "bad key"}}])
    seen = Recorder()
    session.on(seen)
    with pytest.raises(JsonRpcError, match="bad key"):
        await within(session.send_and_wait("hello", timeout=T))
    assert seen.types()[-2:] == ["session.error", "session.idle"]


async def test_abort_stops_the_turn_and_the_session_goes_on(shared: Runtime) -> None:
    session = await new_session(
        shared,
        [
            {"text": "word " * 200, "delay_ms": 20000},
            {"text": "Still here."},
        ],
    )
    seen = Recorder()
    session.on(seen)
    waiting = asyncio.ensure_future(session.send_and_wait("Tell me a long story", timeout=T))
    await seen.wait_for("assistant.message_delta")

    await within(session.abort())

    with pytest.raises(RuntimeError, match="aborted"):
        await within(waiting)
    assert "abort" in seen.types()
    idle = seen.events[-1]
    assert isinstance(idle.data, SessionIdleData) and idle.data.aborted
    # What streamed before the abort is kept as a partial reply.
    partial = seen.of("assistant.message")
    assert len(partial) == 1
    assert final_text(partial[0]) and ("word " * 200).startswith(final_text(partial[0]))
    # The session is still usable.
    assert final_text(await within(session.send_and_wait("Are you there?", timeout=T))) == (
        "Still here."
    )


async def test_immediate_send_steers_the_running_loop(shared: Runtime) -> None:
    session = await new_session(
        shared,
        [
            {
                "text": "Reading the file first, then answering.",
                "delay_ms": 1200,
                "tool_calls": [{"name": "view", "arguments": {"path": "README.md"}}],
            },
            {"text": "Read it, and noted your remark."},
        ],
    )
    seen = Recorder()
    session.on(seen)
    waiting = asyncio.ensure_future(session.send_and_wait("Read the README", timeout=T))
    await seen.wait_for("assistant.message_delta")

    steer_id = await within(session.send("Also mention the answer.", mode="immediate"))

    assert final_text(await within(waiting)) == "Read it, and noted your remark."
    users = [e.data for e in seen.of("user.message")]
    assert [u.content for u in users] == ["Read the README", "Also mention the answer."]  # type: ignore[union-attr]
    assert users[1].message_id == steer_id  # type: ignore[union-attr]
    types = seen.types()
    # Joined at the turn boundary: after the tool result, before the second turn.
    second_user = [i for i, t in enumerate(types) if t == "user.message"][1]
    assert types[second_user - 1] == "assistant.turn_end"
    assert types[second_user + 1] == "assistant.turn_start"
    assert types.count("session.idle") == 1 and types[-1] == "session.idle"


async def test_hooks_steer_prompt_tools_and_stop(shared: Runtime) -> None:
    calls: list[tuple[str, Any]] = []

    def on_session_start(data: Any, ctx: Any) -> Any:
        calls.append(("sessionStart", data["source"]))
        return {"additionalContext": "The team prefers short answers."}

    def on_user_prompt_submitted(data: Any, ctx: Any) -> Any:
        calls.append(("userPromptSubmitted", data["prompt"]))
        return {"modifiedPrompt": data["prompt"] + " (be brief)"}

    async def on_pre_tool_use(data: Any, ctx: Any) -> Any:
        calls.append(("preToolUse", data["toolName"]))
        if data["toolName"] == "bash":
            return {"permissionDecision": "deny", "permissionDecisionReason": "no shells here"}
        return None

    def on_post_tool_use(data: Any, ctx: Any) -> Any:
        calls.append(("postToolUse", data["toolName"]))
        return {"additionalContext": "(checked by the post hook)"}

    stops: list[dict[str, Any]] = []

    def on_agent_stop(data: Any, ctx: Any) -> Any:
        stops.append(dict(data))
        if len(stops) == 1:
            return {"decision": "block", "reason": "Also check the docs folder."}
        return None

    def on_session_end(data: Any, ctx: Any) -> Any:
        calls.append(("sessionEnd", data["reason"]))

    session = await new_session(
        shared,
        [
            {
                "text": "",
                "tool_calls": [
                    {"name": "bash", "arguments": {"command": "ls"}},
                    {"name": "view", "arguments": {"path": "README.md"}},
                ],
            },
            {"text": "Done."},
            {"text": "Docs checked too."},
        ],
        hooks={
            "on_session_start": on_session_start,
            "on_user_prompt_submitted": on_user_prompt_submitted,
            "on_pre_tool_use": on_pre_tool_use,
            "on_post_tool_use": on_post_tool_use,
            "on_agent_stop": on_agent_stop,
            "on_session_end": on_session_end,
        },
    )
    seen = Recorder()
    session.on(seen)

    reply = await within(session.send_and_wait("Survey the repo", timeout=T))

    assert final_text(reply) == "Docs checked too."
    assert calls[:5] == [
        ("sessionStart", "new"),
        ("userPromptSubmitted", "Survey the repo"),
        ("preToolUse", "bash"),
        ("preToolUse", "view"),
        ("postToolUse", "view"),
    ]
    users = [e.data.content for e in seen.of("user.message")]  # type: ignore[union-attr]
    assert users == ["Survey the repo (be brief)", "Also check the docs folder."]
    bash, view = (e.data for e in seen.of("tool.execution_complete"))
    assert isinstance(bash, ToolExecutionCompleteData) and not bash.success
    assert bash.error is not None and "no shells here" in bash.error.message
    assert isinstance(view, ToolExecutionCompleteData) and view.success
    assert view.result is not None and view.result.content.endswith("(checked by the post hook)")
    assert [s.get("stopHookActive") for s in stops] == [False, True]
    assert seen.types().count("session.idle") == 1

    await within(session.disconnect())
    assert calls[-1] == ("sessionEnd", "complete")


# --- resume, history, other transports -----------------------------------------------


async def test_resume_by_id_from_a_new_client_and_get_events(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    model = script(tmp_path, [{"text": "First answer."}, {"text": "Second answer."}])

    first = new_client(home, workspace)
    await within(first.start())
    try:
        session = await within(
            first.create_session(model=model, on_permission_request=PermissionHandler.approve_all)
        )
        assert final_text(await within(session.send_and_wait("one", timeout=T))) == "First answer."
        session_id = session.session_id
        live = [e.id for e in await within(session.get_events())]
        await within(session.disconnect())
    finally:
        await within(first.stop())

    second = new_client(home, workspace)
    await within(second.start())
    try:
        resumed = await within(
            second.resume_session(session_id, on_permission_request=PermissionHandler.approve_all)
        )
        history = await within(resumed.get_events())
        types = [e.type.value for e in history]
        assert types[0] == "session.start" and types[-1] == "session.resume"
        assert [e.id for e in history][: len(live)] == live
        assert "session.idle" not in types  # ephemeral: never persisted
        # The resumed session continues the conversation (and its script).
        reply = await within(resumed.send_and_wait("two", timeout=T))
        assert final_text(reply) == "Second answer."
        now = await within(resumed.get_events())
        assert [e.data.content for e in now if isinstance(e.data, UserMessageData)] == [
            "one",
            "two",
        ]
        # Idle comes after the log is on disk: what get_events returns is the file.
        on_disk = read_events(home / "session-state" / session_id).events
        assert [str(e.id) for e in now] == [e.id for e in on_disk]
    finally:
        await within(second.stop())


async def test_tcp_transport_with_a_connection_token(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = uuid.uuid4().hex
    client = CopilotClient(
        connection=RuntimeConnection.for_tcp(path=LOOPDECK, port=port, connection_token=token),
        env=runtime_env(tmp_path / "home"),
        working_directory=str(workspace),
    )
    await within(client.start())
    try:
        assert client.runtime_port == port
        session = await within(
            client.create_session(
                model=script(tmp_path, [{"text": "Over TCP."}]),
                on_permission_request=PermissionHandler.approve_all,
            )
        )
        assert final_text(await within(session.send_and_wait("hi", timeout=T))) == "Over TCP."
        # A second app can join the same runtime with the token, and only with it.
        other = CopilotClient(
            connection=RuntimeConnection.for_uri(f"127.0.0.1:{port}", connection_token=token)
        )
        await within(other.start())
        try:
            listed = [s.session_id for s in await within(other.list_sessions())]
            assert session.session_id in listed
        finally:
            await within(other.stop())
        intruder = CopilotClient(
            connection=RuntimeConnection.for_uri(f"127.0.0.1:{port}", connection_token="wrong")
        )
        with pytest.raises(JsonRpcError, match="AUTHENTICATION_FAILED"):
            await within(intruder.start())
        await within(intruder.force_stop())
    finally:
        await within(client.stop())


async def test_unknown_methods_answer_32601_and_the_runtime_goes_on(shared: Runtime) -> None:
    raw = shared.client._client
    assert raw is not None
    with pytest.raises(JsonRpcError) as caught:
        await within(raw.request("session.noSuchThing", {"sessionId": "x"}))
    assert caught.value.code == -32601
    with pytest.raises(JsonRpcError) as missing:
        await within(raw.request("session.abort", {"sessionId": "no-such-session"}))
    assert "not found" in missing.value.message.lower()
    assert (await within(shared.client.ping("still there?"))).protocol_version == 3
    pong = await within(shared.client.rpc.ping(PingRequest(message="now")))
    assert pong.message == "pong: now" and pong.timestamp.year >= 2024


# --- the wire itself, without the SDK ------------------------------------------------


def frame(message: Any) -> bytes:
    body = json.dumps(message).encode() if not isinstance(message, bytes) else message
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def parse_frames(data: bytes) -> list[dict[str, Any]]:
    """Everything on stdout must be frames: anything else fails here."""
    out: list[dict[str, Any]] = []
    while data:
        header, sep, rest = data.partition(b"\r\n\r\n")
        assert sep and header.startswith(b"Content-Length: "), data[:80]
        length = int(header.split(b":")[1])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


async def test_stdio_wire_framing_errors_and_sdk_flags(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        LOOPDECK,
        "--headless",
        "--no-auto-update",
        "--log-level",
        "debug",
        "--auth-token-env",
        "COPILOT_SDK_AUTH_TOKEN",
        "--no-auto-login",
        "--session-idle-timeout",
        "30",
        "--remote",
        "--no-color",  # Copilot's, nothing in loopdeck: accepted
        "--log-dir",
        str(tmp_path / "copilot-logs"),
        "--stdio",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=runtime_env(tmp_path / "home"),
        cwd=tmp_path,
    )
    assert proc.stdin is not None
    proc.stdin.write(
        frame({"jsonrpc": "2.0", "id": "c", "method": "connect", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 1, "method": "no.such.method", "params": {}})
        + frame(b"{not json")
        + frame({"jsonrpc": "2.0", "method": "some.notification", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": []})
        + frame({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"message": "hi"}})
    )
    await proc.stdin.drain()
    proc.stdin.close()
    stdout, stderr = await within(proc.communicate())
    assert proc.returncode == 0, stderr.decode()
    replies = {str(m.get("id")): m for m in parse_frames(stdout)}
    assert replies["c"]["result"]["protocolVersion"] == 3 and replies["c"]["result"]["ok"]
    assert replies["1"]["error"]["code"] == -32601
    assert replies["None"]["error"]["code"] == -32700
    assert replies["2"]["error"]["code"] == -32600
    assert replies["3"]["result"]["message"] == "pong: hi"
    assert len(replies) == 5  # the notification got no answer


async def test_the_example_app_runs_against_loopdeck(tmp_path: Path) -> None:
    env = runtime_env(tmp_path / "home")
    # As when the venv is not activated: no `loopdeck` on PATH; the example finds the
    # one installed beside the interpreter that runs it.
    env["PATH"] = os.pathsep.join(
        folder
        for folder in env.get("PATH", "").split(os.pathsep)
        if folder and not (Path(folder) / "loopdeck").exists()
    )
    # The example's model comes from LOOPDECK_MODEL (default: the slower scripted demo).
    env["LOOPDECK_MODEL"] = script(
        tmp_path,
        [
            {
                "text": "Looking.",
                "tool_calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}],
            },
            {"text": "Let me think about it."},
            {
                "text": "Done.",
                "tool_calls": [
                    {"name": "task_complete", "arguments": {"summary": "Surveyed the project."}}
                ],
            },
        ],
    )
    (tmp_path / "README.md").write_text("# A project\n", encoding="utf-8")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE),
        "survey this project",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    stdout, stderr = await within(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    assert stdout.decode().strip() == "Surveyed the project."
    assert "tool: glob" in stderr.decode() and "tool: task_complete" in stderr.decode()
    (session_dir,) = (tmp_path / "home" / "session-state").iterdir()
    assert (session_dir / "events.jsonl").is_file()


async def test_system_message_appends_to_or_replaces_the_prompt(tmp_path: Path) -> None:
    """In process: the runtime's handlers, with a connection that only records."""
    from agent.log.store import SessionStore
    from app.server.bridge import SdkSession
    from app.server.methods import Runtime as Server
    from app.server.rpc import Connection

    class Sink:
        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> None:
            self.data += data

        async def drain(self) -> None:
            return None

        def is_closing(self) -> bool:
            return False

        def close(self) -> None:
            return None

    server = Server(cwd=tmp_path, store=SessionStore(tmp_path / "home"))
    sink = Sink()
    conn = Connection(asyncio.StreamReader(), sink, server.handle)
    model = script(tmp_path, [{"text": "hi"}])
    prompts = {}
    for mode in ("append", "replace"):
        created = await server.handle(
            conn,
            "session.create",
            {"model": model, "systemMessage": {"mode": mode, "content": "Answer in French."}},
        )
        session = server.sessions[created["sessionId"]].session
        assert isinstance(session, SdkSession)
        prompts[mode] = session.system_prompt()
    assert prompts["append"].endswith("\n\nAnswer in French.") and len(prompts["append"]) > 200
    assert prompts["replace"] == "Answer in French."
    # Each create sent its session.start to the connection, framed.
    assert [m["params"]["event"]["type"] for m in parse_frames(sink.data)] == ["session.start"] * 2
    await server.close_all()


async def test_a_rule_naming_an_unknown_tool_refuses_the_session(tmp_path: Path) -> None:
    """``--allow-tool`` rules may name a built-in tool that asks or one of the session's
    own tools; any other kind is refused with the valid ones listed."""
    from agent.log.store import SessionStore
    from app.server.methods import Runtime as Server
    from app.server.rpc import Connection, RpcError

    class Sink:
        def write(self, data: bytes) -> None:
            return None

        async def drain(self) -> None:
            return None

        def is_closing(self) -> bool:
            return False

        def close(self) -> None:
            return None

    flags = argparse.Namespace(allow_tool=["weather", "bogus"], deny_tool=[])
    server = Server(cwd=tmp_path, store=SessionStore(tmp_path / "home"), flags=flags)
    conn = Connection(asyncio.StreamReader(), Sink(), server.handle)
    weather = {"name": "weather", "description": "d", "parameters": {"type": "object"}}
    model = script(tmp_path, [{"text": "hi"}])
    with pytest.raises(RpcError, match=r"unknown kind 'bogus'.*bash, weather"):
        await server.handle(conn, "session.create", {"model": model, "tools": [weather]})
    flags.allow_tool = ["weather", "shell(git:*)"]
    created = await server.handle(conn, "session.create", {"model": model, "tools": [weather]})
    assert created["sessionId"] in server.sessions
    await server.close_all()


# --- the context window ----------------------------------------------------------


async def test_history_compact_and_infinite_sessions_settings(shared: Runtime) -> None:
    session = await new_session(
        shared,
        [{"text": "one"}, {"text": "two"}],
        infinite_sessions={"enabled": True, "background_compaction_threshold": 0.6},
    )
    seen = Recorder()
    session.on(seen)
    await within(session.send_and_wait(padded("THE TASK: a lexer"), timeout=T))
    result = await within(
        session.rpc.history.compact(SessionHistoryCompactRequest(custom_instructions="tokens"))
    )
    assert result.success and result.messages_removed == 1  # the last reply stays
    assert result.summary_content is not None and "THE TASK: a lexer" in result.summary_content
    assert result.context_window is not None and result.context_window.token_limit > 0
    reply = await within(session.send_and_wait("go on", timeout=T))
    assert final_text(reply) == "two"
    types = seen.types()
    assert types.index("session.compaction_start") < types.index("session.compaction_complete")
    # Thresholds the runtime cannot use are refused, not ignored.
    with pytest.raises(JsonRpcError, match="threshold"):
        await new_session(
            shared,
            [{"text": "x"}],
            infinite_sessions={
                "background_compaction_threshold": 0.9,
                "buffer_exhaustion_threshold": 0.5,
            },
        )


async def test_a_flag_copilot_does_not_know_fails_start_up_with_its_stderr(
    tmp_path: Path,
) -> None:
    client = CopilotClient(
        connection=RuntimeConnection.for_stdio(path=LOOPDECK, args=["--no-such-flag-anywhere"]),
        env=runtime_env(tmp_path / "home"),
        working_directory=str(tmp_path),
    )
    with pytest.raises(RuntimeError, match="no-such-flag-anywhere"):
        await within(client.start())
    with contextlib.suppress(Exception):
        await within(client.stop())
