"""One writer per session, through the official SDK: a runtime's ``session.resume`` of a
session another runtime process writes is an error naming that process."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

copilot = pytest.importorskip("copilot")

from copilot import PermissionHandler  # noqa: E402
from copilot._jsonrpc import JsonRpcError  # noqa: E402

from agent.log.lock import read_holder  # noqa: E402
from agent.log.store import read_events  # noqa: E402
from app.server.rpc import SERVER_ERROR  # noqa: E402
from tests.support.sdk_runtime import T, new_client, within  # noqa: E402


async def test_session_resume_of_a_session_another_runtime_writes_is_an_error(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    script = tmp_path / f"script-{uuid.uuid4().hex[:8]}.json"
    script.write_text(json.dumps({"turns": [{"text": "One."}, {"text": "Two."}]}), "utf-8")
    first, second = new_client(home, workspace), new_client(home, workspace)
    await within(first.start())
    await within(second.start())
    try:
        session = await within(
            first.create_session(
                model=f"scripted:{script}", on_permission_request=PermissionHandler.approve_all
            )
        )
        await within(session.send_and_wait("one", timeout=T))
        folder = home / "session-state" / session.session_id
        holder = read_holder(folder)
        assert holder is not None and holder.pid != os.getpid()  # the first runtime
        before = (folder / "events.jsonl").read_bytes()

        with pytest.raises(JsonRpcError) as refused:
            await within(
                second.resume_session(
                    session.session_id, on_permission_request=PermissionHandler.approve_all
                )
            )
        # An application error with the reason, not an internal one with a traceback.
        assert refused.value.code == SERVER_ERROR
        message = refused.value.message
        assert message.startswith("session ")
        assert f"session {session.session_id[:8]} is in use by another loopdeck process" in message
        assert f"pid {holder.pid}" in message
        assert (folder / "events.jsonl").read_bytes() == before
        # Nor can it be deleted from under its writer.
        with pytest.raises(RuntimeError, match="is in use by another loopdeck process"):
            await within(second.delete_session(session.session_id))
        assert (folder / "events.jsonl").read_bytes() == before

        # The first runtime lets go when its app disconnects; then the resume works.
        await within(session.disconnect())
        resumed = await within(
            second.resume_session(
                session.session_id, on_permission_request=PermissionHandler.approve_all
            )
        )
        await within(resumed.send_and_wait("two", timeout=T))
        events = read_events(folder).events
        assert [e.type for e in events].count("session.resume") == 1
        await within(resumed.disconnect())
    finally:
        await within(first.stop())
        await within(second.stop())
