"""ask_user and todos behind the official Copilot SDK (``github-copilot-sdk``), unmodified.

An app that passes ``on_user_input_request`` answers the model's questions (in every
mode: the app decides); the answer is the tool's result the model reads. An app
without the handler is never asked. The todo list's signal reaches the app, whose
``session.rpc.plan.read_sql_todos`` returns the rows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("copilot")

from copilot.generated.rpc import ModeSetRequest
from copilot.generated.session_events import (
    SessionMode,
    ToolExecutionCompleteData,
    UserInputCompletedData,
    UserInputRequestedData,
)

from tests.support.ask_user import CHOICES, QUESTION, ask, todos
from tests.support.sdk_runtime import Recorder, Runtime, T, new_client, new_session, within

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Runtime]:
    base = tmp_path_factory.mktemp("sdk-ask")
    workspace = base / "ws"
    workspace.mkdir()
    scripts = base / "scripts"
    scripts.mkdir()
    client = new_client(base / "home", workspace)
    await within(client.start())
    yield Runtime(client, base / "home", workspace, scripts)
    await within(client.stop())


def tool_result(seen: Recorder, call_id: str) -> str:
    for event in seen.of("tool.execution_complete"):
        data = event.data
        if isinstance(data, ToolExecutionCompleteData) and data.tool_call_id == call_id:
            assert data.result is not None
            return data.result.content
    raise AssertionError(f"no result for {call_id}")


async def test_the_apps_handler_answers_the_question_in_autopilot_too(runtime: Runtime) -> None:
    asked: list[tuple[Any, Any]] = []

    def on_user_input_request(request: Any, invocation: Any) -> Any:
        asked.append((request, invocation))
        return {"answer": "SQLite", "wasFreeform": False}

    session = await new_session(
        runtime,
        [
            {"text": "", "tool_calls": [ask()]},
            {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"summary": "ok"}}]},
        ],
        on_user_input_request=on_user_input_request,
    )
    await within(session.rpc.mode.set(ModeSetRequest(mode=SessionMode.AUTOPILOT)))
    seen = Recorder()
    session.on(seen)
    await within(session.send_and_wait("set up storage", timeout=T))

    [(request, invocation)] = asked
    assert request["question"] == QUESTION
    assert request["choices"] == CHOICES
    assert request["allowFreeform"] is True
    assert invocation == {"session_id": session.session_id}
    assert tool_result(seen, "call_0_0") == "The user chose: SQLite"
    requested = seen.of("user_input.requested")[0].data
    completed = seen.of("user_input.completed")[0].data
    assert isinstance(requested, UserInputRequestedData)
    assert isinstance(completed, UserInputCompletedData)
    assert requested.tool_call_id == "call_0_0"
    assert (completed.request_id, completed.answer, completed.was_freeform) == (
        requested.request_id,
        "SQLite",
        False,
    )


async def test_an_app_without_the_handler_is_never_asked(runtime: Runtime) -> None:
    session = await new_session(
        runtime, [{"text": "", "tool_calls": [ask()]}, {"text": "I picked SQLite."}]
    )
    seen = Recorder()
    session.on(seen)
    await within(session.send_and_wait("set up storage", timeout=T))
    assert seen.of("user_input.requested") == []
    assert "not available" in tool_result(seen, "call_0_0")


async def test_the_app_reads_the_todo_list_after_its_signal(runtime: Runtime) -> None:
    session = await new_session(
        runtime,
        [
            {
                "text": "",
                "tool_calls": [
                    todos(("read", "Reading", "done"), ("write", "Writing", "in_progress"))
                ],
            },
            {"text": "Half done."},
        ],
    )
    seen = Recorder()
    session.on(seen)
    await within(session.send_and_wait("work in steps", timeout=T))
    assert len(seen.of("session.todos_changed")) == 1
    rows = (await within(session.rpc.plan.read_sql_todos())).rows
    assert [(r.id, r.title, r.status) for r in rows] == [
        ("read", "Reading", "done"),
        ("write", "Writing", "in_progress"),
    ]
    both = await within(session.rpc.plan.read_sql_todos_with_dependencies())
    assert [r.id for r in both.rows] == ["read", "write"] and both.dependencies == []
