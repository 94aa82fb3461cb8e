"""Sub-agents: each run folded into its own transcript, hung on the tool call that started it.

Copilot runs a sub-agent inside a tool call (``task``). The run is framed by
``subagent.started`` and ``subagent.completed`` / ``subagent.failed`` (their
``toolCallId`` names the call), and every event of the run carries the envelope's
``agentId``: its prompt (a ``user.message``), its turns, its tool calls. None of
them belongs to the main conversation, so :class:`Subagents` routes them to the
run's own fold (a :class:`~agent.transcript.fold.Transcript`, made by the
factory the host gives) (a :class:`Subagent` on the
call's :class:`~agent.transcript.blocks.ToolCallBlock`) and the main fold never sees them: a
sub-agent's prompt is not the user's message, its replies are not the main turn's.

A run whose start was not seen (a window of a log, or an ``agentId`` that names no
call) still gets a card, so nothing it did is lost. A run nested in another run is
found through the outer run's transcript.

Pure Python: no UI imports.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import cast

from agent.events.schema import (
    AssistantTurnStartData,
    Event,
    SubagentCompletedData,
    SubagentDeselectedData,
    SubagentFailedData,
    SubagentSelectedData,
    SubagentStartedData,
)
from agent.transcript.blocks import (
    SUBAGENT_TOOL,
    Change,
    Subagent,
    SubagentStatus,
    ToolCallBlock,
    TurnStatus,
    parse_timestamp,
)
from agent.transcript.session import interrupt
from agent.transcript.state import TranscriptState

_FRAMES = (SubagentStartedData, SubagentCompletedData, SubagentFailedData)


def is_subagent_event(event: Event) -> bool:
    """Whether ``event`` belongs to a sub-agent's run rather than the main agent."""
    return event.agent_id is not None or isinstance(event.data, _FRAMES)


def selection_message(data: SubagentSelectedData | SubagentDeselectedData) -> str:
    """The notice for a custom agent picked (or dropped) as the session's agent."""
    if isinstance(data, SubagentDeselectedData):
        return "agent: back to the default agent"
    tools = f" ({len(data.tools)} tools)" if data.tools is not None else ""
    return f"agent: {data.agent_display_name} selected{tools}"


# The host transcript's hooks: the card of a call id (made when no event announced
# it), and the change that redraws a card.
CardFor = Callable[[str, str], tuple[ToolCallBlock, list[Change]]]
ChangeOf = Callable[[ToolCallBlock], Change]


class Subagents:
    """The runs of one session, by ``agentId`` (and by the id of their tool call)."""

    def __init__(self, new_fold: Callable[[], TranscriptState]) -> None:
        self._new_fold = new_fold  # a run's own fold: a fold like the session's
        self._runs: dict[str, Subagent] = {}
        self._running: list[Subagent] = []

    def get(self, agent_id: str) -> Subagent | None:
        return self._runs.get(agent_id)

    def apply(self, event: Event, card_for: CardFor, change_of: ChangeOf) -> list[Change]:
        """Fold one sub-agent event into its run; return the change of its card."""
        ts = parse_timestamp(event.timestamp)
        data = event.data
        changes: list[Change] = []
        match data:
            case SubagentStartedData():
                sub, changes = self._frame(event, data.tool_call_id, card_for)
                sub.name, sub.display_name = data.agent_name, data.agent_display_name
                sub.description = data.agent_description or None
                sub.model = data.model or sub.model
                sub.started_at = sub.started_at or ts
            case SubagentCompletedData() | SubagentFailedData():
                sub, changes = self._frame(event, data.tool_call_id, card_for)
                sub.name, sub.display_name = data.agent_name, data.agent_display_name
                sub.model = data.model or sub.model
                sub.total_tokens = data.total_tokens
                sub.reported_tool_calls = data.total_tool_calls
                sub.reported_ms = data.duration_ms
                if isinstance(data, SubagentFailedData):
                    sub.error = data.error
                    self._end(sub, "failed", ts)
                else:
                    cancelled = bool(data.cancelled)
                    self._end(sub, "cancelled" if cancelled else "completed", ts)
            case _:
                agent_id = event.agent_id or ""
                sub, changes = self._run(self._runs.get(agent_id), agent_id, card_for)
                self._runs[agent_id] = sub
                # The run's own fold; without the agentId it is a plain session there.
                turns = sub.transcript.turns
                sub.transcript.apply(event.model_copy(update={"agent_id": None}))
                turn = sub.transcript.current_turn
                implied = not isinstance(data, AssistantTurnStartData)
                if implied and sub.transcript.turns > turns and turn is not None:
                    # Copilot writes no turn_start for a sub-agent's model call: it
                    # began after the run's previous event, not when its answer came.
                    turn.started_at = sub.last_at or turn.started_at
                if sub.started_at is None:
                    sub.started_at = ts
        sub.last_at = ts or sub.last_at
        root = sub.root
        if root is not None and not changes:
            changes = [change_of(root)]
        return changes

    def settle(self, change_of: ChangeOf) -> list[Change]:
        """Runs still going whose call has ended (aborted, failed, the session shut
        down) were cut short: close them, and what they had open."""
        changes: list[Change] = []
        for sub in list(self._running):
            card = sub.card
            if card is None or not card.finished:
                continue
            self._end(sub, "interrupted", card.ended_at)
            if sub.root is not None:
                changes.append(change_of(sub.root))
        return changes

    @property
    def running(self) -> bool:
        return bool(self._running)

    # --- runs ---------------------------------------------------------------------

    def _frame(
        self, event: Event, tool_call_id: str, card_for: CardFor
    ) -> tuple[Subagent, list[Change]]:
        """The run a ``subagent.*`` event frames: the one of its tool call."""
        sub, changes = self._run(self._runs.get(tool_call_id), tool_call_id, card_for)
        self._runs[tool_call_id] = sub
        if event.agent_id is not None:
            self._runs.setdefault(event.agent_id, sub)
        return sub, changes

    def _run(
        self, sub: Subagent | None, tool_call_id: str, card_for: CardFor
    ) -> tuple[Subagent, list[Change]]:
        """``sub``, or a new run on the card of ``tool_call_id`` (looked for in the
        runs first, for a run started by a run, then in the session)."""
        if sub is not None:
            return sub, []
        sub = Subagent(tool_call_id, self._new_fold())
        changes: list[Change] = []
        card, outer = self._nested_card(tool_call_id)
        if card is None:
            card, changes = card_for(tool_call_id, SUBAGENT_TOOL)
            sub.root = card
        else:
            sub.root = outer.root if outer is not None else card
        sub.card = card
        card.subagent = sub
        if card.status == "pending":
            card.status = "running"
        self._running.append(sub)
        return sub, changes

    def _nested_card(self, tool_call_id: str) -> tuple[ToolCallBlock | None, Subagent | None]:
        for run in self._runs.values():
            card = run.transcript.get_tool(tool_call_id)
            if card is not None:
                return card, run
        return None, None

    def _end(self, sub: Subagent, status: SubagentStatus, ts: datetime | None) -> None:
        sub.status = status
        sub.ended_at = ts
        if sub in self._running:
            self._running.remove(sub)
        # Whatever the run left open ends with it: a turn that was answering is done
        # when the run completed, cut short otherwise.
        turn_status: TurnStatus = "done" if status == "completed" else "aborted"
        if status == "failed":
            turn_status = "error"
        # The runs' folds are the factory's TranscriptStates.
        interrupt(cast(TranscriptState, sub.transcript), ts, turn_status, recent=False)
