"""One model call of a turn: the request streamed, retried on provider errors.

:class:`ModelCall` sends the history with the tool schemas, emits each streamed
delta as it arrives and returns the model's whole reply. A retryable provider
error is retried after the model's retry policy's delay (an
``assistant.turn_retry`` each time); a "too long" refusal is retried once after
the conversation is made smaller. What a failed attempt streamed is kept in the
log, marked cut. Between attempts it keeps the streaming state (message id,
text so far, clock) so an abort can record the partial reply.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from agent.events.base import now_iso
from agent.events.schema import (
    AssistantMessageDeltaData,
    AssistantMessageStartData,
    AssistantReasoningDeltaData,
    AssistantTurnRetryData,
    Event,
)
from agent.events.turn_notes import StreamClock, attempt_cut_note
from agent.loop.call_holdback import CallHoldback
from agent.loop.host import LoopHost
from agent.loop.text_tool_calls import correction, parse_text_calls
from agent.models.base import (
    ModelReply,
    ProviderError,
    ReasoningDelta,
    StreamItem,
    TextDelta,
    ToolCall,
)
from agent.models.provider_errors import IDLE_TIMEOUT_ADVICE

# Longest stretch of stream handling between two yields to the event loop.
STREAM_YIELD_SECONDS = 0.005


class ModelCall:
    """Calls the model for a turn; holds the current attempt's streaming state."""

    def __init__(self, host: LoopHost) -> None:
        self.host = host
        self.message_id = ""
        self.clock = StreamClock("")
        # Chunks of the reply streaming now, joined on demand: ``+=`` on an attribute
        # copies the whole reply each time (quadratic: seconds for 100,000 chunks).
        self._chunks: list[str] = []
        # Reading tool calls from the reply's text (the host's text_tool_calls): the
        # stream holds back what may be one, and a malformed one is told to the model.
        self._holdback: CallHoldback | None = None
        self.text_call_problem: str | None = None

    @property
    def partial_text(self) -> str:
        """What the current attempt has streamed so far."""
        return "".join(self._chunks)

    async def run(self, turn_id: str) -> ModelReply:
        host = self.host
        policy = host.model.retry_policy
        attempt = 0
        refused = False  # the provider said the request was too long (retried once)
        while True:
            self.message_id = new_id()
            self._chunks = []
            self.text_call_problem = None
            index = host.model_calls - 1
            beside_summary = False  # a summary was being made while this call waited
            try:
                await host.context.before_call()
                beside_summary = host.context.compacting
                reply = await self._stream(index)
                host.context.after_call(reply)
                return reply
            except ProviderError as caught:
                exc = caught
                if exc.error_type == "timeout" and (beside_summary or host.context.compacting):
                    exc = behind_summary(caught)
                self._note_cut(turn_id, attempt + 1)
                if exc.error_type == "context_limit":
                    if refused:
                        raise refused_again(exc) from None
                    refused = True
                    if not await host.context.shrink_after_refusal(exc.message):
                        raise too_long_alone(exc) from None
                    host.emit(
                        AssistantTurnRetryData(
                            turn_id=turn_id,
                            model=host.model.name,
                            reason=(
                                "context_limit: the provider refused the request as too long; "
                                "the conversation was made smaller — sending it once more"
                            ),
                        )
                    )
                    continue
                if not exc.retryable or attempt >= policy.max_retries:
                    if exc is caught:
                        raise
                    raise exc from caught
                if exc is not caught:
                    # Behind the summary: the retry waits for it, or would wait the same.
                    await host.context.wait_for_summary()
                delay = policy.delay(attempt, exc.retry_after)
                attempt += 1
                host.emit(
                    AssistantTurnRetryData(
                        turn_id=turn_id,
                        model=host.model.name,
                        reason=(
                            f"{exc.error_type}: {exc.message} — retry {attempt} of "
                            f"{policy.max_retries} in {delay:.1f}s"
                        ),
                    )
                )
                await asyncio.sleep(delay)
                await host.recorded()  # no call after a failed write (see TurnLoop._turn)

    def _note_cut(self, turn_id: str, attempt: int) -> None:
        """Record what a failed attempt streamed: the timeline keeps it, marked cut."""
        if self.partial_text:
            self.host.emit(attempt_cut_note(turn_id, self.message_id, attempt, self.partial_text))

    async def _stream(self, call_index: int) -> ModelReply:
        host = self.host
        messages = host.history.with_system(host.system_prompt())
        tools = host.tools().schemas()
        start = host.emit(AssistantMessageStartData(message_id=self.message_id))
        self.clock = clock = StreamClock(start.timestamp)
        stream = host.model.stream(messages, tools, call_index=call_index)
        self._holdback = CallHoldback() if host.text_tool_calls and tools else None
        try:
            reply = await self._consume(stream, clock)
            return self._text_calls(reply, tools)
        finally:
            # Closed here, not left to the collector: an async generator dropped
            # unfinished (it yields its reply last) is closed by asyncio's finalizer
            # hook, a thread-safe wakeup of the event loop and a task per call.
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _consume(self, stream: AsyncIterator[StreamItem], clock: StreamClock) -> ModelReply:
        host = self.host
        reasoning_id: str | None = None
        since_yield = time.perf_counter()
        async for item in stream:
            # A stream that arrives faster than it is handled (deltas buffered behind a
            # slow frame) would otherwise run here without a break: let others run.
            now = time.perf_counter()
            if now - since_yield > STREAM_YIELD_SECONDS:
                await asyncio.sleep(0)
                since_yield = time.perf_counter()
            match item:
                case TextDelta(text=text):
                    self._chunks.append(text)
                    shown = self._holdback.feed(text) if self._holdback else text
                    if shown:
                        delta = self._show(shown)
                        clock.token(delta.timestamp)
                    else:
                        clock.token(now_iso())  # held back, but a token all the same
                case ReasoningDelta(text=text):
                    reasoning_id = reasoning_id or new_id()
                    delta = host.emit(
                        AssistantReasoningDeltaData(reasoning_id=reasoning_id, delta_content=text)
                    )
                    clock.token(delta.timestamp)
                case ModelReply() as reply:
                    return reply
        raise ProviderError("server", "the model stream ended without a reply")

    def _show(self, text: str) -> Event:
        return self.host.emit(
            AssistantMessageDeltaData(message_id=self.message_id, delta_content=text)
        )

    def _text_calls(self, reply: ModelReply, tools: list[dict[str, Any]]) -> ModelReply:
        """A reply without structured tool calls whose text ends with calls: they
        become its tool calls, and its text the prose before them. What was held back
        and turns out to be prose is shown now."""
        holdback = self._holdback
        self._holdback = None
        if holdback is None:
            return reply
        found = None if reply.tool_calls else parse_text_calls(reply.text, tools)
        if found is None or not found.calls:
            if found is not None:
                self.text_call_problem = correction(found.problems)
            if rest := holdback.flush():
                self._show(rest)
            return reply
        if len(found.prose) > holdback.released:
            self._show(found.prose[holdback.released :])
        calls = [
            ToolCall(
                id=text_call_id(), name=c.name, arguments=json.dumps(c.arguments), from_text=True
            )
            for c in found.calls
        ]
        return dataclasses.replace(reply, text=found.prose, tool_calls=calls)


def behind_summary(exc: ProviderError) -> ProviderError:
    """A call that timed out while a summary of the conversation was being made on the
    same server: most likely it waited behind the summary (a server that serves one
    request at a time), not for a slow server."""
    return ProviderError(
        exc.error_type,
        f"{exc.message.removesuffix(IDLE_TIMEOUT_ADVICE)} A summary of the conversation "
        "was being made on the same server at the time (background compaction): a server "
        "that serves one request at a time (llama.cpp's, unless started with --parallel 2 "
        "or more) answers the turn only after the summary. Make the turn wait for the "
        "summary instead with --background-compaction off (background_compaction = "
        '"off" in config.toml), or let the server serve two requests at once.',
        status_code=exc.status_code,
        retry_after=exc.retry_after,
    )


def refused_again(exc: ProviderError) -> ProviderError:
    return ProviderError(
        "context_limit",
        f"{exc.message} It was refused again after the conversation was made smaller: "
        "/compact or /clear it, or, if you gave --context-window (context_window), check "
        "it against the model server's own.",
        status_code=exc.status_code,
    )


def too_long_alone(exc: ProviderError) -> ProviderError:
    return ProviderError(
        "context_limit",
        f"{exc.message} Nothing could be taken out of the conversation to make it fit "
        "(no summary could be made, and the newest message or tool result is too long on "
        "its own): shorten it, or, if you gave --context-window (context_window), check "
        "it against the model server's own.",
        status_code=exc.status_code,
    )


def new_id() -> str:
    return str(uuid.uuid4())


def text_call_id() -> str:
    """An id for a call read from text, shaped like the ids providers give."""
    return f"call_{uuid.uuid4().hex[:24]}"
