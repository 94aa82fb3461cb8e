"""Keeping the model's context inside its window: measuring, compacting, truncating.

Before every model call the session measures the request it is about to send
(:class:`~agent.models.context_window.TokenMeter`) and reports it (``session.usage_info``).
Then, as Copilot CLI does (the SDK's ``infinite_sessions``):

- at the **background threshold** (default 0.80 of the window) a summary of the
  history so far is made by a model call *while the loop keeps going*
  (``session.compaction_start``) — or, with :attr:`CompactionSettings.background`
  off (a server that serves one request at a time), waited for by that call;
- at the **blocking threshold** (default 0.95) the call waits for that summary.

When the summary arrives (``session.compaction_complete``) it stands in for the
messages it covers; messages added meanwhile stay after it. The swap is done by the
history's fold of that event (:mod:`agent.loop.history`), so a resumed session rebuilds
the same history from the log. A summary that fails is an event too, not a crash, and
so is one no smaller than what it would replace (it would grow the context);
if the request is still over the blocking threshold, the oldest messages are
dropped (``session.truncation``) with a warning. After a failed summary the next one
in the background waits a few calls (:data:`RETRY_AFTER_CALLS`): each try costs a
request. A request the provider refuses as too long proves the count low: it is
corrected upward and the history made smaller before the one retry
(:meth:`ContextKeeper.shrink_after_refusal`).

The summary keeps what an agent needs to go on: the task, decisions, files touched,
open items and the todo list.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import uuid
from typing import Any, Protocol, cast

from agent.events.schema import (
    CompactionTrigger,
    Event,
    EventData,
    SessionCompactionCompleteData,
    SessionCompactionStartData,
    SessionTruncationData,
    SessionUsageInfoData,
    SessionWarningData,
)
from agent.loop.compaction_settings import CompactionSettings
from agent.loop.context_fit import estimated_fixed, fit_warning, no_room_warning
from agent.loop.history import SUMMARY_PREFIX, History
from agent.loop.summary_request import (
    CHARS_PER_TOKEN,
    summarize,
    summary_cut,
    summary_request,
    summary_tokens,
)
from agent.loop.truncation import drop_oldest
from agent.models.base import (
    ModelClient,
    ModelReply,
    ProviderError,
    ReplyCapped,
    SummaryCapped,
)
from agent.models.context_window import (
    MESSAGE_OVERHEAD,
    ContextLimits,
    TokenMeter,
    Usage,
    refused_prompt_tokens,
)

log = logging.getLogger(__name__)

# After a summary failed, the next one in the background waits this many model calls,
# or until the history grew by this share of the window (each try costs a request, and
# a failing summarizer would otherwise be asked again at every call past the threshold).
RETRY_AFTER_CALLS = 5
RETRY_AFTER_GROWTH = 0.25
CUT_TOOL_OUTPUT = "loopdeck:cut_tool_output"  # session.truncation's performedBy for a cut result


class ContextHost(Protocol):
    """What the context keeper needs from its session."""

    history: History
    model: ModelClient

    def emit(self, data: EventData) -> Event: ...

    def system_prompt(self) -> str: ...

    def tool_schemas(self) -> list[dict[str, Any]]: ...


class ContextKeeper:
    """Measures each request, runs compactions, and truncates when they cannot help."""

    def __init__(
        self,
        host: ContextHost,
        meter: TokenMeter,
        settings: CompactionSettings | None = None,
    ) -> None:
        self.host = host
        self.meter = meter
        self.settings = settings or CompactionSettings()
        self._task: asyncio.Task[SessionCompactionCompleteData] | None = None
        # The summary in flight: its attempt id, trigger, the usage it started at, focus.
        self._running: tuple[str, CompactionTrigger, Usage, str | None] | None = None
        self._outcome: SessionCompactionCompleteData | None = None  # the last one
        self.last: Usage | None = None  # the last request measured
        self._sent: int | None = None  # the raw count of the request going out
        self._calls = 0  # model calls measured so far
        # After a failed summary: the meter, its ``added`` and the call count then.
        self._failed_at: tuple[TokenMeter, int, int] | None = None
        self._fit_checked: TokenMeter | None = None  # the meter last checked by check_fit
        self._told_no_fit: TokenMeter | None = None  # check_fit said no request fits

    @property
    def limits(self) -> ContextLimits:
        return self.meter.limits

    @property
    def compacting(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def running_focus(self) -> str | None:
        """The focus the summary in flight was asked for, if any."""
        return self._running[3] if self._running is not None and self.compacting else None

    @property
    def backing_off(self) -> bool:
        """True while a failed summary holds back the next one in the background (see
        :data:`RETRY_AFTER_CALLS`); a new meter (another model, window) ends it."""
        failed = self._failed_at
        if failed is None:
            return False
        meter, added, calls = failed
        grown = (self.meter.added - added) * self.meter.ratio
        if (
            meter is not self.meter
            or self._calls - calls >= RETRY_AFTER_CALLS
            or grown >= RETRY_AFTER_GROWTH * self.limits.prompt_budget
        ):
            self._failed_at = None
            return False
        return True

    async def _settle(self) -> None:
        """Wait until no summary is being made (one that takes the place of another,
        see :meth:`compact_now`, is waited for too). Not shield(): its CancelledError
        cannot tell an abort of the caller (which must end the wait) from a cancelled
        summary; wait() raises only for the former and leaves the summary running."""
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def load(self) -> None:
        """Look up the limits and load the tokenizer, in a thread: litellm's first
        import takes seconds, and on the event loop it would freeze the UI."""
        while not self.meter.ready:  # a new meter (another model) may come meanwhile
            await asyncio.to_thread(self.meter.load)

    async def wait_for_summary(self) -> None:
        """Wait until no summary is being made (an abort of the caller ends the wait)."""
        await self._settle()

    def measure(self) -> Usage:
        host = self.host
        history = host.history
        # One tool result may take at most a quarter of the window.
        history.max_tool_bytes = self.limits.window * CHARS_PER_TOKEN // 4
        usage = self.meter.measure(host.system_prompt(), host.tool_schemas(), history.for_model())
        self.last = usage
        return usage

    def _report(self, usage: Usage, *, initial: bool = False) -> None:
        self.host.emit(
            SessionUsageInfoData(
                current_tokens=usage.total,
                messages_length=usage.message_count,
                token_limit=usage.window,
                system_tokens=usage.system,
                conversation_tokens=usage.messages,
                tool_definitions_tokens=usage.tools,
                is_initial=initial or None,
            )
        )

    def refresh(self) -> None:
        """Report the context use again after the history shrank (a summary, /clear),
        so ``ctx`` does not show the old fill until the next call. Only with the
        tokenizer already loaded: loading it (litellm) takes seconds."""
        if self.meter.ready:
            self._report(self.measure())

    # --- around each model call ---------------------------------------------------

    def _cap_reply(self) -> None:
        """Tell the model how much of the window its reply may take (a window or an
        output limit the user gave): the prompt is sized to leave exactly that."""
        model = self.host.model
        # Not isinstance() on the runtime protocol: that walks the protocol's members
        # on every call, once a turn.
        if callable(getattr(model, "cap_reply", None)):
            cast(ReplyCapped, model).cap_reply(self.limits.sent_max_tokens)

    async def before_call(self) -> None:
        """Called right before a model call: report the size, compact or wait."""
        await self.load()
        self._sent = None
        self._cap_reply()
        self._calls += 1
        usage = self.measure()
        self.check_fit(usage)
        self._report_cuts(usage)
        self._report(usage)
        if not self.settings.enabled:
            # No summaries, but the window still holds: the oldest turns go instead.
            if usage.fraction >= self.settings.blocking_threshold:
                self._drop_oldest(usage)
                usage = self.measure()
                self._report(usage)
            self._sent = self.meter.last_counted
            return
        if (
            usage.fraction >= self.settings.background_threshold
            and not self.compacting
            and not self.backing_off
            and self.start("threshold", usage)
            and not self.settings.background
        ):
            # One request at a time: the summary first, then the call.
            await self._settle()
            usage = self.measure()
            self._report(usage)
        if usage.fraction < self.settings.blocking_threshold:
            self._sent = self.meter.last_counted
            return
        # The summary in flight, if any (none while holding back after a failed one);
        # still over the threshold after it: the oldest turns go.
        await self._settle()
        usage = self.measure()
        if usage.fraction >= self.settings.blocking_threshold:
            self._drop_oldest(usage)
            usage = self.measure()
        self._report(usage)
        self._sent = self.meter.last_counted

    def _report_cuts(self, usage: Usage) -> None:
        history = self.host.history
        cuts, history.newly_cut = history.newly_cut, []
        for length, cap in cuts:
            removed = round((length - cap) / CHARS_PER_TOKEN)
            self.host.emit(
                SessionTruncationData(
                    messages_removed_during_truncation=0,
                    performed_by=CUT_TOOL_OUTPUT,
                    post_truncation_messages_length=usage.message_count,
                    post_truncation_tokens_in_messages=usage.messages,
                    pre_truncation_messages_length=usage.message_count,
                    pre_truncation_tokens_in_messages=usage.messages + removed,
                    token_limit=usage.window,
                    tokens_removed_during_truncation=removed,
                )
            )

    def after_call(self, reply: ModelReply) -> None:
        if reply.usage is not None:
            # Against the count of what was sent (a /context in between counts again).
            self.meter.correct(reply.usage.input_tokens, self._sent)

    async def shrink_after_refusal(self, detail: str) -> bool:
        """The provider refused the last request as too long: the count was low.
        Correct it upward (by the size the refusal names, if it does), then make the
        history smaller: a summary (waited for), else the oldest messages dropped.
        False when nothing could be taken out (the newest message alone is too long):
        the same request would be refused again."""
        refused = self._sent or self.meter.last_counted
        if not refused:
            return False
        await self.load()
        self.meter.refused(refused, self.limits.prompt_budget, refused_prompt_tokens(detail))
        await self._settle()  # a summary in flight: what it frees counts first
        usage = self.measure()
        blocking = self.settings.blocking_threshold
        summarise = self.settings.enabled and not self.backing_off
        if usage.fraction >= blocking and summarise and self.start("context_limit_retry", usage):
            await self._settle()
            usage = self.measure()
        if usage.fraction >= blocking:
            self._drop_oldest(usage)
            usage = self.measure()
        self._report(usage)
        shrunk = self.meter.last_counted
        if shrunk is None or shrunk >= refused:
            self._warn_fixed_part(usage)
            return False
        return True

    def check_fit(self, usage: Usage | None = None) -> None:
        """Warn, once for a window, when the system prompt and the tools' definitions
        alone leave no room, or little, for the conversation in a request. With no
        ``usage`` (at start-up, before the tokenizer is loaded: loading it takes
        seconds) they are estimated, and only a clear overflow is told."""
        if self._fit_checked is self.meter:
            return
        if usage is None and self.meter.ready:
            usage = self.measure()
        if usage is not None:
            self._fit_checked = self.meter
            fixed, budget = usage.system + usage.tools, usage.window
        else:
            fixed = estimated_fixed(self.host.system_prompt(), self.host.tool_schemas())
            budget = self.limits.prompt_budget
            if fixed < budget:
                return  # the count at the first call tells the rest
            self._fit_checked = self.meter
        if fixed < budget * self.settings.background_threshold:
            return
        if fixed >= budget:
            self._told_no_fit = self.meter
        message = fit_warning(fixed, budget, self.limits)
        self.host.emit(SessionWarningData(warning_type="context_too_small", message=message))

    def _warn_fixed_part(self, usage: Usage) -> None:
        """Nothing could be taken out: when the system prompt and the tools alone fill
        the window, say so (the newest message is not what is too long)."""
        fixed = usage.system + usage.tools
        if (
            fixed < usage.window * self.settings.blocking_threshold
            or self._told_no_fit is self.meter
        ):
            return
        message = no_room_warning(fixed, usage.window)
        self.host.emit(SessionWarningData(warning_type="context_too_small", message=message))

    # --- compaction ---------------------------------------------------------------

    def start(
        self, trigger: CompactionTrigger, usage: Usage | None = None, focus: str | None = None
    ) -> bool:
        """Start a compaction in the background; False if there is nothing to compact."""
        if self.compacting:
            return True
        upto = self.cut_point()
        if upto == 0:
            return False
        usage = usage or self.measure()
        self._cap_reply()  # the summary's reply too (a /compact before any call)
        attempt = str(uuid.uuid4())
        self.host.emit(
            SessionCompactionStartData(
                current_tokens=usage.total,
                token_limit=usage.window,
                system_tokens=usage.system,
                conversation_tokens=usage.messages,
                tool_definitions_tokens=usage.tools,
                trigger=trigger,
                compaction_attempt_id=attempt,
            )
        )
        self._running = (attempt, trigger, usage, focus)
        # What it covers is fixed now: messages added meanwhile stay after the summary.
        covered = self.host.history.messages[:upto]
        # Its share of the request as sent (a cut tool result counts as cut).
        sent = self.host.history.for_model()[:upto]
        raw = sum(self.meter.message_tokens(m) for m in sent)
        self._task = asyncio.create_task(
            self._compact(covered, raw, usage, trigger, attempt, focus), name="compaction"
        )
        return True

    def cut_point(self) -> int:
        """How many leading messages the summary replaces (see :func:`summary_cut`)."""
        return summary_cut(self.host.history, self.meter, self.limits.window)

    async def compact_now(self, focus: str | None = None) -> SessionCompactionCompleteData | None:
        """``/compact`` and the SDK's ``session.history.compact``: compact now and wait.
        Returns the outcome (``success``: a summary now stands in for the older
        history), or None when there was nothing to compact.

        A summary already in flight is waited for, unless ``focus`` asks for another
        one than it makes: then it is stopped (recorded as superseded) and a summary
        with the focus takes its place, over the same conversation and what came
        since. (A second summary after the first would summarise a summary: what the
        focus asks to keep may already be gone.)"""
        await self.load()
        if self.compacting and focus and focus != self.running_focus:
            self.abandon(f"superseded by /compact focused on: {focus}")
        if not self.compacting:
            if self.cut_point() == 0:
                return None
            self.start("manual", focus=focus)
        # An abort of the caller ends the wait, not the summary.
        await self._settle()
        assert self._outcome is not None
        return self._outcome

    async def _compact(
        self,
        covered: list[dict[str, Any]],
        covered_tokens: int,
        usage: Usage,
        trigger: CompactionTrigger,
        attempt: str,
        focus: str | None,
    ) -> SessionCompactionCompleteData:
        history = self.host.history
        ratio = self.meter.ratio  # in the provider's scale, as usage.total is
        before = round(covered_tokens * ratio)
        count = self.meter.count_text
        reply_tokens = self._summary_tokens(before)
        # Held within its share of the window as the provider counts it, not as we do.
        request = summary_request(
            covered,
            self.limits.prompt_budget,
            focus,
            lambda text: math.ceil(count(text) * ratio),
            reply_tokens,
        )
        model = self.host.model
        if isinstance(model, SummaryCapped):
            model.cap_summary(reply_tokens)
        try:
            summary, used = await summarize(model, request)
        except asyncio.CancelledError:
            if self._running is not None and self._running[0] == attempt:
                return self._complete_failed(attempt, trigger, "cancelled", usage)
            assert self._outcome is not None  # abandon() reported it
            return self._outcome
        except Exception as exc:  # a failed summary is an event, never a crash
            message = (
                exc.message if isinstance(exc, ProviderError) else f"{type(exc).__name__}: {exc}"
            )
            self._failed_at = (self.meter, self.meter.added, self._calls)
            return self._complete_failed(attempt, trigger, message, usage)
        after_summary = round(
            (self.meter.count_text(SUMMARY_PREFIX + summary) + MESSAGE_OVERHEAD) * ratio
        )
        if after_summary >= before:
            # In its place the summary would grow the context: failed, as an empty one.
            self._failed_at = (self.meter, self.meter.added, self._calls)
            return self._complete_failed(
                attempt,
                trigger,
                f"the summary ({after_summary:,} tokens) was no smaller than the "
                f"{before:,} tokens of conversation it was to replace",
                usage,
            )
        done = SessionCompactionCompleteData(
            success=True,
            messages_removed=len(covered),
            summary_content=summary,
            pre_compaction_tokens=usage.total,
            post_compaction_tokens=max(0, usage.total - before + after_summary),
            pre_compaction_messages_length=usage.message_count,
            tokens_removed=before - after_summary,
            token_limit=usage.window,
            checkpoint_number=history.checkpoints + 1,
            trigger=trigger,
            compaction_attempt_id=attempt,
            model=self.host.model.name,
            compaction_tokens_used=used,
        )
        self._outcome, self._running = done, None
        self._failed_at = None
        self.host.emit(done)
        self.meter.forget(history.messages)
        self.refresh()
        return done

    def _summary_tokens(self, covered: int) -> int:
        return summary_tokens(covered, self.limits.reply_room)

    def _complete_failed(
        self, attempt: str, trigger: CompactionTrigger, error: str, usage: Usage
    ) -> SessionCompactionCompleteData:
        done = SessionCompactionCompleteData(
            success=False,
            error=error,
            pre_compaction_tokens=usage.total,
            token_limit=usage.window,
            trigger=trigger,
            compaction_attempt_id=attempt,
            model=self.host.model.name,
        )
        self._outcome, self._running = done, None
        self.host.emit(done)
        return done

    def _drop_oldest(self, usage: Usage) -> None:
        """The last resort (agent/loop/truncation.py): back under the background
        threshold by dropping the oldest messages."""
        threshold = self.settings.background_threshold
        drop_oldest(self.host.history, self.meter, usage, threshold, self.host.emit)

    def abandon(self, why: str = "cancelled") -> None:
        """Stop a summary in flight, reported as failed now: what it covers is gone
        (``/clear``), and applied later it would bring that back; or another summary
        takes its place (``why`` says which)."""
        task = self._task
        if task is None or task.done() or self._running is None:
            return
        task.cancel()
        self._task = None  # over now, though its cancellation is yet to run
        attempt, trigger, usage, _ = self._running
        self._complete_failed(attempt, trigger, why, usage)

    async def close(self) -> None:
        task = self._task
        if task is not None and not task.done():
            self.abandon()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


