"""ask_user behind an SDK app: the question goes to the app's ``on_user_input_request``.

An app that registered the handler creates its session with ``requestUserInput``; the
model's questions then go to its connection as a ``userInput.request`` call, in every
mode (the app decides who answers). An app without the handler is never asked: the
model is told the user is not available.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.session.user_input import NoOneToAsk, UserAnswer, UserInputAsker, UserQuestion
from app.server.rpc import Connection, ConnectionClosed, RpcError


def user_input_asker(
    session_id: str, connection: Callable[[], Connection | None]
) -> UserInputAsker:
    """Ask the connection that owns the session (``connection()``, read at each question)."""

    async def ask(question: UserQuestion) -> UserAnswer:
        conn = connection()
        if conn is None or conn.closed:
            raise NoOneToAsk("the app is not connected")
        params: dict[str, Any] = {
            "sessionId": session_id,
            "question": question.question,
            "choices": list(question.choices),
            "allowFreeform": question.allow_freeform,
        }
        if question.tool_call_id:
            params["toolCallId"] = question.tool_call_id
        try:
            reply = await conn.request("userInput.request", params)
        except (RpcError, ConnectionClosed) as exc:
            raise NoOneToAsk(f"the app could not answer: {exc}") from exc
        answer = reply.get("answer") if isinstance(reply, dict) else None
        if not isinstance(answer, str):
            raise NoOneToAsk("the app's answer had no text")
        freeform = reply.get("wasFreeform") if isinstance(reply, dict) else None
        return UserAnswer(answer, was_freeform=freeform is True or answer not in question.choices)

    return ask
