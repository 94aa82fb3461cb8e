"""``session.send | sendAndWait | abort | getMessages | history.compact | log``, and
the app's answers (``permissions.handlePendingPermissionRequest``,
``tools.handlePendingToolCall``): what goes into a hosted session and comes out.

``send`` answers at once with the message's id; ``sendAndWait`` answers once that
message's run is idle, failed or aborted (a cancelled request stops waiting, the run
goes on). ``getMessages`` gives the whole log, a resumed session's earlier events
included.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from agent.events.attachments import AttachmentError, normalize
from agent.events.schema import (
    EventData,
    SessionErrorData,
    SessionInfoData,
    SessionWarningData,
)
from agent.log.store import read_events
from agent.loop.turn_loop import LoopOutcome
from app.server.bridge import HostedSession, RequestTracker, tool_answer
from app.server.params import check_id, mode_of, optional_str, required_str
from app.server.rpc import INVALID_PARAMS, SERVER_ERROR, Connection, RpcError
from app.server.runtime_base import RuntimeBase


class MessageMethods(RuntimeBase):
    """What goes into a hosted session and what the app answers it."""

    async def session_send(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        message_id = str(uuid.uuid4())
        self._submit(hosted, params, message_id)
        return {"messageId": message_id}

    async def session_send_and_wait(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Send, and answer once that message's run is idle (or failed, or was aborted).

        A cancelled request (``$/cancelRequest``, the SDK's timeout) stops waiting;
        the run goes on.
        """
        hosted = self._hosted(params)
        message_id = str(uuid.uuid4())
        tracker = RequestTracker(message_id)
        unsubscribe = hosted.session.subscribe(tracker)
        try:
            outcome: LoopOutcome = await asyncio.shield(self._submit(hosted, params, message_id))
        finally:
            unsubscribe()
        if outcome.error is not None:
            raise RpcError(
                SERVER_ERROR,
                f"Session error: {outcome.error.message}",
                {"completionEventId": tracker.idle_id, "messageId": message_id},
            )
        result: dict[str, Any] = {
            "messageId": message_id,
            "aborted": outcome.aborted,
            "completionEventId": tracker.idle_id,
        }
        if tracker.response is not None:
            result["response"] = tracker.response.wire()
        return result

    def _submit(
        self, hosted: HostedSession, params: dict[str, Any], message_id: str
    ) -> asyncio.Future[LoopOutcome]:
        prompt = required_str(params, "prompt")
        delivery = params.get("mode")
        if delivery not in (None, "enqueue", "immediate"):
            raise RpcError(INVALID_PARAMS, "mode must be 'enqueue' or 'immediate'")
        agent_mode = params.get("agentMode")
        if agent_mode is not None:
            hosted.session.set_mode(mode_of(agent_mode))
        attachments = None
        if params.get("attachments"):
            try:
                attachments = normalize(params["attachments"], hosted.session.cwd)
            except AttachmentError as exc:
                raise RpcError(INVALID_PARAMS, str(exc)) from None
        return hosted.session.send(
            prompt,
            message_id=message_id,
            immediate=delivery == "immediate",
            attachments=attachments,
        )

    async def session_abort(self, conn: Connection, params: dict[str, Any]) -> Any:
        self._hosted(params).session.abort()
        return {"success": True}

    async def session_get_messages(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = required_str(params, "sessionId")
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            # A resumed long session read back only its tail: the rest comes from the log.
            earlier = await asyncio.to_thread(hosted.session.earlier_events)
            return {"events": [event.wire() for event in [*earlier, *hosted.events]]}
        check_id(session_id)
        path = self.store.events_path(session_id)
        if not path.is_file():
            raise RpcError(SERVER_ERROR, f"Session not found: {session_id}")
        return {"events": [event.wire() for event in read_events(path).events]}

    async def session_history_compact(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Compact now (the SDK's ``session.rpc.history.compact``) and say how it went."""
        session = self._hosted(params).session
        focus = optional_str(params, "customInstructions")
        done = await session.context.compact_now(focus)
        usage = session.context.measure()
        window = {
            "currentTokens": usage.total,
            "messagesLength": usage.message_count,
            "tokenLimit": usage.window,
            "systemTokens": usage.system,
            "conversationTokens": usage.messages,
            "toolDefinitionsTokens": usage.tools,
        }
        if done is None:  # nothing to compact yet
            return {
                "success": True,
                "messagesRemoved": 0,
                "tokensRemoved": 0,
                "contextWindow": window,
            }
        out: dict[str, Any] = {
            "success": done.success,
            "messagesRemoved": done.messages_removed or 0,
            "tokensRemoved": done.tokens_removed or 0,
            "contextWindow": window,
        }
        if done.summary_content is not None:
            out["summaryContent"] = done.summary_content
        return out

    async def session_log(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        message = required_str(params, "message")
        level = params.get("level") or "info"
        data: EventData
        if level == "warning":
            data = SessionWarningData(warning_type="log", message=message)
        elif level == "error":
            data = SessionErrorData(error_type="log", message=message)
        else:
            data = SessionInfoData(info_type="log", message=message)
        return {"eventId": hosted.session.emit(data).id}

    # --- sessions: answers from the app ------------------------------------------

    async def permission_answer(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        return {
            "success": hosted.answer_permission(
                required_str(params, "requestId"), params.get("result")
            )
        }

    async def tool_answer(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        request_id = required_str(params, "requestId")
        return {"success": hosted.calls.answer(request_id, tool_answer(params))}
