"""Closing a session: the loop stopped, MCP servers and a summary in flight ended, the
log finished and its lock released; and a session that never was one (opened and left
without a word, or a start that failed before any provider answered) removed."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.session.internals import SessionInternals


async def close_session(session: SessionInternals) -> None:
    await session._runner.stop()
    try:
        if session.mcp is not None:
            await session.mcp.close()  # their processes end with the session
        # A summary still being made ends now, recorded as failed, before the log closes.
        await session.context.close()
        if session._writer is not None:
            await session._writer.close()
            session._writer = None
        if session.sandbox is not None:
            session.sandbox.close()
        unused = (session._created_here and not session._first_prompt) or (
            session.discard_unused and not session._sent
        )
        if session.store is not None and (unused or never_started(session)):
            # Opened and left without a word, or a start that failed before any
            # provider answered: nothing worth keeping or listing.
            shutil.rmtree(session.store.session_dir(session.id), ignore_errors=True)
    finally:
        if session._lock is not None:
            session._lock.release()  # last: the folder is left as this writer meant it
            session._lock = None


def never_started(session: SessionInternals) -> bool:
    """Created here, and ended for want of an API key (no request ever left this
    process) before anything was answered or run: a failed start, not a session."""
    from agent.models.provider_errors import NO_KEY

    error = session._start_error
    return (
        session._created_here
        and session._outcome == "error"
        and error is not None
        and error.error_type == "auth"
        and error.message.startswith(NO_KEY)
        and session._tool_calls == 0
        and not any(m.get("role") == "assistant" for m in session.history.messages)
    )
