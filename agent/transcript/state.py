"""The transcript's state: the blocks, the session's counters, and the indexes the
handlers keep (by turn id, message id and tool call id).

:class:`TranscriptState` is what each handler module (turns, tools, usage,
questions, plan, session, stream_fold) reads and updates; the dispatch of events to
them is :class:`agent.transcript.fold.Transcript`, a :class:`TranscriptState`.

Pure Python: no UI imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from agent.events import permission_level, todos
from agent.events.run_result import RunResult
from agent.events.schema import Event, EventData, Mode, UserInputRequestedData
from agent.events.usage_ledger import UsageTotals
from agent.transcript.blocks import (
    Block,
    Change,
    ErrorBlock,
    NoticeBlock,
    PlanBlock,
    RawBlock,
    ToolCallBlock,
    TurnBlock,
)
from agent.transcript.info_rows import InfoRows
from agent.transcript.mcp import McpServersFold
from agent.transcript.partial_json import JsonPrefix
from agent.transcript.user_shell import UserShell


@dataclass(slots=True)
class StreamState:
    """What the streaming events left: arguments still streaming, the model calls
    of each turn, and the run's result once its line is read."""

    arguments: dict[str, JsonPrefix] = field(default_factory=dict)  # by tool call id
    calls: dict[int, int] = field(default_factory=dict)  # turn block id -> calls started
    failure: dict[int, str] = field(default_factory=dict)  # turn block id -> why a call failed
    result: RunResult | None = None

    def timed(self, turn: TurnBlock) -> bool:
        """Whether a model call started this turn's clock (then an
        ``assistant.message_start``, which Copilot sends only as the text begins,
        must not restart it)."""
        return turn.block_id in self.calls


class TranscriptState:
    """The fold's state (see agent/transcript/fold.py for how events reach it)."""

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
        self.mcp = McpServersFold()  # the MCP servers' status (agent/transcript/mcp.py)
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
        self.stream = StreamState()  # what Copilot's -p output streamed

    def apply(self, event: Event) -> list[Change]:
        """Fold one event in (:class:`agent.transcript.fold.Transcript` does)."""
        raise NotImplementedError

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

    # --- block bookkeeping ------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_block_id += 1
        return self._next_block_id

    def _add(self, block: Block) -> Change:
        self.items.append(block)
        return Change("added", block)

    def _raw(self, etype: str, data: EventData, ts: datetime | None) -> Change:
        return self._add(RawBlock(self._new_id(), etype, data.wire(), ts))

    def _tool_change(self, tool: ToolCallBlock) -> Change:
        return Change("updated", tool, self._tool_turn.get(tool.tool_call_id))

    def _answered_by(self, turn: TurnBlock, model: str) -> None:
        """``model`` answered in ``turn``: it is the turn's model; what the turn had
        (an alias such as "auto") stays as the model asked for."""
        if turn.model != model:
            if turn.requested_model is None:
                turn.requested_model = turn.model
            turn.model = model
        self.model = model
