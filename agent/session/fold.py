"""A session's own state, folded from each event it records or reads back: its
counters, mode, title, usage, first prompt, the open turn, and the state of its
permission level, plan and todo list. (The model's history folds in
:mod:`agent.loop.history`.) Live and resumed sessions go through the same fold."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.events.schema import (
    AssistantTurnEndData,
    AssistantTurnRetryData,
    AssistantTurnStartData,
    AssistantUsageData,
    CompactionTokensUsed,
    Event,
    SessionCompactionCompleteData,
    SessionModeChangedData,
    SessionTitleChangedData,
    SessionUsageCheckpointData,
    ToolExecutionCompleteData,
    UserMessageData,
)

if TYPE_CHECKING:
    from agent.session.internals import SessionInternals


def fold_state(session: SessionInternals, event: Event, *, count: bool = True) -> None:
    """Everything but the model's history (``count``: the counters too)."""
    if event.agent_id is not None:
        # A sub-agent's run: not the session's turns, mode or plan; its usage is billed.
        if isinstance(event.data, AssistantUsageData | SessionCompactionCompleteData):
            _fold_usage(session, event)
        return
    session.permission_level.fold(event)
    session.plan.fold(event)
    session.todos.fold(event)
    session.extensions.fold(event)
    match event.data:
        case AssistantTurnStartData(turn_id=turn_id):
            session._model_calls += count
            session._turns += count
            session._open_turn = turn_id
        case AssistantTurnRetryData():
            session._model_calls += count
        case AssistantTurnEndData():
            session._open_turn = None
        case ToolExecutionCompleteData():
            session._tool_calls += count
        case AssistantUsageData() | SessionCompactionCompleteData():
            _fold_usage(session, event)
        case SessionUsageCheckpointData() as checkpoint:
            session.usage.restore(checkpoint)
        case UserMessageData(content=content, agent_mode=mode, is_autopilot_continuation=nudge):
            if mode in ("interactive", "autopilot", "plan"):
                session._mode = mode
            if not session._first_prompt and not nudge:
                session._first_prompt = content
        case SessionModeChangedData(new_mode=mode):
            session._mode = mode
        case SessionTitleChangedData(title=title):
            session.title = title
        case _:
            pass


def _fold_usage(session: SessionInternals, event: Event) -> None:
    match event.data:
        case AssistantUsageData() as usage:
            session.usage.add(usage)
        case SessionCompactionCompleteData(compaction_tokens_used=CompactionTokensUsed() as used):
            # The summary call is billed like any other.
            session.usage.add(
                AssistantUsageData(
                    model=used.model or session.model.name,
                    input_tokens=used.input_tokens,
                    output_tokens=used.output_tokens,
                    cost=used.cost,
                )
            )
        case _:
            pass
