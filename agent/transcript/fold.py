"""The transcript: the event stream folded into the blocks a renderer draws.

:class:`Transcript` is an incremental fold. :meth:`Transcript.apply` takes one
:class:`~agent.events.schema.Event`, updates only the blocks that event touches (found
through dicts keyed by turn id, message id and tool call id, so each event costs
O(1) whatever the length of the history) and returns the :class:`Change` list a UI
needs to redraw just those blocks.

The same fold serves a live session (with the ephemeral events: text deltas,
usage, partial tool output, ``session.idle``) and a persisted file (without them:
the ``assistant.message`` carries the full text). Both give the same blocks; after
a replay call :meth:`Transcript.finish_replay`, since no ``session.idle`` was
persisted to say the session went quiet.

Odd streams never crash the fold: tool events for a call no assistant message
announced get a block on the current turn (or a detached one at the top level),
assistant output outside a turn opens an implied turn, and event types loopdeck
does not know are kept as :class:`RawBlock`.

A sub-agent's events (those carrying ``agentId``) never reach this fold: they go to
the run's own transcript, hung on the tool call that started it (agent/transcript/subagents.py).

:meth:`Transcript.apply` dispatches each event; the state is the transcript's, and
the handlers live by subject: turns and their text (agent/transcript/turns.py),
tool calls and permissions (transcript_tools), usage (transcript_usage), questions
to the user (transcript_questions), plans and todos (transcript_plan), the
session's start, end, aborts and errors (transcript_session), Copilot's streaming
events (stream_fold), the user's ``!commands`` (user_shell), info rows (info_rows).

Pure Python: no UI imports.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from agent.events.attachments import describe
from agent.events.schema import (
    SKILL_MESSAGE_PREFIX,
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
    ElicitationCompletedData,
    ElicitationRequestedData,
    Event,
    ExitPlanModeCompletedData,
    ExitPlanModeRequestedData,
    ExternalToolCompletedData,
    ExternalToolRequestedData,
    PermissionCompletedData,
    PermissionRequestedData,
    SessionAutopilotStoppedData,
    SessionCompactionCompleteData,
    SessionCompactionStartData,
    SessionContextClearedData,
    SessionCustomNotificationData,
    SessionErrorData,
    SessionHandoffData,
    SessionIdleData,
    SessionInfoData,
    SessionMcpServersLoadedData,
    SessionMcpServerStatusChangedData,
    SessionModeChangedData,
    SessionModelChangeData,
    SessionPlanChangedData,
    SessionResumeData,
    SessionShutdownData,
    SessionSkillsLoadedData,
    SessionStartData,
    SessionTaskCompleteData,
    SessionTitleChangedData,
    SessionTodosChangedData,
    SessionTruncationData,
    SessionUsageCheckpointData,
    SessionUsageInfoData,
    SessionWarningData,
    SkillInvokedData,
    SubagentDeselectedData,
    SubagentSelectedData,
    SystemMessageData,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolExecutionStartData,
    ToolUserRequestedData,
    UnknownData,
    UserInputCompletedData,
    UserInputRequestedData,
    UserMessageData,
)
from agent.events.sent_text import sent_text
from agent.transcript import plan as transcript_plan
from agent.transcript import questions as transcript_questions
from agent.transcript import session as transcript_session
from agent.transcript import stream_fold
from agent.transcript import tools as transcript_tools
from agent.transcript import turns as transcript_turns
from agent.transcript import usage as transcript_usage
from agent.transcript.blocks import (
    Block,
    Change,
    NoticeBlock,
    RawBlock,
    Subagent,
    ToolCallBlock,
    UserBlock,
    dedupe,
    parse_timestamp,
)
from agent.transcript.info_rows import INFO_TYPES
from agent.transcript.state import TranscriptState
from agent.transcript.subagents import Subagents, is_subagent_event, selection_message

# --- the fold -------------------------------------------------------------------------


class Transcript(TranscriptState):
    """The session as renderers need it, folded one event at a time.

    ``items`` holds the top-level blocks in timeline order; tool calls are nested
    in their :class:`TurnBlock` (``TurnBlock.tools``) unless detached.

    The per-send state (``aborted``, ``task_completed``, ``task_summary``,
    ``autopilot_stopped``, ``last_error``, ``nudges_used`` and the final answer) is
    reset by each typed (non-nudge) user message; the other counters cover the
    whole session.
    """

    def __init__(self) -> None:
        super().__init__()
        # sub-agent runs: their events never reach the fold below; a run's fold is a fold
        self._subagents = Subagents(Transcript)

    # --- public API -----------------------------------------------------------------

    def apply(self, event: Event) -> list[Change]:
        """Fold one event in; return the blocks it added or updated."""
        self.events += 1
        if is_subagent_event(event):
            return dedupe(self._subagents.apply(event, self._subagent_card, self._tool_change))
        ts = parse_timestamp(event.timestamp)
        changes: list[Change]
        match event.data:
            case _ if stream_fold.handles(event):  # first: a -p stream is mostly these
                changes = stream_fold.fold(self, event, ts)
            case UserMessageData(source=str(source)) as d if source.startswith(
                SKILL_MESSAGE_PREFIX
            ):
                changes = self._skill_context(source, d.content, ts)
            case UserMessageData() as d:
                changes = self._user_message(d, ts)
            case AssistantTurnStartData() as d:
                changes = transcript_turns.turn_start(self, d, ts)
            case AssistantMessageStartData() as d:
                changes = transcript_turns.message_start(self, d, ts)
            case AssistantMessageDeltaData() as d:
                changes = transcript_turns.message_delta(self, d, ts)
            case AssistantMessageData() as d:
                changes = transcript_turns.message(self, d, ts)
            case AssistantReasoningDeltaData() as d:
                changes = transcript_turns.reasoning_delta(self, d, ts)
            case AssistantReasoningData() as d:
                changes = transcript_turns.reasoning(self, d, ts)
            case AssistantUsageData() as d:
                changes = transcript_usage.usage(self, d)
            case SessionUsageCheckpointData() as d:
                changes = transcript_usage.usage_checkpoint(self, d)
            case SessionCustomNotificationData() as d:
                changes = transcript_turns.note(self, event, d)
            case AssistantTurnEndData() as d:
                changes = transcript_turns.turn_end(self, d, ts)
            case AssistantTurnRetryData() as d:
                changes = transcript_turns.turn_retry(self, d, ts)
            case SessionContextClearedData():
                message = "Context cleared: the model starts afresh (earlier turns stay above)"
                notice = NoticeBlock(
                    self._new_id(), "info", message, subtype="context_cleared", timestamp=ts
                )
                changes = [self._add(notice)]
            case SessionTitleChangedData(title=title):
                self.title = title
                notice = NoticeBlock(
                    self._new_id(), "info", f"Renamed: {title}", subtype="title", timestamp=ts
                )
                changes = [self._add(notice)]
            case ToolExecutionStartData() as d:
                changes = transcript_tools.tool_start(self, d, ts)
            case ToolExecutionPartialResultData() as d if self._shell.owns(d.tool_call_id):
                changes = _updated(self._shell.partial(d))
            case ToolExecutionPartialResultData() as d:
                changes = transcript_tools.tool_partial(self, d)
            case ToolExecutionCompleteData() as d if self._shell.owns(d.tool_call_id):
                changes = _updated(self._shell.complete(d, ts))
            case ToolExecutionCompleteData() as d:
                changes = transcript_tools.tool_complete(self, d, ts)
            case ToolUserRequestedData() as d:
                shell, is_new = self._shell.requested(d, ts)
                changes = [self._add(shell) if is_new else Change("updated", shell)]
            case PermissionRequestedData() as d:
                changes = transcript_tools.permission_requested(self, d, ts)
            case PermissionCompletedData() as d:
                changes = transcript_tools.permission_completed(self, d, ts)
            case ElicitationRequestedData() as d:
                changes = transcript_questions.elicitation_requested(self, event, d, ts)
            case ElicitationCompletedData() as d:
                changes = transcript_questions.elicitation_completed(self, event, d, ts)
            case UserInputRequestedData() as d:
                changes = transcript_questions.question(self, d, ts)
            case UserInputCompletedData() as d:
                changes = transcript_questions.answer(self, event, d, ts)
            case SessionTodosChangedData():
                changes = transcript_plan.todos_changed(self, ts)
            case ExternalToolRequestedData() | ExternalToolCompletedData():
                changes = []  # an app's tool: its card comes from tool.execution_*
            case SessionIdleData() as d:
                changes = transcript_session.idle(self, d, ts)
            case SessionTaskCompleteData() as d:
                changes = transcript_session.task_complete(self, d, ts)
            case SessionErrorData() as d:
                changes = transcript_session.error(self, d, ts)
            case AbortData() as d:
                changes = transcript_session.abort(self, d, ts)
            case SessionStartData() as d:
                changes = transcript_session.session_start(self, d, ts)
            case SessionResumeData() as d:
                changes = transcript_session.resume(self, d, ts)
            case SessionModeChangedData() as d:
                self.mode = d.new_mode
                msg = f"mode: {d.previous_mode} → {d.new_mode}"
                changes = [self._add(NoticeBlock(self._new_id(), "mode", msg, timestamp=ts))]
            case SessionModelChangeData() as d:
                self.model = self.selected_model = d.new_model
                msg = f"model: {d.previous_model or '?'} → {d.new_model}"
                changes = [self._add(NoticeBlock(self._new_id(), "model", msg, timestamp=ts))]
            case SessionHandoffData() as d:
                changes = [self._add(transcript_session.handoff_notice(self._new_id(), d, ts))]
            case SessionInfoData() as d:
                notice = NoticeBlock(
                    self._new_id(), "info", d.message, subtype=d.info_type, tip=d.tip, timestamp=ts
                )
                changes = [self._add(notice)]
            case SessionWarningData() as d:
                changes = transcript_turns.warning(self, d, ts)
            case SessionCompactionCompleteData(success=True, post_compaction_tokens=int(after)):
                self.context_tokens = after  # the window is that much emptier now
                changes = self._info(event.type, event.data.wire(), ts)
            case (
                SessionCompactionStartData()
                | SessionCompactionCompleteData()
                | SessionTruncationData()
                | SystemMessageData()
            ):
                changes = self._info(event.type, event.data.wire(), ts)
            case SessionUsageInfoData() as d:
                self.context_tokens, self.context_window = d.current_tokens, d.token_limit
                changes = []
            case SessionAutopilotStoppedData() as d:
                self.autopilot_stopped = True
                notice = NoticeBlock(
                    self._new_id(), "autopilot", d.reason, subtype="stopped", timestamp=ts
                )
                changes = [self._add(notice)]
            case SessionShutdownData() as d:
                changes = transcript_session.shutdown(self, d, ts)
                changes += transcript_usage.usage_summary_row(self, d, ts)
            case SessionPlanChangedData() as d:
                changes = transcript_plan.plan_changed(self, d, ts)
            case ExitPlanModeRequestedData() as d:
                changes = transcript_plan.plan_requested(self, d, ts)
            case ExitPlanModeCompletedData() as d:
                changes = transcript_plan.plan_completed(self, event, d, ts)
            case SubagentSelectedData() | SubagentDeselectedData() as d:
                message = selection_message(d)
                notice = NoticeBlock(
                    self._new_id(), "info", message, subtype=event.type, timestamp=ts
                )
                changes = [self._add(notice)]
            case SessionMcpServerStatusChangedData() as d:
                self.mcp.status_changed(d)
                changes = self._info(event.type, d.wire(), ts)
            case SessionMcpServersLoadedData() as d:
                self.mcp.loaded(d)
                changes = self._info(event.type, d.wire(), ts)
            case SessionSkillsLoadedData() | SkillInvokedData() as d:
                changes = self._info(event.type, d.wire(), ts)
            case UnknownData() as d if event.type in INFO_TYPES:
                changes = self._info(event.type, d.raw, ts)
            case UnknownData() as d:
                changes = [self._add(RawBlock(self._new_id(), event.type, dict(d.raw), ts))]
            case _:
                changes = [self._raw(event.type, event.data, ts)]
        if self._subagents.running:
            changes += self._subagents.settle(self._tool_change)
        return dedupe(changes)

    def finish_replay(self, *, finished: bool = False) -> list[Change]:
        """Settle ``busy`` after a persisted stream (which has no ``session.idle``).

        The session counts as idle unless work is visibly pending: a turn still
        running, a tool call or a user's command not finished, or a user message no
        turn answered yet.
        ``finished``: no process writes the file any more, so whatever is still
        open never will finish: it is closed as interrupted (returns the changes).
        """
        if finished:
            changes = transcript_session.close_open(self, None)
            changes += self._subagents.settle(self._tool_change)  # runs inside closed cards
            self.busy = False
            return changes
        self.busy = (
            self._open_turn is not None
            or bool(self._open_tools)
            or self._shell.running
            or (bool(self.items) and isinstance(self.items[-1], UserBlock))
        )
        return self._subagents.settle(self._tool_change)

    def get_subagent(self, agent_id: str) -> Subagent | None:
        """A sub-agent run by its ``agentId`` or the id of the call that started it."""
        return self._subagents.get(agent_id)

    def _subagent_card(self, tool_call_id: str, name: str) -> tuple[ToolCallBlock, list[Change]]:
        tool, _parent, changes = transcript_tools.tool_for(self, tool_call_id, None, name)
        return tool, changes

    # --- handlers ---------------------------------------------------------------------

    def _user_message(self, d: UserMessageData, ts: datetime | None) -> list[Change]:
        if d.agent_mode == "shell":  # a !command: the user's, not a prompt for the model
            return [self._add(self._shell.message(d, ts))]
        nudge = bool(d.is_autopilot_continuation)
        if nudge:
            self.nudges_used += 1
            self.nudges_total += 1
        else:
            self.nudges_used = 0
            self.task_completed = False
            self.task_summary = None
            self.aborted = False
            self.autopilot_stopped = False
            self.last_error = None
            self._answer_turn = None
        self._recent_turn = None
        if d.agent_mode is not None:
            self.mode = d.agent_mode
        self.busy = True
        block = UserBlock(
            self._new_id(),
            sent_text(d.content, d.transformed_content) if nudge else d.content,
            is_nudge=nudge,
            nudge_number=self.nudges_used if nudge else None,
            mode=self.mode,
            source=d.source,
            timestamp=ts,
            attachments=tuple(describe(a) for a in d.attachments or () if isinstance(a, dict)),
        )
        return [self._add(block)]

    def _skill_context(self, source: str, content: str, ts: datetime | None) -> list[Change]:
        """A skill's instructions given to the model: a row, not the user's prompt
        (none when its ``skill.invoked`` row, which holds them, came just before)."""
        name = source.removeprefix(SKILL_MESSAGE_PREFIX)
        if self._info_rows.take_invoked(name):
            return []
        return self._info("skill.invoked", {"name": name, "content": content}, ts)

    def _info(self, etype: str, data: dict[str, Any], ts: datetime | None) -> list[Change]:
        row, new = self._info_rows.fold(etype, data, ts)
        return [self._add(row) if new else Change("updated", row)]


def _updated(block: Block | None) -> list[Change]:
    return [] if block is None else [Change("updated", block)]


def fold(events: Iterable[Event], *, replay: bool = False, finished: bool = False) -> Transcript:
    """Fold ``events`` into a new :class:`Transcript`.

    ``replay=True`` (a persisted file) calls :meth:`Transcript.finish_replay` at
    the end so ``busy`` reflects the file rather than the last user message;
    ``finished=True`` (no process writes the file any more) also closes what is
    still open as interrupted.
    """
    transcript = Transcript()
    for event in events:
        transcript.apply(event)
    if replay or finished:
        transcript.finish_replay(finished=finished)
    return transcript
