"""The blocks a transcript is made of: what renderers draw, one dataclass each.

Blocks are mutable and compared by identity (eq=False): a UI can key widgets by
the block object or by its ``block_id``, unique within a transcript. They are
filled in by :class:`agent.transcript.fold.Transcript`; renderers only read them.

Pure Python: no UI imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeAlias

from agent.events.schema import Event, Mode, PlanAction
from agent.transcript.turn_speed import SpeedMeter

TurnStatus = Literal["running", "done", "aborted", "error"]
ToolStatus = Literal["pending", "running", "success", "failure", "interrupted"]
NoticeKind = Literal[
    "info",
    "warning",
    "mode",
    "model",
    "resume",
    "compaction",
    "permission",
    "autopilot",
    "shutdown",
    "plan",
    "question",
    "todos",
]
ChangeKind = Literal["added", "updated"]

UNKNOWN_TOOL = "unknown"

# --- helpers -------------------------------------------------------------------


def parse_timestamp(value: str | None) -> datetime | None:
    """Parse an ISO 8601 timestamp (``Z`` accepted); ``None`` if empty or invalid.

    Naive values are taken as UTC so that any two parsed stamps can be subtracted.
    """
    if not value:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    secs = (end - start).total_seconds()
    return secs if secs >= 0 else None


def _join(first: str, second: str) -> str:
    if not first:
        return second
    if not second:
        return first
    return f"{first}\n\n{second}"


def last_line(chunk: str) -> str | None:
    for line in reversed(chunk.splitlines()):
        if line.strip():
            return line.rstrip()
    return None


@dataclass(slots=True)
class _TextStream:
    """Text built from streamed deltas, each message's final content replacing them.

    ``committed`` holds finished messages; the deltas of the one streaming are kept
    as a list and joined when read (once per read, not per delta: appending to a
    string copies all of it, which made a long reply quadratic to fold).
    """

    committed: str = ""
    live_id: str | None = None
    _chunks: list[str] = field(default_factory=list)
    _joined: str | None = None  # committed + live, until the next delta
    finals: set[str] = field(default_factory=set)

    @property
    def live(self) -> str:
        return "".join(self._chunks)

    @property
    def text(self) -> str:
        if self._joined is None:
            self._joined = _join(self.committed, self.live)
        return self._joined

    def delta(self, stream_id: str, chunk: str) -> bool:
        """Append a delta; ``False`` (ignored) if that message already finished."""
        if stream_id in self.finals:
            return False
        if stream_id != self.live_id:
            # Another message starts: an unfinished earlier one is kept as it was.
            self.committed = self.text
            self.live_id, self._chunks = stream_id, []
        self._chunks.append(chunk)
        self._joined = None
        return True

    def final(self, stream_id: str, content: str) -> bool:
        """Set a message's full content; ``False`` for a repeated final.

        The final replaces the deltas streaming now, whatever their id (the loop
        gives a reasoning's final a fresh id).
        """
        if stream_id in self.finals:
            return False
        self.live_id, self._chunks = None, []
        self.finals.add(stream_id)
        self.committed = _join(self.committed, content)
        self._joined = None
        return True

    def discard_live(self) -> bool:
        """Drop the deltas of a message that will not finish (a retried call)."""
        if self.live_id is None:
            return False
        self.live_id, self._chunks = None, []
        self._joined = None
        return True


# --- blocks ----------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class UserBlock:
    block_id: int
    content: str
    is_nudge: bool = False
    nudge_number: int | None = None  # k-th nudge since the last typed message
    mode: Mode | None = None
    source: str | None = None
    timestamp: datetime | None = None
    # Labels of the files, folders and selections attached (drawn as chips).
    attachments: tuple[str, ...] = ()


@dataclass(slots=True, eq=False)
class ToolCallBlock:
    block_id: int
    tool_call_id: str
    name: str
    arguments: Any = None
    status: ToolStatus = "pending"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    last_line: str | None = None  # last line of partial output, while running
    result: str | None = None
    detailed_content: str | None = None
    error: str | None = None
    permission: str | None = None  # "requested", then the result kind ("approved"...)
    turn_number: int | None = None  # the owning turn; None for a detached call
    subagent: Subagent | None = None  # the sub-agent this call ran (agent/transcript/subagents.py)
    # An MCP server's tool: the server and the tool's own name on it (the card shows them).
    mcp_server: str | None = None
    mcp_tool: str | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end, once both are known."""
        return _seconds(self.started_at, self.ended_at)

    @property
    def finished(self) -> bool:
        return self.status not in ("pending", "running")


@dataclass(slots=True, eq=False)
class TurnBlock:
    block_id: int
    number: int  # 1..n across the session
    turn_id: str | None
    model: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    status: TurnStatus = "running"
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    retries: int = 0  # model calls retried within this turn
    retry_reason: str | None = None  # why the last retry happened
    # What an attempt streamed before the provider cut it off: shown (struck through)
    # until the next attempt's reply replaces it; kept if none does.
    cut_text: str = ""
    cut_attempt: int | None = None  # which attempt (1-based) cut_text comes from
    cut_at_limit: bool = False  # the provider cut the reply at its output token limit
    tools: list[ToolCallBlock] = field(default_factory=list)
    # The model the session asked for when it differs from ``model`` (the one that
    # answered): Copilot's ``auto`` alias resolves to a real model per turn.
    requested_model: str | None = None
    speed: SpeedMeter = field(default_factory=SpeedMeter, repr=False)
    _text: _TextStream = field(default_factory=_TextStream, repr=False)
    _reasoning: _TextStream = field(default_factory=_TextStream, repr=False)
    # Where the usage shown comes from, most trusted last: the message's output
    # count, assistant.usage (live only), the session.usage_checkpoint (persisted).
    _usage_from: Literal["message", "usage", "checkpoint"] = field(default="message", repr=False)
    _interrupted: bool = field(default=False, repr=False)  # a tool call was cut short

    @property
    def duration(self) -> float | None:
        """Seconds from turn start to its end, once ended."""
        return _seconds(self.started_at, self.ended_at)

    @property
    def model_label(self) -> str:
        """The answering model, with the alias asked for when it differs:
        ``gpt-5-mini (auto)``."""
        model = self.model or ""
        alias = self.requested_model
        if alias and model and alias != model:
            return f"{model} ({alias})"
        return model or alias or ""

    @property
    def text(self) -> str:
        """The reply so far: finished messages, then the one streaming."""
        return self._text.text

    @property
    def reasoning(self) -> str:
        return self._reasoning.text

    @property
    def ttft_seconds(self) -> float | None:
        """Seconds from the model call going out to its first streamed token (live
        while it streams; the recorded figure once the reply is complete)."""
        return self.speed.ttft_seconds

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens per second from the first token to the end of the reply
        (while streaming: streamed chunks per second so far)."""
        return self.speed.tokens_per_second

    @property
    def finished(self) -> bool:
        return self.status != "running"


@dataclass(slots=True, eq=False)
class ShellBlock:
    """A command the user ran themselves (``!cmd``), with its output; not a model turn."""

    block_id: int
    command: str
    tool_call_id: str | None = None
    tool_name: str | None = None  # Copilot's is "local_shell"
    status: ToolStatus = "running"
    output: str | None = None
    error: str | None = None
    last_line: str | None = None  # last line of partial output, while running
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def duration(self) -> float | None:
        return _seconds(self.started_at, self.ended_at)

    @property
    def finished(self) -> bool:
        return self.status not in ("pending", "running")


@dataclass(slots=True, eq=False)
class TaskCompleteBlock:
    block_id: int
    summary: str | None = None
    success: bool | None = None
    timestamp: datetime | None = None


@dataclass(slots=True, eq=False)
class ErrorBlock:
    block_id: int
    error_type: str
    message: str
    hint: str
    status_code: int | None = None
    timestamp: datetime | None = None


@dataclass(slots=True, eq=False)
class AbortBlock:
    block_id: int
    reason: str = "user_initiated"
    timestamp: datetime | None = None


@dataclass(slots=True, eq=False)
class NoticeBlock:
    block_id: int
    kind: NoticeKind
    message: str
    subtype: str | None = None  # info_type / warning_type / permission kind
    tip: str | None = None
    timestamp: datetime | None = None


InfoState = Literal["running", "ok", "failed"]


@dataclass(slots=True, eq=False)
class InfoRowBlock:
    """A compact row for an event that is neither conversation nor a tool call (the
    system prompt, a hook, an MCP server, a compaction, ...; see agent/transcript/info_rows.py).

    ``body`` is the detail, shown only on request (collapsed, cut in exports).
    """

    block_id: int
    kind: str  # the event's family: "system", "hook", "mcp", "compaction", ...
    title: str  # one line
    body: str | None = None
    state: InfoState | None = None  # for what runs and ends (a hook, a compaction)
    count: int = 1  # events folded into this row
    timestamp: datetime | None = None


@dataclass(slots=True, eq=False)
class PlanBlock:
    """A plan the model proposed with exit_plan_mode, and what the user decided."""

    block_id: int
    request_id: str
    summary: str
    plan: str
    # pending, then approved / keep planning / unanswered (aborted while asked)
    status: Literal["pending", "approved", "rejected", "unanswered"] = "pending"
    selected_action: PlanAction | None = None
    feedback: str | None = None
    timestamp: datetime | None = None


@dataclass(slots=True, eq=False)
class RawBlock:
    """An event loopdeck does not know (or whose data did not fit), kept verbatim."""

    block_id: int
    type: str
    data: dict[str, Any]
    timestamp: datetime | None = None


Block: TypeAlias = (
    UserBlock
    | TurnBlock
    | ToolCallBlock
    | ShellBlock
    | TaskCompleteBlock
    | ErrorBlock
    | AbortBlock
    | NoticeBlock
    | PlanBlock
    | InfoRowBlock
    | RawBlock
)


@dataclass(frozen=True, slots=True)
class Change:
    """One block added or updated by an event.

    ``parent`` is the owning turn when ``item`` is a :class:`ToolCallBlock` nested
    in a turn; ``None`` for top-level blocks (in ``Transcript.items``).
    """

    kind: ChangeKind
    item: Block
    parent: TurnBlock | None = None


def dedupe(changes: list[Change]) -> list[Change]:
    """One change per block; an ``added`` wins over later ``updated`` ones."""
    if len(changes) < 2:
        return changes
    out: list[Change] = []
    for change in changes:
        if not any(seen.item is change.item for seen in out):
            out.append(change)
    return out


# --- sub-agent runs -------------------------------------------------------------------

SubagentStatus = Literal["running", "completed", "failed", "cancelled", "interrupted"]
SUBAGENT_TOOL = "task"  # the name given to a card no assistant message announced


class RunTranscript(Protocol):
    """What a sub-agent run's own fold offers its card (agent/transcript/fold.py's
    ``Transcript``: a run is folded like the session)."""

    items: list[Block]
    turns: int
    tool_calls: int

    def apply(self, event: Event) -> list[Change]: ...

    def final_text(self) -> str | None: ...

    @property
    def current_turn(self) -> TurnBlock | None: ...

    def get_tool(self, tool_call_id: str) -> ToolCallBlock | None: ...


@dataclass(slots=True, eq=False)
class Subagent:
    """One sub-agent run: what started it, how it ended, and its own transcript."""

    agent_id: str
    transcript: RunTranscript
    name: str = SUBAGENT_TOOL
    display_name: str | None = None
    description: str | None = None
    model: str | None = None
    status: SubagentStatus = "running"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    last_at: datetime | None = None  # the run's latest event
    error: str | None = None
    total_tokens: int | None = None
    # What the run's end reported; the fold's own counts stand in when it did not.
    reported_tool_calls: int | None = None
    reported_ms: float | None = None
    card: ToolCallBlock | None = field(default=None, repr=False)  # the call it runs in
    # The main transcript's card this run is drawn in (an outer run's, when nested).
    root: ToolCallBlock | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return self.display_name or self.name

    @property
    def finished(self) -> bool:
        return self.status != "running"

    @property
    def turns(self) -> int:
        return self.transcript.turns

    @property
    def tool_calls(self) -> int:
        if self.reported_tool_calls is not None:
            return max(self.reported_tool_calls, self.transcript.tool_calls)
        return self.transcript.tool_calls

    @property
    def duration(self) -> float | None:
        """Seconds the run took: as its end reported, else from its events' stamps."""
        if self.reported_ms is not None:
            return self.reported_ms / 1000
        if self.started_at is None or self.ended_at is None:
            return None
        secs = (self.ended_at - self.started_at).total_seconds()
        return secs if secs >= 0 else None

    @property
    def prompt(self) -> str | None:
        """What the run was asked: its first message (the parent agent wrote it)."""
        for item in self.transcript.items:
            if isinstance(item, UserBlock):
                return item.content
        return None

    @property
    def answer(self) -> str | None:
        """The run's final answer, once it has one."""
        return self.transcript.final_text()
