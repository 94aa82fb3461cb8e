"""The tool-use loop: one model call per turn, tools between, autopilot nudges.

One iteration is one LLM call and one ``assistant.turn_start``/``turn_end`` pair.
A reply with tool requests runs them and feeds their results to the next turn; a
reply without is the final answer. In autopilot, ending without ``task_complete``
injects a nudge (a ``user.message`` with ``isAutopilotContinuation``), up to a cap.
Whatever happens, :meth:`TurnLoop.run` returns and the caller emits ``session.idle``.

The session's :class:`~agent.hooks.LoopHooks` are awaited at four points: the
prompt, before and after each tool, and when the loop is about to stop (a hook
may keep it going). Messages sent while it runs (``take_steering``) join at the
next turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from agent.attachments import expand
from agent.compaction import ContextKeeper
from agent.events import (
    WARNING_OUTPUT_TRUNCATED,
    AbortData,
    AssistantMessageData,
    AssistantMessageDeltaData,
    AssistantMessageStartData,
    AssistantReasoningData,
    AssistantReasoningDeltaData,
    AssistantTurnEndData,
    AssistantTurnRetryData,
    AssistantTurnStartData,
    AssistantUsageData,
    Event,
    EventData,
    Mode,
    SessionAutopilotStoppedData,
    SessionErrorData,
    SessionTaskCompleteData,
    SessionWarningData,
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
    ToolRequest,
    ToolResultPayload,
    UserMessageData,
)
from agent.history import History
from agent.hooks import LoopHooks, ToolAfterword, ToolDecision
from agent.log_writer import LogWriteError
from agent.models.base import (
    ModelClient,
    ModelReply,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCall,
)
from agent.tools.base import ToolContext, ToolResult
from agent.tools.registry import ToolRegistry, execute
from agent.turn_notes import StreamClock, attempt_cut_note, turn_stats_note

# Longest stretch of stream handling between two yields to the event loop.
STREAM_YIELD_SECONDS = 0.005

NUDGE = (
    "You have not yet marked the task as complete using the task_complete tool. "
    "If you were planning, stop planning and start implementing. "
    "You aren't done until you have fully completed the task.\n\n"
    "Do not call task_complete while you still have open questions: decide and keep "
    "working. Do not call it when you have only hit an error: try to resolve it. "
    "Do not call it while steps remain: finish them first."
)
DEFAULT_MAX_CONTINUES = 5
INTERRUPTED = "Interrupted: the user aborted this tool call before it finished."
STOPPED_UNRECORDED = "Stopped: the session log could not be written (see the storage error)."
# How many times an agentStop hook may keep one send going.
MAX_STOP_BLOCKS = 10


class LoopHost(Protocol):
    """What the loop needs from its session."""

    history: History
    model: ModelClient
    hooks: LoopHooks

    @property
    def mode(self) -> Mode: ...

    @property
    def model_calls(self) -> int:
        """Model calls so far in the session (turn starts + retries), persisted."""
        ...

    @property
    def max_autopilot_continues(self) -> int: ...

    def emit(self, data: EventData) -> Event: ...

    @property
    def halted(self) -> SessionErrorData | None:
        """Why the host stopped the loop itself (a log it cannot write), if it did."""
        ...

    async def persist(self) -> None:
        """Make every event emitted so far durable (written and fsynced).

        Raises :class:`~agent.log_writer.LogWriteError` when the log cannot be written."""
        ...

    def tools(self) -> ToolRegistry: ...

    def tool_context(self, report_progress: Any) -> ToolContext: ...

    def system_prompt(self) -> str: ...

    @property
    def context(self) -> ContextKeeper:
        """Measures each request and keeps it inside the model's window."""
        ...

    async def authorize(self, request: ToolRequest) -> ToolResult | None:
        """None if the call may run, else the failed result the model reads."""
        ...

    def take_steering(
        self,
    ) -> list[tuple[str, str | None, list[dict[str, Any]] | None]]:
        """Messages sent into the running loop since last asked: (text, message id)."""
        ...


@dataclass(slots=True)
class LoopOutcome:
    """How one ``send`` ended. ``final_text`` is the last reply without tools."""

    final_text: str | None = None
    task_complete: bool = False
    summary: str | None = None
    stopped_at_cap: bool = False
    aborted: bool = False
    error: SessionErrorData | None = None
    turns: int = 0
    nudges: int = 0


class _TurnAborted(Exception):
    """Raised inside a turn after its cleanup events, to end the loop as aborted."""


class TurnLoop:
    def __init__(self, host: LoopHost) -> None:
        self.host = host
        self.outcome = LoopOutcome()
        self._stop_blocks = 0
        # Chunks of the reply streaming now, joined on demand: ``+=`` on an attribute
        # copies the whole reply each time (quadratic: seconds for 100,000 chunks).
        self._partial_chunks: list[str] = []

    async def run(
        self,
        prompt: str,
        message_id: str | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> LoopOutcome:
        host = self.host
        try:
            if not await self._submit(prompt, message_id, attachments):
                return self.outcome
            while True:
                completed = await self._run_until_final()
                if self._steer():
                    continue
                autopilot_unfinished = not completed and host.mode == "autopilot"
                if autopilot_unfinished and self.outcome.nudges < host.max_autopilot_continues:
                    self.outcome.nudges += 1
                    host.emit(
                        UserMessageData(
                            content=NUDGE, agent_mode="autopilot", is_autopilot_continuation=True
                        )
                    )
                    continue
                stop_reason = (
                    "task_complete"
                    if completed
                    else "continuation_cap"
                    if autopilot_unfinished
                    else "end_turn"
                )
                if await self._stop_blocked(stop_reason):
                    continue
                if autopilot_unfinished:
                    self.outcome.stopped_at_cap = True
                    host.emit(
                        SessionAutopilotStoppedData(
                            reason=(
                                f"continuation cap reached: {self.outcome.nudges} nudges "
                                "without task_complete"
                            )
                        )
                    )
                break
        except (_TurnAborted, asyncio.CancelledError):
            if host.halted is not None:
                self._fail(host.halted)  # the log failed: an error, not a user's abort
            else:
                self.outcome.aborted = True
                host.emit(AbortData(reason="user_initiated"))
        except ProviderError as exc:
            self._fail(
                SessionErrorData(
                    error_type=exc.error_type, message=exc.message, status_code=exc.status_code
                )
            )
        except Exception as exc:  # a bug must still end with idle, and say what broke
            self._fail(
                SessionErrorData(error_type="internal", message=f"{type(exc).__name__}: {exc}")
            )
        return self.outcome

    def _fail(self, error: SessionErrorData) -> None:
        self.outcome.error = error
        self.host.emit(error)

    async def _submit(
        self,
        prompt: str,
        message_id: str | None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> bool:
        """The userPromptSubmitted hook, then the user message. False if it was blocked."""
        host = self.host
        decision = await host.hooks.user_prompt_submitted(prompt)
        if decision is not None:
            if decision.block_reason is not None:
                host.emit(
                    SessionWarningData(
                        warning_type="policy_blocked",
                        message=f"Prompt blocked by a hook: {decision.block_reason}",
                    )
                )
                return False
            prompt = decision.prompt if decision.prompt is not None else prompt
            if decision.context:
                prompt = f"{prompt}\n\n{decision.context}"
        self._user_message(prompt, message_id, attachments)
        return True

    def _user_message(
        self, text: str, message_id: str | None, attachments: list[dict[str, Any]] | None
    ) -> None:
        host = self.host
        host.emit(
            UserMessageData(
                content=text,
                agent_mode=host.mode,
                message_id=message_id,
                attachments=attachments,
                # What the model reads: the text, then each attachment's content.
                transformed_content=expand(text, attachments) if attachments else None,
            )
        )

    def _steer(self) -> bool:
        """Record messages sent while the loop ran; they join the next turn."""
        host = self.host
        steering = host.take_steering()
        for text, message_id, attachments in steering:
            self._user_message(text, message_id, attachments)
        return bool(steering)

    async def _stop_blocked(self, stop_reason: str) -> bool:
        """Ask the agentStop hook; a reason to go on becomes the next user message."""
        if self._stop_blocks >= MAX_STOP_BLOCKS:
            return False
        reason = await self.host.hooks.agent_stop(
            stop_reason=stop_reason, repeated=self._stop_blocks > 0
        )
        if not reason:
            return False
        self._stop_blocks += 1
        self.host.emit(UserMessageData(content=reason, agent_mode=self.host.mode, source="system"))
        return True

    async def _run_until_final(self) -> bool:
        """Run turns until a reply without tool requests. True if task_complete ran."""
        while True:
            self._steer()
            requested_tools, completed = await self._turn()
            if completed:
                return True
            if not requested_tools:
                return False

    async def _turn(self) -> tuple[bool, bool]:
        host = self.host
        # Let the UI and the log writer run between turns, even when the model and
        # the tools answer without ever waiting.
        await asyncio.sleep(0)
        turn_id = str(host.model_calls)
        model = host.model.name
        host.emit(AssistantTurnStartData(turn_id=turn_id, model=model))
        self.outcome.turns += 1
        pending: list[ToolRequest] = []
        completed = False
        self._message_sent = False
        try:
            reply = await self._call_model(turn_id)
            requests = [_tool_request(call) for call in reply.tool_calls]
            if reply.reasoning:
                host.emit(AssistantReasoningData(reasoning_id=_new_id(), content=reply.reasoning))
            usage = reply.usage
            message = host.emit(
                AssistantMessageData(
                    message_id=self._message_id,
                    content=reply.text,
                    tool_requests=requests or None,
                    turn_id=turn_id,
                    model=model,
                    output_tokens=usage.output_tokens if usage else None,
                )
            )
            self._message_sent = True
            stats = self._clock.stats(message.timestamp, usage.output_tokens if usage else None)
            if reply.finish_reason == "length":
                host.emit(
                    SessionWarningData(
                        warning_type=WARNING_OUTPUT_TRUNCATED,
                        message="The reply was cut at the model's output limit "
                        "(finish_reason: length); what follows it may be incomplete.",
                    )
                )
            if usage is not None:
                host.emit(
                    AssistantUsageData(
                        model=model,
                        input_tokens=usage.input_tokens,
                        output_tokens=usage.output_tokens,
                        cost=usage.cost,
                        duration=stats.duration_ms,
                        time_to_first_token_ms=stats.ttft_ms,
                    )
                )
            host.emit(turn_stats_note(turn_id, self._message_id, stats))
            if not requests:
                self.outcome.final_text = reply.text
            pending = list(requests)
            while pending:
                request = pending[0]
                result = await self._run_tool(request, turn_id)
                pending.pop(0)
                if request.name == "task_complete" and result.success:
                    summary = _summary_of(request.arguments)
                    host.emit(SessionTaskCompleteData(summary=summary, success=True))
                    self.outcome.task_complete = True
                    self.outcome.summary = summary
                    completed = True
            return bool(requests), completed
        except (asyncio.CancelledError, LogWriteError):
            self._interrupt(pending, turn_id)
            raise _TurnAborted from None
        finally:
            host.emit(AssistantTurnEndData(turn_id=turn_id, model=model))

    async def _call_model(self, turn_id: str) -> ModelReply:
        host = self.host
        policy = host.model.retry_policy
        attempt = 0
        refused = False  # the provider said the request was too long (retried once)
        while True:
            self._message_id = _new_id()
            self._partial_chunks = []
            index = host.model_calls - 1
            try:
                await host.context.before_call()
                reply = await self._stream(index)
                host.context.after_call(reply)
                return reply
            except ProviderError as exc:
                self._note_cut(turn_id, attempt + 1)
                if exc.error_type == "context_limit":
                    if refused:
                        raise _refused_again(exc) from None
                    refused = True
                    if not await host.context.shrink_after_refusal(exc.message):
                        raise _too_long_alone(exc) from None
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
                    raise
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

    def _note_cut(self, turn_id: str, attempt: int) -> None:
        """Record what a failed attempt streamed: the timeline keeps it, marked cut."""
        if self._partial_text:
            self.host.emit(attempt_cut_note(turn_id, self._message_id, attempt, self._partial_text))

    async def _stream(self, call_index: int) -> ModelReply:
        host = self.host
        messages = host.history.with_system(host.system_prompt())
        tools = host.tools().schemas()
        reasoning_id: str | None = None
        start = host.emit(AssistantMessageStartData(message_id=self._message_id))
        self._clock = clock = StreamClock(start.timestamp)
        since_yield = time.perf_counter()
        async for item in host.model.stream(messages, tools, call_index=call_index):
            # A stream that arrives faster than it is handled (deltas buffered behind a
            # slow frame) would otherwise run here without a break: let others run.
            now = time.perf_counter()
            if now - since_yield > STREAM_YIELD_SECONDS:
                await asyncio.sleep(0)
                since_yield = time.perf_counter()
            match item:
                case TextDelta(text=text):
                    self._partial_chunks.append(text)
                    delta = host.emit(
                        AssistantMessageDeltaData(message_id=self._message_id, delta_content=text)
                    )
                    clock.token(delta.timestamp)
                case ReasoningDelta(text=text):
                    reasoning_id = reasoning_id or _new_id()
                    delta = host.emit(
                        AssistantReasoningDeltaData(reasoning_id=reasoning_id, delta_content=text)
                    )
                    clock.token(delta.timestamp)
                case ModelReply() as reply:
                    return reply
        raise ProviderError("server", "the model stream ended without a reply")

    async def _run_tool(self, request: ToolRequest, turn_id: str) -> ToolResult:
        host = self.host
        decision = await host.hooks.pre_tool_use(request)
        if decision is not None and decision.arguments is not None:
            request = request.model_copy(update={"arguments": decision.arguments})
        call_id = request.tool_call_id
        host.emit(
            ToolExecutionStartData(
                tool_call_id=call_id,
                tool_name=request.name,
                arguments=request.arguments,
                turn_id=turn_id,
            )
        )

        def progress(line: str) -> None:
            host.emit(ToolExecutionPartialResultData(tool_call_id=call_id, partial_output=line))

        try:
            result = await self._authorized_run(request, decision, progress)
        except Exception as exc:  # any phase's failure is this call's result; the run goes on
            result = ToolResult.failure(f"tool {request.name} failed: {type(exc).__name__}: {exc}")
        afterword = await host.hooks.post_tool_use(request, result)
        result = _with_hook_context(result, decision, afterword)
        host.emit(
            ToolExecutionCompleteData(
                tool_call_id=call_id,
                success=result.success,
                result=ToolResultPayload(
                    content=result.content, detailed_content=result.detailed_content
                ),
                error=None
                if result.success
                else ToolErrorPayload(message=result.error or result.content),
                turn_id=turn_id,
                model=host.model.name,
            )
        )
        return result

    async def _authorized_run(
        self, request: ToolRequest, decision: ToolDecision | None, progress: Any
    ) -> ToolResult:
        """A preToolUse hook may deny or allow outright; otherwise the permission gate."""
        host = self.host
        verdict = decision.permission if decision is not None else None
        if decision is not None and verdict == "deny":
            reason = decision.reason or "no reason given"
            return ToolResult.failure(f"Denied by a preToolUse hook: {reason}")
        if verdict != "allow":
            denial = await host.authorize(request)
            if denial is not None:
                return denial
        await self._record_before_effect(request)
        ctx = host.tool_context(progress)
        ctx.tool_call_id = request.tool_call_id
        return await execute(host.tools(), request.name, request.arguments, ctx)

    async def _record_before_effect(self, request: ToolRequest) -> None:
        """Record before effect (persistence, DESIGN §4): a tool that can change the
        workspace — writes files, runs a command, or is an app's tool we cannot vouch
        for — starts only once the events that request it are durable: the
        ``assistant.message`` naming the call and its ``tool.execution_start`` are
        written and fsynced. A crash or kill at any moment then leaves no change
        without its request in the log, and resume closes the call as interrupted.

        This is the log's second fsync point, beside the turn end. Read-only tools
        skip it: they change nothing. Raises
        :class:`~agent.log_writer.LogWriteError` when the log cannot be written: the
        tool never runs.
        """
        tool = self.host.tools().get(request.name)
        if tool is None or tool.may_have_effects():
            await self.host.persist()

    def _interrupt(self, pending: list[ToolRequest], turn_id: str) -> None:
        """Record what an abort cut short, so history stays whole and nothing is lost."""
        host = self.host
        if self._partial_text and not self._message_sent:
            host.emit(
                AssistantMessageData(
                    message_id=self._message_id, content=self._partial_text, turn_id=turn_id
                )
            )
        why = INTERRUPTED if host.halted is None else STOPPED_UNRECORDED
        for request in pending:
            host.emit(
                ToolExecutionCompleteData(
                    tool_call_id=request.tool_call_id,
                    success=False,
                    error=ToolErrorPayload(message=why, code="interrupted"),
                    turn_id=turn_id,
                )
            )

    # Per-attempt streaming state, kept so an abort can record a partial reply.
    _message_id: str = ""
    _message_sent: bool = False
    _clock: StreamClock = StreamClock("")

    @property
    def _partial_text(self) -> str:
        return "".join(self._partial_chunks)


def _refused_again(exc: ProviderError) -> ProviderError:
    return ProviderError(
        "context_limit",
        f"{exc.message} It was refused again after the conversation was made smaller: "
        "/compact or /clear it, or, if you gave --context-window (context_window), check "
        "it against the model server's own.",
        status_code=exc.status_code,
    )


def _too_long_alone(exc: ProviderError) -> ProviderError:
    return ProviderError(
        "context_limit",
        f"{exc.message} Nothing could be taken out of the conversation to make it fit "
        "(no summary could be made, and the newest message or tool result is too long on "
        "its own): shorten it, or, if you gave --context-window (context_window), check "
        "it against the model server's own.",
        status_code=exc.status_code,
    )


def _tool_request(call: ToolCall) -> ToolRequest:
    arguments: Any = call.arguments
    try:
        parsed = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        arguments = parsed
    return ToolRequest(tool_call_id=call.id, name=call.name, arguments=arguments)


def _with_hook_context(
    result: ToolResult, before: ToolDecision | None, after: ToolAfterword | None
) -> ToolResult:
    """Apply what the tool hooks said to the result the model reads."""
    if after is not None and after.content is not None and result.success:
        result = dataclasses.replace(result, content=after.content)
    extra = "\n\n".join(
        c for c in (before.context if before else None, after.context if after else None) if c
    )
    if not extra:
        return result
    if result.success:
        return dataclasses.replace(result, content=f"{result.content}\n\n{extra}")
    error = result.error or result.content
    return dataclasses.replace(result, error=f"{error}\n\n{extra}")


def _summary_of(arguments: Any) -> str | None:
    if isinstance(arguments, dict):
        summary = arguments.get("summary")
        return summary if isinstance(summary, str) else None
    return None


def _new_id() -> str:
    return str(uuid.uuid4())
