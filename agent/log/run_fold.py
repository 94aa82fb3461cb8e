"""One run's row on the board (``loopdeck runs``), folded from its log's lines.

The board follows every recent log on the machine at once, so its fold is small and
reads plain JSON (no event models): per line it keeps what a row shows — the prompt,
mode, model, turns, nudges, usage, the tool running now, a permission or question
left open, the last line of text, and how the run ended if it did. Lines of other
types are skipped by their head, unparsed (see :data:`ROW_TYPES`).

What the fold cannot know is whether the process writing the log is still there:
:func:`row_state` is told that (the session lock, agent/log/lock.py) and combines
the two. Loopdeck's logs and Copilot CLI's fold the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agent.events.json_line import read_line
from agent.events.usage_ledger import totals_of_metrics

# The states a row shows, in words (the board colours them).
WAITING = "waiting for approval"
ASKING = "waiting for an answer"
FAILED = "failed"
INTERRUPTED = "interrupted"
TOOL = "running a tool"
THINKING = "thinking"
IDLE = "idle"
DONE = "done"

# Sorted so that what needs a person comes first, then what runs, then what ended.
ORDER = {WAITING: 0, ASKING: 0, FAILED: 1, INTERRUPTED: 1, TOOL: 2, THINKING: 2, IDLE: 3, DONE: 4}
NEEDS_PERSON = frozenset({WAITING, ASKING})
RUNNING = frozenset({TOOL, THINKING})
ENDED = frozenset({DONE, FAILED, INTERRUPTED})

ROW_TYPES = frozenset(
    {
        "session.start",
        "session.resume",
        "session.shutdown",
        "session.mode_changed",
        "session.model_change",
        "session.title_changed",
        "session.task_complete",
        "session.error",
        "session.autopilot_stopped",
        "session.usage_checkpoint",
        "user.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "permission.requested",
        "permission.completed",
        "user_input.requested",
        "user_input.completed",
        "elicitation.requested",
        "elicitation.completed",
        "abort",
        "result",
    }
)
_HEADS = tuple(b'{"type":"' + t.encode() + b'"' for t in ROW_TYPES)
LAST_TEXT_CHARS = 200


@dataclass(slots=True)
class OpenTool:
    name: str
    started: float | None  # epoch seconds


@dataclass(slots=True)
class RunRow:
    """What a run's log says so far. Times are epoch seconds (None: not known)."""

    session_id: str = ""
    producer: str = ""  # "loopdeck", "copilot-agent"
    title: str = ""
    first_prompt: str = ""
    cwd: str = ""
    branch: str = ""
    mode: str = "interactive"
    model: str = ""
    turns: int = 0
    nudges: int = 0  # autopilot nudges of the current prompt
    nudge_cap: int | None = None  # from loopdeck's metadata
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    last_call_input: int | None = None  # the last model call's prompt: the context used
    context_window: int | None = None  # from loopdeck's metadata
    started: float | None = None
    updated: float | None = None
    last_text: str = ""
    open_turn: bool = False
    more_turns: bool = False  # the last turn asked for tools: another turn follows
    tools: dict[str, OpenTool] = field(default_factory=dict)
    permissions: set[str] = field(default_factory=set)
    questions: set[str] = field(default_factory=set)
    outcome: str = ""  # DONE, FAILED, INTERRUPTED once the run said so
    ended: bool = False  # session.shutdown (or a `copilot -p` result line)
    lines: int = 0  # lines folded
    problems: int = 0  # lines that could not be read

    @property
    def label(self) -> str:
        """The title, else the first prompt's first line."""
        text = (self.title or self.first_prompt).strip()
        return text.split("\n", 1)[0]

    @property
    def busy(self) -> bool:
        return bool(
            self.open_turn or self.more_turns or self.tools or self.permissions or self.questions
        )

    @property
    def context_percent(self) -> int | None:
        if not self.last_call_input or not self.context_window:
            return None
        return round(100 * self.last_call_input / self.context_window)

    def current_tool(self) -> OpenTool | None:
        """The tool started last of those still running."""
        return next(reversed(self.tools.values()), None) if self.tools else None


def wanted(line: str) -> bool:
    """Whether the fold reads this line (by its head: both writers put the type first;
    a line in another layout is read whole)."""
    raw = line.lstrip().encode("utf-8", "replace")[:64]
    if raw.startswith(b'{"type":"'):
        return raw.startswith(_HEADS)
    return True


def fold_line(row: RunRow, line: str) -> None:
    """Fold one line of the log into ``row`` (a line it cannot read is counted)."""
    if not line.strip() or not wanted(line):
        return
    try:
        envelope = read_line(line)
    except ValueError:
        row.problems += 1
        return
    if not isinstance(envelope, dict) or not isinstance(envelope.get("type"), str):
        row.problems += 1
        return
    fold_envelope(row, envelope)


def fold_envelope(row: RunRow, envelope: dict[str, Any]) -> None:
    row.lines += 1
    stamp = _epoch(envelope.get("timestamp"))
    if stamp is not None:
        row.started = row.started if row.started is not None else stamp
        row.updated = stamp
    agent = envelope.get("agentId")
    if isinstance(agent, str) and agent:
        return  # a sub-agent's event: its turns and calls are not the run's own
    data = envelope.get("data")
    d: dict[str, Any] = data if isinstance(data, dict) else {}
    etype = envelope["type"]
    match etype:
        case "session.start":
            row.session_id = _str(d.get("sessionId")) or row.session_id
            row.producer = _str(d.get("producer"))
            row.model = _str(d.get("selectedModel")) or row.model
            row.started = _epoch(d.get("startTime")) or row.started
            _context(row, d.get("context"))
        case "session.resume":
            _close_all(row)
            row.ended = False
            row.outcome = ""
            row.model = _str(d.get("selectedModel")) or row.model
            _context(row, d.get("context"))
        case "session.shutdown":
            if row.busy:
                row.outcome = INTERRUPTED  # it ended mid-turn: the turn never finishes
            _close_all(row)
            row.ended = True
        case "session.mode_changed":
            row.mode = _str(d.get("newMode")) or row.mode
        case "session.model_change":
            row.model = _str(d.get("newModel")) or row.model
        case "session.title_changed":
            row.title = _str(d.get("title"))
        case "user.message":
            if d.get("isAutopilotContinuation"):
                row.nudges += 1
            else:
                row.nudges = 0  # the cap counts per prompt
                row.outcome = ""
                if not row.first_prompt:
                    row.first_prompt = _str(d.get("content"))
            mode = _str(d.get("agentMode"))
            if mode and mode != "shell":
                row.mode = mode
        case "assistant.turn_start":
            row.turns += 1
            row.open_turn, row.more_turns = True, False
        case "assistant.turn_end":
            row.open_turn = False
        case "assistant.message":
            text = _str(d.get("content")).strip()
            if text:
                row.last_text = _last_line(text)
            row.more_turns = bool(d.get("toolRequests"))
            model = _str(d.get("model"))
            if model and not row.model:
                row.model = model
        case "tool.execution_start":
            call = _str(d.get("toolCallId"))
            row.tools[call] = OpenTool(_str(d.get("toolName")) or "tool", stamp)
        case "tool.execution_complete":
            row.tools.pop(_str(d.get("toolCallId")), None)
        case "permission.requested":
            row.permissions.add(_str(d.get("requestId")))
        case "permission.completed":
            row.permissions.discard(_str(d.get("requestId")))
        case "user_input.requested" | "elicitation.requested":
            row.questions.add(_str(d.get("requestId")))
        case "user_input.completed" | "elicitation.completed":
            row.questions.discard(_str(d.get("requestId")))
        case "session.task_complete":
            row.outcome = FAILED if d.get("success") is False else DONE
            row.more_turns = False  # task_complete was the last call asked for
            summary = _str(d.get("summary")).strip()
            if summary:
                row.last_text = _last_line(summary)
        case "session.error":
            row.outcome = FAILED
            row.last_text = _last_line(_str(d.get("message")))
            _close_all(row)
        case "session.autopilot_stopped":
            row.outcome = FAILED
            row.last_text = _last_line(_str(d.get("reason"))) or row.last_text
            row.more_turns = False
        case "abort":
            row.outcome = INTERRUPTED
            _close_all(row)
        case "session.usage_checkpoint":
            metrics = d.get("providerModelMetrics")
            if isinstance(metrics, list):
                totals = totals_of_metrics(metrics)
                if totals.input_tokens > row.input_tokens:
                    row.last_call_input = totals.input_tokens - row.input_tokens
                row.input_tokens, row.output_tokens = totals.input_tokens, totals.output_tokens
                row.cost = totals.cost
        case "result":  # the last line of `copilot -p`: nothing is left open
            _close_all(row)
            row.ended = True
            exit_code = envelope.get("exitCode", d.get("exitCode"))
            row.outcome = FAILED if exit_code else (row.outcome or DONE)


def row_state(row: RunRow, writer_alive: bool | None) -> str:
    """The state the board shows: the fold's, judged by whether the log's writer is
    alive (False: its lock says it is gone; None: it cannot be told, a Copilot log
    without a lock loopdeck recognises — then the fold alone decides)."""
    if writer_alive is False or (writer_alive is None and row.ended):
        if row.busy:
            return INTERRUPTED  # the writer died with a turn open
        return row.outcome or DONE
    if row.permissions:
        return WAITING
    if row.questions:
        return ASKING
    if row.tools:
        return TOOL
    if row.busy:
        return THINKING
    if row.outcome == FAILED:
        return FAILED  # the writer lives (an app waiting for its user): a person looks
    return IDLE


def _close_all(row: RunRow) -> None:
    row.open_turn = row.more_turns = False
    row.tools.clear()
    row.permissions.clear()
    row.questions.clear()


def _context(row: RunRow, context: object) -> None:
    if isinstance(context, dict):
        row.cwd = _str(context.get("cwd")) or row.cwd
        row.branch = _str(context.get("branch")) or row.branch


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return last if len(last) <= LAST_TEXT_CHARS else last[: LAST_TEXT_CHARS - 1] + "…"


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _epoch(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError):
        return None
