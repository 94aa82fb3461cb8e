"""A session's prompts: queued, run one loop at a time, steered into a running loop,
aborted. Every send ends with ``session.idle``, written after the log is on disk.

A failed write of the log stops the running loop at once (:meth:`PromptRunner.halt`);
later prompts end at once with the storage error.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.events.schema import AbortData, SessionIdleData
from agent.loop.turn_loop import LoopOutcome, TurnLoop

if TYPE_CHECKING:
    from agent.session.internals import SessionInternals


@dataclass(slots=True)
class Prompt:
    text: str
    message_id: str | None
    future: asyncio.Future[LoopOutcome]
    attachments: list[dict[str, Any]] | None = None


class PromptRunner:
    """Runs a session's prompts in order, one :class:`~agent.loop.turn_loop.TurnLoop` each."""

    def __init__(self, session: SessionInternals) -> None:
        self.session = session
        self.queue: collections.deque[Prompt] = collections.deque()
        # Sent with send(..., immediate=True) while a loop runs: it picks them up at
        # its next turn; they resolve with the run that took them.
        self._steering: list[Prompt] = []
        self._steered: list[Prompt] = []
        self._task: asyncio.Task[None] | None = None
        self._current: asyncio.Task[LoopOutcome] | None = None
        self._abort_requested = False
        self._abort_before_start = False

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def running(self) -> bool:
        """A loop runs now (not only queued)."""
        return self._current is not None and not self._current.done()

    def send(self, item: Prompt, *, immediate: bool) -> None:
        """Queue ``item``; ``immediate``: into the running loop instead, if one runs."""
        if immediate and self.running:
            self._steering.append(item)
            return
        self.session.fanout.backlog = None  # the first send: late subscribers start here
        self.queue.append(item)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(
                self._run_queue(), name=f"session:{self.session.id[:8]}"
            )

    def abort(self) -> None:
        """Cancel the running turn (model call or tool). Idle follows promptly."""
        if self._current is not None and not self._current.done():
            self._abort_requested = True
            self._current.cancel()
        elif self.busy:
            self._abort_before_start = True  # sent, but its loop has not started yet

    def halt(self) -> None:
        """The log cannot be written: stop the running loop now (it ends with the
        session's storage error, see :attr:`agent.session.session.Session.halted`)."""
        current = self._current
        # A write that failed inside the loop itself (the turn barrier's) raises there:
        # cancelling it too would end it twice, with the error said twice.
        if current is not None and not current.done() and asyncio.current_task() is not current:
            current.cancel()

    async def stop(self) -> None:
        """Abort what runs and wait until the runner has finished."""
        self.abort()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def take_steering(self) -> list[tuple[str, str | None, list[dict[str, Any]] | None]]:
        taken, self._steering = self._steering, []
        self._steered.extend(taken)
        return [(item.text, item.message_id, item.attachments) for item in taken]

    async def _run_queue(self) -> None:
        session = self.session
        while self.queue:
            item = self.queue.popleft()
            future = item.future
            self._abort_requested = False
            session._outcome = "in progress"
            session._save_meta()  # "in progress" on disk, for listings and watchers
            if self._abort_before_start:
                self._abort_before_start = False
                session.emit(AbortData(reason="user_initiated"))
                await self._finish(LoopOutcome(aborted=True), future)
                continue
            storage_error = session.halted
            if storage_error is not None:
                # Nothing more can be recorded: no model call, no tool, no change.
                session.emit(storage_error)
                await self._finish(LoopOutcome(error=storage_error), future)
                continue
            self._current = asyncio.create_task(
                TurnLoop(session).run(item.text, item.message_id, item.attachments)
            )
            try:
                outcome = await self._current
            except asyncio.CancelledError:
                # Cancelled before the loop could catch it (an abort or a failed
                # write right at the start), or the runner itself is being torn down.
                storage_error = session.halted
                if storage_error is not None and not self._abort_requested:
                    session.emit(storage_error)
                    await self._finish(LoopOutcome(error=storage_error), future)
                    continue
                outcome = LoopOutcome(aborted=True)
                session.emit(AbortData(reason="user_initiated"))
                if not self._abort_requested:
                    await self._finish(outcome, future)
                    raise
            await self._finish(outcome, future)

    async def _finish(self, outcome: LoopOutcome, future: asyncio.Future[LoopOutcome]) -> None:
        session = self.session
        self._current = None
        session._outcome = outcome_label(outcome)
        # Steering that came too late for this run goes first in the queue.
        self.queue.extendleft(reversed(self._steering))
        self._steering = []
        if session._writer is not None:
            await session._writer.drain()
            storage_error = session.halted
            if storage_error is not None and outcome.error is None:
                # The loop's last events failed to be written after it ended (or
                # after an abort): the send ends with the storage error all the same.
                outcome.error = storage_error
                session.emit(storage_error)
                await session._writer.drain()
        session._save_meta()
        # Idle is always the last event of a send, after the log is on disk.
        session.emit(SessionIdleData(aborted=True if outcome.aborted else None, mode=session.mode))
        steered, self._steered = self._steered, []
        for done in (future, *(item.future for item in steered)):
            if not done.done():
                done.set_result(outcome)


def outcome_label(outcome: LoopOutcome) -> str:
    if outcome.aborted:
        return "aborted"
    if outcome.error is not None:
        return "error"
    if outcome.stopped_at_cap:
        return "stopped"
    return "completed"
