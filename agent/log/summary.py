"""What the session listing says of a log without metadata (Copilot CLI's, or an
older loopdeck one), read from its lines as plain JSON.

The listing reads a few fields of a few event types; building pydantic events for
them would cost more than the whole listing (importing the models alone does). Here
the envelopes stay the dicts ``json.loads`` made, and a line's data counts only if
the event model would accept it: a line in the usual shape (every field its model
declares absent or of its JSON type, checked below) is read as it is; any other is
handed to the model itself (imported then, and only then), so the listing never says
more or less than replay of the same log.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent.events.json_line import data_of
from agent.events.usage_ledger import totals_of_metrics
from agent.log.session_row import SessionSummary

RESULT_TYPE = "result"  # the end of a `copilot -p` run (agent/events/run_result.py)

# The types summarize_events reads: a listing parses only lines of these types
# (agent/log/scan.py). A case added there needs its type here, and its shape below.
LISTING_TYPES = frozenset(
    {
        "session.start",
        "session.resume",
        "session.shutdown",
        "session.mode_changed",
        "session.task_complete",
        "session.title_changed",
        "session.error",
        "session.autopilot_stopped",
        "session.usage_checkpoint",
        "user.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.message",
        "tool.execution_complete",
        "abort",
        RESULT_TYPE,
    }
)


def summarize_events(
    envelopes: Iterable[Mapping[str, Any]], summary: SessionSummary
) -> SessionSummary:
    """Fill ``summary`` from a log's envelopes (each line's JSON object), in order."""
    open_turn = False
    checkpointed = False
    message_tokens = 0  # what a log without usage checkpoints says (as replay shows it)
    for envelope in envelopes:
        etype = envelope.get("type")
        if not isinstance(etype, str):
            continue  # not an event: no reader shows it
        agent = envelope.get("agentId")
        if isinstance(agent, str) and agent:
            continue  # a sub-agent's run: its prompt, turns and calls are not the session's
        fitting = fitting_data(envelope)
        # A line its model would not accept is kept as a raw row by every reader: here
        # it counts as nothing but its time.
        kind = etype if fitting is not None else ""
        data = fitting or {}
        match kind:
            case "session.start":
                if open_turn:  # a second session in one file: the first one's turn is over
                    summary.outcome, open_turn = "interrupted", False
                summary.started = data["startTime"]
                context = data.get("context")
                summary.cwd = context["cwd"] if context else ""
                summary.model = data.get("selectedModel") or ""
            case "session.shutdown" | "session.resume" if open_turn:
                # The process ended (or was replaced) mid-turn: the turn never finishes.
                summary.outcome, open_turn = "interrupted", False
            case "session.title_changed":
                summary.title = data["title"]
            case "user.message":
                if not summary.first_prompt:
                    summary.first_prompt = data["content"]
                mode = data.get("agentMode")
                if mode and mode != "shell":
                    summary.mode = mode
            case "session.mode_changed":
                summary.mode = data["newMode"]
            case "assistant.turn_start":
                summary.turns += 1
                open_turn = True
            case "assistant.turn_end":
                open_turn = False
            case "tool.execution_complete" if not data.get("isUserRequested"):
                summary.tool_calls += 1  # the model's calls: a user's !command is none
            case "session.task_complete":
                summary.outcome = "completed"
            case "session.error":
                summary.outcome = "error"
            case "abort":
                summary.outcome = "aborted"
            case "session.autopilot_stopped":
                summary.outcome = "stopped"
            case "assistant.message":
                message_tokens += data.get("outputTokens") or 0
                if not data.get("toolRequests"):
                    summary.outcome = "completed"
                model = data.get("model")
                if model and not summary.model:
                    summary.model = model  # a log without session.start (Copilot's -p output)
            case "session.usage_checkpoint" if "providerModelMetrics" in data:
                # (one without it at all counts nothing)
                checkpointed = True
                totals = totals_of_metrics(data["providerModelMetrics"])
                # Cumulative: the latest one is the session's.
                summary.input_tokens, summary.output_tokens = (
                    totals.input_tokens,
                    totals.output_tokens,
                )
                summary.cost = totals.cost
            case "result":  # the end of a `copilot -p` run: nothing is left open
                open_turn = False
                if data.get("exitCode"):
                    summary.outcome = "error"
        stamp = envelope.get("timestamp")
        if isinstance(stamp, str) and stamp:
            summary.started = summary.started or stamp
            summary.updated = stamp
    if open_turn:
        summary.outcome = "in progress"
    if not checkpointed:
        summary.output_tokens = message_tokens
    return summary


# --- whether the model would accept a line's data ------------------------------------

# The fields each model declares, by name: (its annotation, as written in
# agent/events_*.py or agent/transcript/stream_fold.py; whether it is required). A test holds
# these to the models.
Shape = dict[str, tuple[str, bool]]

SHAPES: dict[str, Shape] = {
    "session.start": {
        "session_id": ("str", True),
        "version": ("int", False),
        "producer": ("str", False),
        "copilot_version": ("str", True),
        "start_time": ("str", True),
        "selected_model": ("str | None", False),
        "context": ("WorkingDirectoryContext | None", False),
    },
    "session.resume": {
        "event_count": ("int", True),
        "resume_time": ("str", True),
        "selected_model": ("str | None", False),
        "context": ("WorkingDirectoryContext | None", False),
    },
    "session.shutdown": {
        "shutdown_type": ("Literal['routine', 'error']", False),
        "session_start_time": ("int", True),
        "total_api_duration_ms": ("float", False),
        "code_changes": ("ShutdownCodeChanges", False),
        "model_metrics": ("dict[str, Any]", False),
    },
    "session.title_changed": {"title": ("str", True)},
    "user.message": {
        "content": ("str", True),
        "agent_mode": ("AgentMode | None", False),
        "is_autopilot_continuation": ("bool | None", False),
        "source": ("str | None", False),
        "message_id": ("str | None", False),
        "attachments": ("list[dict[str, Any]] | None", False),
        "transformed_content": ("str | None", False),
    },
    "session.mode_changed": {"previous_mode": ("Mode", True), "new_mode": ("Mode", True)},
    "assistant.turn_start": {"turn_id": ("str", True), "model": ("str | None", False)},
    "assistant.turn_end": {"turn_id": ("str", True), "model": ("str | None", False)},
    "tool.execution_complete": {
        "tool_call_id": ("str", True),
        "success": ("bool", True),
        "result": ("ToolResultPayload | None", False),
        "error": ("ToolErrorPayload | None", False),
        "turn_id": ("str | None", False),
        "model": ("str | None", False),
        "is_user_requested": ("bool | None", False),
    },
    "session.task_complete": {"summary": ("str | None", False), "success": ("bool | None", False)},
    "session.error": {
        "error_type": ("str", True),
        "message": ("str", True),
        "status_code": ("int | None", False),
        "provider_error_type": ("str | None", False),
    },
    "abort": {"reason": ("AbortReason", False)},
    "session.autopilot_stopped": {"reason": ("str", True)},
    "assistant.message": {
        "message_id": ("str", True),
        "content": ("str", True),
        "tool_requests": ("list[ToolRequest] | None", False),
        "turn_id": ("str | None", False),
        "model": ("str | None", False),
        "output_tokens": ("int | None", False),
        "reasoning_text": ("str | None", False),
    },
    "session.usage_checkpoint": {
        "total_nano_aiu": ("float", False),
        "provider_model_metrics": ("list[dict[str, Any]]", False),
    },
    RESULT_TYPE: {  # RunResult
        "session_id": ("str | None", False),
        "exit_code": ("int | None", False),
        "usage": ("RunUsage | None", False),
    },
}

# The models nested in those, by class name.
NESTED: dict[str, Shape] = {
    "WorkingDirectoryContext": {
        "cwd": ("str", True),
        "git_root": ("str | None", False),
        "branch": ("str | None", False),
    },
    "ShutdownCodeChanges": {
        "files_modified": ("list[str]", False),
        "lines_added": ("int", False),
        "lines_removed": ("int", False),
    },
    "ToolResultPayload": {"content": ("str", True), "detailed_content": ("str | None", False)},
    "ToolErrorPayload": {"message": ("str", True), "code": ("str | None", False)},
    "ToolRequest": {
        "tool_call_id": ("str", True),
        "name": ("str", True),
        "arguments": ("Any", False),
        "type": ("Literal['function', 'custom'] | None", False),
        "recovered_from_text": ("bool | None", False),
    },
    "RunUsage": {
        "premium_requests": ("float | None", False),
        "total_api_duration_ms": ("float | None", False),
        "session_duration_ms": ("float | None", False),
        "code_changes": ("ShutdownCodeChanges | None", False),
    },
}

# The Literal aliases of the event models (agent/events_*.py).
LITERALS: dict[str, frozenset[str]] = {
    "Mode": frozenset({"interactive", "autopilot", "plan"}),
    "AgentMode": frozenset({"interactive", "autopilot", "plan", "shell"}),
    "AbortReason": frozenset(
        {"user_initiated", "remote_command", "user_abort", "autopilot_credit_limit"}
    ),
}


def fitting_data(envelope: Mapping[str, Any]) -> dict[str, Any] | None:
    """The data of an envelope of a listed type as its model would read it (None
    when the model would not accept it, or for a type the listing does not read).

    Data in the usual shape is returned as it is. Any other (a number given as a
    string, a snake_case key…) is validated by the model itself, the fields it
    read under their wire names."""
    etype = envelope.get("type")
    checks = _CHECKS.get(etype) if isinstance(etype, str) else None
    if checks is None:
        return None
    data = data_of(envelope, known=etype != RESULT_TYPE)
    if _fits(data, checks):
        return data
    return _read_by_model(str(etype), data)


def _read_by_model(etype: str, data: dict[str, Any]) -> dict[str, Any] | None:
    # Imported only for a line in an unusual shape: a listing of ordinary logs never
    # loads pydantic.
    from pydantic import BaseModel, ValidationError

    from agent.events.run_result import RunResult
    from agent.events.schema import DATA_TYPES

    model: type[BaseModel] = RunResult if etype == RESULT_TYPE else DATA_TYPES[etype]
    try:
        read = model.model_validate(data)
    except ValidationError:
        return None
    # Only what the line set (a usage checkpoint without providerModelMetrics counts
    # nothing), under the wire names.
    return read.model_dump(by_alias=True, exclude_unset=True)


# --- the checks of the usual shape ---------------------------------------------------

Check = Callable[[Any], bool]
Checks = list[tuple[str, str, Check, bool]]  # (wire name, name, check, required)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


def _fits(data: dict[str, Any], checks: Checks) -> bool:
    for wire, name, check, required in checks:
        if name != wire and name in data:
            return False  # a field under its Python name: the model says what it means
        if wire not in data:
            if required:
                return False
            continue
        if not check(data[wire]):
            return False
    return True


def _is_float(value: Any) -> bool:
    if type(value) is int:
        return abs(value) <= sys.float_info.max
    return type(value) is float


_PLAIN: dict[str, Check] = {
    "str": lambda v: type(v) is str,
    "int": lambda v: type(v) is int,
    "float": _is_float,
    "bool": lambda v: type(v) is bool,
    "Any": lambda v: True,
    "None": lambda v: v is None,
    "dict[str, Any]": lambda v: type(v) is dict,
    "list[str]": lambda v: type(v) is list and all(type(i) is str for i in v),
    "list[dict[str, Any]]": lambda v: type(v) is list and all(type(i) is dict for i in v),
}


def _check_of(annotation: str) -> Check:
    """A check that ``value`` is, as JSON gives it, of the annotation's type with no
    conversion (a model may accept more: those lines go to the model)."""
    parts = annotation.split(" | ")
    checks = [_one_check(part) for part in parts if part != "None"]
    check = checks[0] if len(checks) == 1 else lambda v: any(c(v) for c in checks)
    if "None" in parts:
        return lambda v: v is None or check(v)
    return check


def _one_check(annotation: str) -> Check:
    if annotation in _PLAIN:
        return _PLAIN[annotation]
    if annotation in LITERALS or annotation.startswith("Literal["):
        values = LITERALS.get(annotation) or frozenset(_literal_values(annotation))
        return lambda v: type(v) is str and v in values
    if annotation.startswith("list[") and annotation[5:-1] in NESTED:
        item = _checks_of(NESTED[annotation[5:-1]])
        return lambda v: type(v) is list and all(type(i) is dict and _fits(i, item) for i in v)
    if annotation in NESTED:
        fields = _checks_of(NESTED[annotation])
        return lambda v: type(v) is dict and _fits(v, fields)
    raise ValueError(f"no check for {annotation!r}")  # a shape above names a new type


def _literal_values(annotation: str) -> list[str]:
    inside = annotation.removeprefix("Literal[").removesuffix("]")
    return [part.strip().strip("'") for part in inside.split(",")]


def _checks_of(shape: Shape) -> Checks:
    return [
        (_camel(name), name, _check_of(annotation), required)
        for name, (annotation, required) in shape.items()
    ]


_CHECKS: dict[str, Checks] = {etype: _checks_of(shape) for etype, shape in SHAPES.items()}
