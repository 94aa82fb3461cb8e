"""The tool-use loop: one model call per turn, tools between, autopilot nudges.

One iteration is one LLM call and one ``assistant.turn_start``/``turn_end`` pair.
A reply with tool requests runs them and feeds their results to the next turn; a
reply without is the final answer. In autopilot, ending without ``task_complete``
injects a nudge (a ``user.message`` with ``isAutopilotContinuation``), up to a cap.
Whatever happens, :meth:`TurnLoop.run` returns and the caller emits ``session.idle``.

The session's :class:`~agent.loop.hooks.LoopHooks` are awaited at four points: the
prompt, before and after each tool, and when the loop is about to stop (a hook
may keep it going). Messages sent while it runs (``take_steering``) join at the
next turn.

The turn's parts live beside it: the model call with its retries and streaming
(:mod:`agent.loop.model_call`), the reply's tool calls (:mod:`agent.loop.tool_round`), and
what the loop needs from its session (:mod:`agent.loop.host`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agent.events.attachments import expand
from agent.events.schema import (
    WARNING_OUTPUT_TRUNCATED,
    AbortData,
    AssistantMessageData,
    AssistantReasoningData,
    AssistantTurnEndData,
    AssistantTurnStartData,
    AssistantUsageData,
    SessionAutopilotStoppedData,
    SessionErrorData,
    SessionTaskCompleteData,
    SessionWarningData,
    ToolRequest,
    UserMessageData,
)
from agent.events.turn_notes import turn_stats_note
from agent.log.writer import LogWriteError
from agent.loop.host import LoopHost
from agent.loop.model_call import ModelCall, new_id
from agent.loop.tool_round import close_pending, run_tool, summary_of, tool_request
from agent.models.base import ProviderError
from agent.tools.base import ToolResult

__all__ = [
    "DEFAULT_MAX_CONTINUES",
    "MAX_STOP_BLOCKS",
    "NUDGE",
    "LoopHost",
    "LoopOutcome",
    "TurnLoop",
]

NUDGE = (
    "You have not yet marked the task as complete using the task_complete tool. "
    "If you were planning, stop planning and start implementing. "
    "You aren't done until you have fully completed the task.\n\n"
    "Do not call task_complete while you still have open questions: decide and keep "
    "working. Do not call it when you have only hit an error: try to resolve it. "
    "Do not call it while steps remain: finish them first."
)
DEFAULT_MAX_CONTINUES = 5
# How many malformed calls written as text one send answers with a correction; after
# that such a reply stands as it is (a model that cannot write the call won't learn).
MAX_TEXT_CALL_CORRECTIONS = 3
# How many times an agentStop hook may keep one send going.
MAX_STOP_BLOCKS = 10


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
        # The model call keeps its attempt's streaming state, for an abort to record.
        self._model_call = ModelCall(host)
        self._message_sent = False
        self._corrections = 0
        self._correction: str | None = None

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
        except (_TurnAborted, asyncio.CancelledError, LogWriteError):
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
            self._correct()
            if completed:
                return True
            if not requested_tools:
                return False

    async def _turn(self) -> tuple[bool, bool]:
        host = self.host
        # No model call after a failed write of the log: what came before this turn
        # is written first (not fsynced), so the loop never runs ahead of a failed
        # log by more than the turn it is in.
        await host.recorded()
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
            call = self._model_call
            reply = await call.run(turn_id)
            requests = [tool_request(tool_call) for tool_call in reply.tool_calls]
            if reply.reasoning:
                host.emit(AssistantReasoningData(reasoning_id=new_id(), content=reply.reasoning))
            usage = reply.usage
            message = host.emit(
                AssistantMessageData(
                    message_id=call.message_id,
                    content=reply.text,
                    tool_requests=requests or None,
                    turn_id=turn_id,
                    model=model,
                    output_tokens=usage.output_tokens if usage else None,
                )
            )
            self._message_sent = True
            stats = call.clock.stats(message.timestamp, usage.output_tokens if usage else None)
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
            host.emit(turn_stats_note(turn_id, call.message_id, stats))
            if not requests and self._correction_due(call.text_call_problem):
                return True, False  # told after the turn; the model writes its call again
            if not requests:
                self.outcome.final_text = reply.text
            pending = list(requests)
            while pending:
                batch = self._next_batch(pending)
                done = await self._run_batch(batch, pending, turn_id)
                for request, result in done:
                    if request.name != "task_complete" or not result.success:
                        continue
                    summary = summary_of(request.arguments)
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

    def _next_batch(self, pending: list[ToolRequest]) -> list[ToolRequest]:
        """The next calls to run: the first alone, or it and the concurrent calls
        (sub-agents) that follow it, which run at the same time."""
        tools = self.host.tools()

        def concurrent(request: ToolRequest) -> bool:
            tool = tools.get(request.name)
            return tool is not None and tool.concurrent

        if not concurrent(pending[0]):
            return pending[:1]
        batch: list[ToolRequest] = []
        for request in pending:
            if not concurrent(request):
                break
            batch.append(request)
        return batch

    async def _run_batch(
        self, batch: list[ToolRequest], pending: list[ToolRequest], turn_id: str
    ) -> list[tuple[ToolRequest, ToolResult]]:
        """Run ``batch``; each call leaves ``pending`` as it ends, so an abort closes
        as interrupted only the calls still running."""
        done: list[tuple[ToolRequest, ToolResult]] = []

        async def one(request: ToolRequest) -> None:
            result = await run_tool(self.host, request, turn_id)
            pending.remove(request)
            done.append((request, result))

        if len(batch) == 1:
            await one(batch[0])
            return done
        # A task group: an abort cancels every call and waits until each has ended.
        async with asyncio.TaskGroup() as group:
            for request in batch:
                group.create_task(one(request), name=f"tool:{request.tool_call_id}")
        order = {request.tool_call_id: i for i, request in enumerate(batch)}
        return sorted(done, key=lambda pair: order[pair[0].tool_call_id])

    def _correction_due(self, problem: str | None) -> bool:
        """A call written as text that could not run: the model is told what was wrong
        once the turn has ended (:meth:`_correct`)."""
        if problem is None or self._corrections >= MAX_TEXT_CALL_CORRECTIONS:
            return False
        self._corrections += 1
        self._correction = problem
        return True

    def _correct(self) -> None:
        if self._correction is not None:
            host = self.host
            host.emit(
                UserMessageData(content=self._correction, agent_mode=host.mode, source="system")
            )
            self._correction = None

    def _interrupt(self, pending: list[ToolRequest], turn_id: str) -> None:
        """Record what an abort cut short, so history stays whole and nothing is lost."""
        call = self._model_call
        partial = call.partial_text
        if partial and not self._message_sent:
            self.host.emit(
                AssistantMessageData(message_id=call.message_id, content=partial, turn_id=turn_id)
            )
        close_pending(self.host, pending, turn_id)
