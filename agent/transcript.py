"""The transcript: the event stream folded into the blocks a renderer draws.

:class:`Transcript` is an incremental fold. :meth:`Transcript.apply` takes one
:class:`~agent.events.Event`, updates only the blocks that event touches (found
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
the run's own transcript, hung on the tool call that started it (agent/subagents.py).

Pure Python: no UI imports.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from agent import permission_level, stream_fold, todos
from agent.attachments import describe
from agent.blocks import (
    UNKNOWN_TOOL,
    AbortBlock,
    Block,
    Change,
    ErrorBlock,
    InfoRowBlock,
    NoticeBlock,
    PlanBlock,
    RawBlock,
    TaskCompleteBlock,
    ToolCallBlock,
    TurnBlock,
    TurnStatus,
    UserBlock,
    dedupe,
    last_line,
    parse_timestamp,
)
from agent.error_hints import error_hint
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
    ElicitationCompletedData,
    ElicitationRequestedData,
    Event,
    EventData,
    ExitPlanModeCompletedData,
    ExitPlanModeRequestedData,
    ExternalToolCompletedData,
    ExternalToolRequestedData,
    Mode,
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
    SessionModeChangedData,
    SessionModelChangeData,
    SessionPlanChangedData,
    SessionResumeData,
    SessionShutdownData,
    SessionStartData,
    SessionTaskCompleteData,
    SessionTitleChangedData,
    SessionTodosChangedData,
    SessionTruncationData,
    SessionUsageCheckpointData,
    SessionUsageInfoData,
    SessionWarningData,
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
from agent.info_rows import INFO_TYPES, InfoRows, usage_body, usage_summary
from agent.sent_text import sent_text
from agent.subagents import Subagent, Subagents, is_subagent_event, selection_message
from agent.turn_notes import CutAttempt, TurnStats, cap_cut, read_note, turn_of
from agent.usage import UsageTotals, totals_of
from agent.user_shell import UserShell

_PLAN_NOTICE = {
    "create": "plan written",
    "update": "plan updated",
    "delete": "plan deleted",
}

# --- the fold -------------------------------------------------------------------------


class Transcript:
    """The session as renderers need it, folded one event at a time.

    ``items`` holds the top-level blocks in timeline order; tool calls are nested
    in their :class:`TurnBlock` (``TurnBlock.tools``) unless detached.

    The per-send state (``aborted``, ``task_completed``, ``task_summary``,
    ``autopilot_stopped``, ``last_error``, ``nudges_used`` and the final answer) is
    reset by each typed (non-nudge) user message; the other counters cover the
    whole session.
    """

    def __init__(self) -> None:
        self.items: list[Block] = []
        # session
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.branch: str | None = None
        self.model: str | None = None  # the model that answered last
        # What the session asked for (session.start / model_change): may be an alias
        # such as Copilot's "auto", which each turn resolves to a real model.
        self.selected_model: str | None = None
        self.mode: Mode | None = None
        self.title = ""  # session.title_changed (/rename)
        self.busy: bool = False
        self.events: int = 0  # events applied
        # session-wide counters
        self.turns: int = 0
        self.tool_calls: int = 0
        self.input_tokens: int = 0
        self.output_tokens: int = 0
        self.cost: float = 0.0
        # How full the model's context window was at the last call (session.usage_info).
        self.context_tokens: int | None = None
        self.context_window: int | None = None
        self._checkpointed = UsageTotals()  # the latest usage checkpoint's totals
        self.nudges_total: int = 0
        # per send
        self.nudges_used: int = 0
        self.task_completed: bool = False
        self.task_summary: str | None = None
        self.aborted: bool = False
        self.autopilot_stopped: bool = False  # autopilot gave up (cap) without task_complete
        self.permission_level: permission_level.Level | None = None  # autopilot's, once chosen
        self.last_error: ErrorBlock | None = None
        # indexes: everything an event can touch is found without a scan
        self._next_block_id = 0
        self._open_turn: TurnBlock | None = None
        self._last_turn: TurnBlock | None = None
        self._recent_turn: TurnBlock | None = None  # last turn since the last user message
        self._answer_turn: TurnBlock | None = None
        self._turns_by_id: dict[str, TurnBlock] = {}
        self._turns_by_message: dict[str, TurnBlock] = {}
        self._turns_by_reasoning: dict[str, TurnBlock] = {}
        self._tools: dict[str, ToolCallBlock] = {}
        self._tool_turn: dict[str, TurnBlock | None] = {}
        self._open_tools: dict[str, ToolCallBlock] = {}
        self._permissions: dict[str, ToolCallBlock | NoticeBlock] = {}
        self._info_rows = InfoRows(self._new_id)
        self._level_questions: set[str] = set()  # request ids of the permission-level question
        self._shell = UserShell(self._new_id)  # the user's own !commands
        self.plan: PlanBlock | None = None  # the latest plan proposed with exit_plan_mode
        self._plans: dict[str, PlanBlock] = {}  # by request id, until answered
        # The model's checklist (None until a list is known), and its questions by request id.
        self.todos = todos.TodoFold()
        self._questions: dict[str, UserInputRequestedData] = {}
        self._subagents = Subagents()  # sub-agent runs: their events never reach the fold below
        self.stream = stream_fold.StreamState()  # what Copilot's -p output streamed

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
            case UserMessageData() as d:
                changes = self._user_message(d, ts)
            case AssistantTurnStartData() as d:
                changes = self._turn_start(d, ts)
            case AssistantMessageStartData() as d:
                changes = self._message_start(d, ts)
            case AssistantMessageDeltaData() as d:
                changes = self._message_delta(d, ts)
            case AssistantMessageData() as d:
                changes = self._message(d, ts)
            case AssistantReasoningDeltaData() as d:
                changes = self._reasoning_delta(d, ts)
            case AssistantReasoningData() as d:
                changes = self._reasoning(d, ts)
            case AssistantUsageData() as d:
                changes = self._usage(d)
            case SessionUsageCheckpointData() as d:
                changes = self._usage_checkpoint(d)
            case SessionCustomNotificationData() as d:
                changes = self._note(event, d)
            case AssistantTurnEndData() as d:
                changes = self._turn_end(d, ts)
            case AssistantTurnRetryData() as d:
                turn = self._turns_by_id.get(d.turn_id) or self._open_turn
                if turn is None:
                    msg = d.reason or "model call retried"
                    notice = NoticeBlock(
                        self._new_id(), "warning", msg, subtype="model_retry", timestamp=ts
                    )
                    changes = [self._add(notice)]
                else:
                    changes = self._retry(turn, d.reason)
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
                changes = self._tool_start(d, ts)
            case ToolExecutionPartialResultData() as d if self._shell.owns(d.tool_call_id):
                changes = _updated(self._shell.partial(d))
            case ToolExecutionPartialResultData() as d:
                changes = self._tool_partial(d)
            case ToolExecutionCompleteData() as d if self._shell.owns(d.tool_call_id):
                changes = _updated(self._shell.complete(d, ts))
            case ToolExecutionCompleteData() as d:
                changes = self._tool_complete(d, ts)
            case ToolUserRequestedData() as d:
                shell, is_new = self._shell.requested(d, ts)
                changes = [self._add(shell) if is_new else Change("updated", shell)]
            case PermissionRequestedData() as d:
                changes = self._permission_requested(d, ts)
            case PermissionCompletedData() as d:
                changes = self._permission_completed(d, ts)
            case ElicitationRequestedData() as d:
                changes = self._elicitation_requested(event, d, ts)
            case ElicitationCompletedData() as d:
                changes = self._elicitation_completed(event, d, ts)
            case UserInputRequestedData() as d:
                changes = self._question(d, ts)
            case UserInputCompletedData() as d:
                changes = self._answer(event, d, ts)
            case SessionTodosChangedData():
                changes = self._todos_changed(ts)
            case ExternalToolRequestedData() | ExternalToolCompletedData():
                changes = []  # an app's tool: its card comes from tool.execution_*
            case SessionIdleData() as d:
                changes = self._idle(d, ts)
            case SessionTaskCompleteData() as d:
                changes = self._task_complete(d, ts)
            case SessionErrorData() as d:
                changes = self._error(d, ts)
            case AbortData() as d:
                changes = self._abort(d, ts)
            case SessionStartData() as d:
                changes = self._session_start(d, ts)
            case SessionResumeData() as d:
                changes = self._resume(d, ts)
            case SessionModeChangedData() as d:
                self.mode = d.new_mode
                msg = f"mode: {d.previous_mode} → {d.new_mode}"
                changes = [self._add(NoticeBlock(self._new_id(), "mode", msg, timestamp=ts))]
            case SessionModelChangeData() as d:
                self.model = self.selected_model = d.new_model
                msg = f"model: {d.previous_model or '?'} → {d.new_model}"
                changes = [self._add(NoticeBlock(self._new_id(), "model", msg, timestamp=ts))]
            case SessionHandoffData() as d:
                changes = [self._add(handoff_notice(self._new_id(), d, ts))]
            case SessionInfoData() as d:
                notice = NoticeBlock(
                    self._new_id(), "info", d.message, subtype=d.info_type, tip=d.tip, timestamp=ts
                )
                changes = [self._add(notice)]
            case SessionWarningData() as d:
                changes = self._warning(d, ts)
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
                changes = [*self._shutdown(d, ts), *self._usage_summary(d, ts)]
            case SessionPlanChangedData() as d:
                msg = _PLAN_NOTICE.get(d.operation, f"plan: {d.operation}")
                changes = [self._add(NoticeBlock(self._new_id(), "plan", msg, timestamp=ts))]
            case ExitPlanModeRequestedData() as d:
                changes = self._plan_requested(d, ts)
            case ExitPlanModeCompletedData() as d:
                changes = self._plan_completed(event, d, ts)
            case SubagentSelectedData() | SubagentDeselectedData() as d:
                message = selection_message(d)
                notice = NoticeBlock(
                    self._new_id(), "info", message, subtype=event.type, timestamp=ts
                )
                changes = [self._add(notice)]
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
            changes = self._close_open(None)
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

    def final_text(self) -> str | None:
        """The answer of the latest send.

        The ``session.task_complete`` summary when there is one (autopilot), else
        the text of the last finished turn that made no tool requests.
        """
        if self.task_completed and self.task_summary:
            return self.task_summary
        turn = self._answer_turn
        if turn is None or turn.tools or turn.status in ("aborted", "error"):
            return None
        return turn.text or None

    @property
    def final_answer(self) -> str | None:
        """Same as :meth:`final_text`."""
        return self.final_text()

    @property
    def model_label(self) -> str:
        """The model that answered last, with the alias the session asked for when it
        differs: ``gpt-5-mini (auto)``."""
        model, alias = self.model or "", self.selected_model
        if alias and model and alias != model:
            return f"{model} ({alias})"
        return model or alias or ""

    @property
    def current_turn(self) -> TurnBlock | None:
        """The turn running now, if any."""
        return self._open_turn

    def get_turn(self, turn_id: str) -> TurnBlock | None:
        """The latest turn with this id (ids may repeat across sends)."""
        return self._turns_by_id.get(turn_id)

    def get_tool(self, tool_call_id: str) -> ToolCallBlock | None:
        return self._tools.get(tool_call_id)

    def get_subagent(self, agent_id: str) -> Subagent | None:
        """A sub-agent run by its ``agentId`` or the id of the call that started it."""
        return self._subagents.get(agent_id)

    def _subagent_card(self, tool_call_id: str, name: str) -> tuple[ToolCallBlock, list[Change]]:
        tool, _parent, changes = self._tool_for(tool_call_id, None, name)
        return tool, changes

    # --- block bookkeeping ------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_block_id += 1
        return self._next_block_id

    def _add(self, block: Block) -> Change:
        self.items.append(block)
        return Change("added", block)

    def _elicitation_requested(
        self, event: Event, d: ElicitationRequestedData, ts: datetime | None
    ) -> list[Change]:
        if d.elicitation_source != permission_level.SOURCE:
            return [self._raw(event.type, d, ts)]
        self._level_questions.add(d.request_id)
        return []  # the app asks in a dialog; the answer gets the timeline line

    def _elicitation_completed(
        self, event: Event, d: ElicitationCompletedData, ts: datetime | None
    ) -> list[Change]:
        if d.request_id not in self._level_questions:
            return [self._raw(event.type, d, ts)]
        self._level_questions.discard(d.request_id)
        level = permission_level.level_of(d)
        if level is not None:
            self.permission_level = level
        message = permission_level.notice(level)
        notice = NoticeBlock(self._new_id(), "permission", message, subtype="level", timestamp=ts)
        return [self._add(notice)]

    def _plan_requested(self, d: ExitPlanModeRequestedData, ts: datetime | None) -> list[Change]:
        block = PlanBlock(self._new_id(), d.request_id, d.summary, d.plan_content, timestamp=ts)
        self._plans[d.request_id] = block
        self.plan = block
        return [self._add(block)]

    def _plan_completed(
        self, event: Event, d: ExitPlanModeCompletedData, ts: datetime | None
    ) -> list[Change]:
        block = self._plans.pop(d.request_id, None)
        if block is None:
            return [self._raw(event.type, d, ts)]
        block.status = (
            "unanswered" if d.approved is None else "approved" if d.approved else "rejected"
        )
        block.selected_action = d.selected_action
        block.feedback = d.feedback
        return [Change("updated", block)]

    def _question(self, d: UserInputRequestedData, ts: datetime | None) -> list[Change]:
        # While it waits, the asking tool call's card says so (and the app asks below
        # it); the question gets its line in the timeline with its answer.
        self._questions[d.request_id] = d
        return []

    def _answer(self, event: Event, d: UserInputCompletedData, ts: datetime | None) -> list[Change]:
        asked = self._questions.pop(d.request_id, None)
        if asked is None:
            return [self._raw(event.type, d, ts)]
        subtype = "answered" if d.answer is not None else "unanswered"
        text = _question_text(asked, d)
        return [self._add(NoticeBlock(self._new_id(), "question", text, subtype, timestamp=ts))]

    def _todos_changed(self, ts: datetime | None) -> list[Change]:
        known = self.todos.changed()
        message = todos.summary(self.todos.items or []) if known else "todos changed"
        return [self._add(NoticeBlock(self._new_id(), "todos", message, timestamp=ts))]

    def _raw(self, etype: str, data: EventData, ts: datetime | None) -> Change:
        return self._add(RawBlock(self._new_id(), etype, data.wire(), ts))

    def _new_turn(self, turn_id: str | None, model: str | None, ts: datetime | None) -> TurnBlock:
        self.turns += 1
        if model:
            self.model = model
        turn = TurnBlock(
            self._new_id(),
            self.turns,
            turn_id or None,
            model=model or self.model,
            requested_model=model or self.selected_model,
            started_at=ts,
        )
        self.items.append(turn)
        self._open_turn = self._last_turn = self._recent_turn = turn
        if turn_id:
            self._turns_by_id[turn_id] = turn
        self.busy = True
        return turn

    def _turn_for(
        self,
        turn_id: str | None,
        ts: datetime | None,
        by_stream: dict[str, TurnBlock] | None = None,
        stream_id: str | None = None,
    ) -> tuple[TurnBlock, list[Change]]:
        """The turn an assistant event belongs to; opens an implied one if none."""
        turn: TurnBlock | None = None
        if turn_id:
            turn = self._turns_by_id.get(turn_id)
        if turn is None and by_stream is not None and stream_id is not None:
            turn = by_stream.get(stream_id)
        if turn is None:
            turn = self._open_turn
        if turn is not None:
            return turn, []
        turn = self._new_turn(turn_id, None, ts)
        return turn, [Change("added", turn)]

    def _tool_for(
        self, tool_call_id: str, turn: TurnBlock | None, name: str | None
    ) -> tuple[ToolCallBlock, TurnBlock | None, list[Change]]:
        """The block of a tool call; created on ``turn`` (else the open turn, else
        detached at the top level) when no event announced it before."""
        tool = self._tools.get(tool_call_id)
        if tool is not None:
            return tool, self._tool_turn[tool_call_id], []
        parent = turn if turn is not None else self._open_turn
        tool = ToolCallBlock(
            self._new_id(),
            tool_call_id,
            name or UNKNOWN_TOOL,
            turn_number=parent.number if parent is not None else None,
        )
        self._tools[tool_call_id] = tool
        self._tool_turn[tool_call_id] = parent
        self._open_tools[tool_call_id] = tool
        self.tool_calls += 1
        if parent is not None:
            parent.tools.append(tool)
        else:
            self.items.append(tool)
        return tool, parent, [Change("added", tool, parent)]

    def _tool_change(self, tool: ToolCallBlock) -> Change:
        return Change("updated", tool, self._tool_turn.get(tool.tool_call_id))

    def _interrupt(
        self, ts: datetime | None, turn_status: TurnStatus, *, recent: bool = True
    ) -> list[Change]:
        """Close what is still open after an abort or error.

        Open tool calls become interrupted. The turn takes ``turn_status``: the
        open one, else (``recent``) the last turn of this send, since the loop ends
        a turn (``assistant.turn_end``) before it reports the abort or error.
        """
        changes: list[Change] = []
        for tool in self._open_tools.values():
            self._mark_interrupted(tool)
            if tool.ended_at is None and tool.started_at is not None:
                tool.ended_at = ts
            changes.append(self._tool_change(tool))
        self._open_tools.clear()
        turn = self._open_turn or (self._recent_turn if recent else None)
        self._open_turn = None
        if turn is not None and turn.status in ("running", "done"):
            if not turn.speed.settled:
                turn.speed.attempt(None)  # the reply never came: nothing was measured
            turn.status = turn_status
            if turn.ended_at is None:
                turn.ended_at = ts
            changes.append(Change("updated", turn))
        return changes

    def _close_open(self, ts: datetime | None) -> list[Change]:
        """The process writing the session is gone (shutdown, a new start, a finished
        file): the open turn, tool calls, permission requests and shell commands are
        closed as interrupted."""
        changes = self._interrupt(ts, "aborted", recent=False)
        for target in self._permissions.values():
            match target:
                case ToolCallBlock(permission="requested"):
                    target.permission = "unanswered"
                    changes.append(self._tool_change(target))
                case NoticeBlock():
                    target.message = f"{target.subtype or 'permission'}: never answered"
                    changes.append(Change("updated", target))
        self._permissions.clear()
        changes += [Change("updated", shell) for shell in self._shell.interrupt(ts)]
        return changes

    def _answered_by(self, turn: TurnBlock, model: str) -> None:
        """``model`` answered in ``turn``: it is the turn's model; what the turn had
        (an alias such as "auto") stays as the model asked for."""
        if turn.model != model:
            if turn.requested_model is None:
                turn.requested_model = turn.model
            turn.model = model
        self.model = model

    def _mark_interrupted(self, tool: ToolCallBlock) -> None:
        tool.status = "interrupted"
        tool.last_line = None
        parent = self._tool_turn.get(tool.tool_call_id)
        if parent is not None:
            parent._interrupted = True

    def _retry(self, turn: TurnBlock, reason: str | None) -> list[Change]:
        """A model call of ``turn`` is retried: what the failed attempt streamed is
        kept apart, marked cut (loopdeck's attempt_cut note has usually done so)."""
        if turn._text.live:
            self._cut(turn, turn.retries + 1, cap_cut(turn._text.live))
        turn.retries += 1
        turn.retry_reason = reason
        turn.speed.attempt(None)
        turn._text.discard_live()
        turn._reasoning.discard_live()
        return [Change("updated", turn)]

    def _cut(self, turn: TurnBlock, attempt: int, text: str) -> None:
        turn.cut_text, turn.cut_attempt = text, attempt
        turn.speed.attempt(None)  # a speed is shown for a reply that arrived, not a cut one
        turn._text.discard_live()

    def _set_turn_usage(
        self,
        turn: TurnBlock,
        input_tokens: int | None,
        output_tokens: int | None,
        cost: float | None,
    ) -> None:
        """Set a turn's usage and move the session totals by the difference."""
        self.input_tokens += (input_tokens or 0) - (turn.input_tokens or 0)
        self.output_tokens += (output_tokens or 0) - (turn.output_tokens or 0)
        self.cost += (cost or 0.0) - (turn.cost or 0.0)
        turn.input_tokens, turn.output_tokens, turn.cost = input_tokens, output_tokens, cost

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

    def _turn_start(self, d: AssistantTurnStartData, ts: datetime | None) -> list[Change]:
        changes: list[Change] = []
        previous = self._open_turn
        if previous is not None:
            # A turn that never ended: the new one supersedes it.
            previous.status = "done"
            if previous.ended_at is None:
                previous.ended_at = ts
            changes.append(Change("updated", previous))
        turn = self._new_turn(d.turn_id, d.model, ts)
        changes.append(Change("added", turn))
        return changes

    def _turn_end(self, d: AssistantTurnEndData, ts: datetime | None) -> list[Change]:
        turn = self._turns_by_id.get(d.turn_id) or self._open_turn
        if turn is None:
            return []
        if turn.status == "running":
            turn.status = "aborted" if turn._interrupted else "done"
            turn.ended_at = ts
        elif turn.ended_at is None:
            turn.ended_at = ts
        if d.model and not turn.model:
            turn.model = d.model
        if turn is self._open_turn:
            self._open_turn = None
        if turn.status == "done" and not turn.tools:
            self._answer_turn = turn
        return [Change("updated", turn)]

    def _message_start(self, d: AssistantMessageStartData, ts: datetime | None) -> list[Change]:
        turn, changes = self._turn_for(None, ts, self._turns_by_message, d.message_id)
        self._turns_by_message[d.message_id] = turn
        if not self.stream.timed(turn):  # else the model call started the clock already
            turn.speed.attempt(ts)
        return changes

    def _message_delta(self, d: AssistantMessageDeltaData, ts: datetime | None) -> list[Change]:
        turn, changes = self._turn_for(None, ts, self._turns_by_message, d.message_id)
        self._turns_by_message[d.message_id] = turn
        if turn._text.delta(d.message_id, d.delta_content):
            turn.cut_text = ""  # the next attempt's reply takes the cut one's place
            turn.speed.token(ts, turn.started_at)
            changes.append(Change("updated", turn))
        return changes

    def _message(self, d: AssistantMessageData, ts: datetime | None) -> list[Change]:
        turn, changes = self._turn_for(d.turn_id, ts, self._turns_by_message, d.message_id)
        self._turns_by_message[d.message_id] = turn
        if turn._text.final(d.message_id, d.content):
            turn.cut_text = ""
        # Reasoning may come with the message rather than as its own event.
        reasoning = d.reasoning_text if not turn._reasoning.finals else None
        if reasoning:
            turn._reasoning.final(f"{d.message_id}/reasoning", reasoning)
        if d.model:
            self._answered_by(turn, d.model)
        if d.output_tokens is not None and turn._usage_from == "message":
            self._set_turn_usage(turn, turn.input_tokens, d.output_tokens, turn.cost)
        changes.append(Change("updated", turn))
        for request in d.tool_requests or []:
            tool, _parent, added = self._tool_for(request.tool_call_id, turn, request.name)
            if request.name:
                tool.name = request.name
            if request.arguments is not None:
                tool.arguments = request.arguments
            changes.extend(added or [self._tool_change(tool)])
        if not d.tool_requests and not turn.tools:
            self._answer_turn = turn
        return changes

    def _reasoning_delta(self, d: AssistantReasoningDeltaData, ts: datetime | None) -> list[Change]:
        turn, changes = self._turn_for(None, ts, self._turns_by_reasoning, d.reasoning_id)
        self._turns_by_reasoning[d.reasoning_id] = turn
        if turn._reasoning.delta(d.reasoning_id, d.delta_content):
            turn.speed.token(ts, turn.started_at)
            changes.append(Change("updated", turn))
        return changes

    def _reasoning(self, d: AssistantReasoningData, ts: datetime | None) -> list[Change]:
        turn, changes = self._turn_for(None, ts, self._turns_by_reasoning, d.reasoning_id)
        self._turns_by_reasoning[d.reasoning_id] = turn
        stream = turn._reasoning
        if d.content and not stream.live and stream.committed.endswith(d.content):
            # Copilot writes the reasoning on the message first (reasoningText), then
            # as its own event: shown once.
            stream.finals.add(d.reasoning_id)
            return changes
        if stream.final(d.reasoning_id, d.content):
            changes.append(Change("updated", turn))
        return changes

    def _usage(self, d: AssistantUsageData) -> list[Change]:
        turn = self._open_turn or self._last_turn
        if turn is None:
            self.input_tokens += d.input_tokens or 0
            self.output_tokens += d.output_tokens or 0
            self.cost += d.cost or 0.0
            return []
        if turn._usage_from == "checkpoint":
            return []  # the persisted record already set this turn's usage
        if turn._usage_from == "message":
            # Usage supersedes the output count the assistant.message carried.
            turn._usage_from = "usage"
            self._set_turn_usage(turn, None, None, None)

        def plus(a: int | None, b: int | None) -> int | None:
            return a if b is None else (a or 0) + b

        cost = turn.cost if d.cost is None else (turn.cost or 0.0) + d.cost
        self._set_turn_usage(
            turn,
            plus(turn.input_tokens, d.input_tokens),
            plus(turn.output_tokens, d.output_tokens),
            cost,
        )
        if d.model:
            self._answered_by(turn, d.model)
        return [Change("updated", turn)]

    def _usage_checkpoint(self, d: SessionUsageCheckpointData) -> list[Change]:
        """The session's cumulative usage: what grew since the last checkpoint is the
        turn's that made the call (superseding assistant.usage, which replay lacks);
        before any turn (a replay window's seed) it only sets the session's totals."""
        if "provider_model_metrics" not in d.model_fields_set:
            return []  # Copilot's -p runs write none: such a checkpoint counts nothing
        now = totals_of(d)
        # Totals only grow; a smaller one starts a new series (e.g. another writer).
        base = self._checkpointed if now.covers(self._checkpointed) else UsageTotals()
        grown = now.minus(base)
        self._checkpointed = now
        turn = self._open_turn or self._last_turn
        if turn is None:
            self.input_tokens += grown.input_tokens
            self.output_tokens += grown.output_tokens
            self.cost += grown.cost
            return []
        if turn._usage_from != "checkpoint":
            turn._usage_from = "checkpoint"
            self._set_turn_usage(turn, None, None, None)
        self._set_turn_usage(
            turn,
            (turn.input_tokens or 0) + grown.input_tokens,
            (turn.output_tokens or 0) + grown.output_tokens,
            (turn.cost or 0.0) + grown.cost,
        )
        return [Change("updated", turn)]

    def _note(self, event: Event, d: SessionCustomNotificationData) -> list[Change]:
        """loopdeck's notes about a turn (agent/turn_notes.py); others are shown raw."""
        note = read_note(d)
        if note is None:
            return [self._raw(event.type, d, parse_timestamp(event.timestamp))]
        turn_id = turn_of(d)
        turn = (self._turns_by_id.get(turn_id) if turn_id else None) or self._open_turn
        if turn is None:
            return []
        match note:
            case TurnStats():
                turn.speed.settle(note)
            case CutAttempt():
                self._cut(turn, note.attempt, note.content)
        return [Change("updated", turn)]

    def _tool_start(self, d: ToolExecutionStartData, ts: datetime | None) -> list[Change]:
        turn = self._turns_by_id.get(d.turn_id) if d.turn_id else None
        tool, _parent, changes = self._tool_for(d.tool_call_id, turn, d.tool_name)
        self.todos.call_started(d.tool_name, d.arguments)
        if d.tool_name:
            tool.name = d.tool_name
        if d.arguments is not None:
            tool.arguments = d.arguments
        if tool.status == "pending":
            tool.status = "running"
        if tool.started_at is None:
            tool.started_at = ts
        return changes or [self._tool_change(tool)]

    def _tool_partial(self, d: ToolExecutionPartialResultData) -> list[Change]:
        tool, _parent, changes = self._tool_for(d.tool_call_id, None, None)
        if tool.finished:
            return changes  # late output of a call already closed
        tool.status = "running"
        line = last_line(d.partial_output)
        if line is not None:
            tool.last_line = line
        return changes or [self._tool_change(tool)]

    def _tool_complete(self, d: ToolExecutionCompleteData, ts: datetime | None) -> list[Change]:
        turn = self._turns_by_id.get(d.turn_id) if d.turn_id else None
        tool, _parent, changes = self._tool_for(d.tool_call_id, turn, None)
        if d.success:
            tool.status = "success"
        elif d.error is not None and d.error.code == "interrupted":
            self._mark_interrupted(tool)
        elif tool.status != "interrupted":
            tool.status = "failure"
        tool.ended_at = ts
        tool.last_line = None
        if d.result is not None:
            tool.result = d.result.content
            tool.detailed_content = d.result.detailed_content
        if d.error is not None:
            tool.error = d.error.message
        self._open_tools.pop(d.tool_call_id, None)
        return changes or [self._tool_change(tool)]

    def _permission_requested(
        self, d: PermissionRequestedData, ts: datetime | None
    ) -> list[Change]:
        call_id = d.permission_request.get("toolCallId")
        tool = self._tools.get(call_id) if isinstance(call_id, str) else None
        if tool is not None:
            tool.permission = "requested"
            self._permissions[d.request_id] = tool
            return [self._tool_change(tool)]
        kind = str(d.permission_request.get("kind") or "permission")
        notice = NoticeBlock(
            self._new_id(),
            "permission",
            f"{kind}: permission requested",
            subtype=kind,
            timestamp=ts,
        )
        self._permissions[d.request_id] = notice
        return [self._add(notice)]

    def _permission_completed(
        self, d: PermissionCompletedData, ts: datetime | None
    ) -> list[Change]:
        outcome = str(d.result.get("kind") or "completed")
        target = self._permissions.pop(d.request_id, None)
        if target is None and d.tool_call_id:
            target = self._tools.get(d.tool_call_id)
        match target:
            case ToolCallBlock():
                target.permission = outcome
                return [self._tool_change(target)]
            case NoticeBlock():
                target.message = f"{target.subtype or 'permission'}: {outcome}"
                return [Change("updated", target)]
            case _:
                notice = NoticeBlock(
                    self._new_id(), "permission", f"permission: {outcome}", timestamp=ts
                )
                return [self._add(notice)]

    def _idle(self, d: SessionIdleData, ts: datetime | None) -> list[Change]:
        self.busy = False
        if d.mode is not None:
            self.mode = d.mode
        if d.aborted:
            self.aborted = True
            return self._interrupt(ts, "aborted")
        return []

    def _task_complete(self, d: SessionTaskCompleteData, ts: datetime | None) -> list[Change]:
        self.task_completed = True
        self.task_summary = d.summary
        return [self._add(TaskCompleteBlock(self._new_id(), d.summary, d.success, ts))]

    def _error(self, d: SessionErrorData, ts: datetime | None) -> list[Change]:
        block = ErrorBlock(
            self._new_id(),
            d.error_type,
            d.message,
            error_hint(d.error_type, d.status_code),
            status_code=d.status_code,
            timestamp=ts,
        )
        self.last_error = block
        return [*self._interrupt(ts, "error"), self._add(block)]

    def _abort(self, d: AbortData, ts: datetime | None) -> list[Change]:
        self.aborted = True
        return [
            *self._interrupt(ts, "aborted"),
            self._add(AbortBlock(self._new_id(), d.reason, ts)),
        ]

    def _session_start(self, d: SessionStartData, ts: datetime | None) -> list[Change]:
        # Another session starts in the same file: what the last one left open is over.
        changes = self._close_open(ts)
        self.busy = False
        # The first start names the session: a fork holds its origin's start too.
        self.session_id = self.session_id or d.session_id
        if d.selected_model:
            self.model = self.selected_model = d.selected_model
        if d.context is not None:
            self.cwd, self.branch = d.context.cwd, d.context.branch
        return changes

    def _resume(self, d: SessionResumeData, ts: datetime | None) -> list[Change]:
        # Whatever the previous process left open will never finish; a turn it
        # closed on restart without any reply was cut short too.
        changes = self._close_open(ts)
        turn = self._recent_turn
        if turn is not None and turn.status == "done" and not turn._text.finals:
            turn.status = "aborted"
            changes.append(Change("updated", turn))
        self.busy = False
        if d.selected_model:
            self.model = self.selected_model = d.selected_model
        if d.context is not None:
            self.cwd, self.branch = d.context.cwd, d.context.branch
        msg = f"session resumed ({d.event_count} events)"
        changes.append(self._add(NoticeBlock(self._new_id(), "resume", msg, timestamp=ts)))
        return changes

    def _warning(self, d: SessionWarningData, ts: datetime | None) -> list[Change]:
        notice = NoticeBlock(
            self._new_id(), "warning", d.message, subtype=d.warning_type, timestamp=ts
        )
        changes = [self._add(notice)]
        if d.warning_type == "model_retry" and self._open_turn is not None:
            changes.extend(self._retry(self._open_turn, d.message))
        turn = self._open_turn or self._last_turn
        if d.warning_type == WARNING_OUTPUT_TRUNCATED and turn is not None:
            turn.cut_at_limit = True
            changes.append(Change("updated", turn))
        return changes

    def _info(self, etype: str, data: dict[str, Any], ts: datetime | None) -> list[Change]:
        row, new = self._info_rows.fold(etype, data, ts)
        return [self._add(row) if new else Change("updated", row)]

    def _usage_summary(self, d: SessionShutdownData, ts: datetime | None) -> list[Change]:
        """The usage a shutdown reports per model, as a row after its notice."""
        wire = d.wire()
        title = usage_summary(wire)
        if title is None:
            return []
        row = InfoRowBlock(self._new_id(), "usage", title, usage_body(wire), timestamp=ts)
        return [self._add(row)]

    def _shutdown(self, d: SessionShutdownData, ts: datetime | None) -> list[Change]:
        changes = self._close_open(ts)  # shut down mid-turn: nothing open will finish
        self.busy = False
        msg = f"session ended ({d.shutdown_type})"
        changed = d.code_changes
        if changed.files_modified:
            msg += (
                f": {len(changed.files_modified)} file(s) changed,"
                f" +{changed.lines_added} -{changed.lines_removed}"
            )
        return [*changes, self._add(NoticeBlock(self._new_id(), "shutdown", msg, timestamp=ts))]


def _updated(block: Block | None) -> list[Change]:
    return [] if block is None else [Change("updated", block)]


def _question_text(asked: UserInputRequestedData, answer: UserInputCompletedData) -> str:
    """``? Which database? → PostgreSQL``."""
    text = f"? {asked.question}"
    if answer.answer is None:
        return text + " — not answered"
    if answer.was_freeform:
        return text + f" → “{answer.answer}” (typed)"
    return text + f" → {answer.answer}"


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


def handoff_notice(block_id: int, d: SessionHandoffData, ts: datetime | None) -> NoticeBlock:
    """The row that says which session this one continues (a fork's origin)."""
    origin = d.remote_session_id or "another session"
    message = d.summary or f"continues {origin}"
    return NoticeBlock(block_id, "info", message, subtype="handoff", tip=d.context, timestamp=ts)
