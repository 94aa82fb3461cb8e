"""``session.lifecycle`` through the unmodified Copilot SDK: a client hears its
sessions created, updated (a state change, a finished turn) and deleted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

copilot = pytest.importorskip("copilot")

from copilot.generated.rpc import ModeSetRequest  # noqa: E402
from copilot.generated.session_events import SessionMode  # noqa: E402

from tests.support.sdk_runtime import Runtime, new_session, shared, within  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["shared"]  # the module's runtime, started once


async def _heard(heard: list[Any], kind: str, session_id: str) -> Any:
    async def poll() -> Any:
        while True:
            for event in heard:
                if event.type == kind and event.session_id == session_id:
                    return event
            await asyncio.sleep(0.01)

    return await within(poll())


async def test_a_session_is_announced_created_updated_and_deleted(shared: Runtime) -> None:
    heard: list[Any] = []
    unsubscribe = shared.client.on_lifecycle(heard.append)
    try:
        session = await new_session(shared, [{"text": "hi"}])
        created = await _heard(heard, "session.created", session.session_id)
        assert created.metadata is not None
        await within(session.rpc.mode.set(ModeSetRequest(mode=SessionMode.PLAN)))
        await _heard(heard, "session.updated", session.session_id)
        await within(session.send_and_wait("hello", timeout=30))
        await within(session.disconnect())
        await within(shared.client.delete_session(session.session_id))
        await _heard(heard, "session.deleted", session.session_id)
    finally:
        unsubscribe()
