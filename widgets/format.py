"""Small text helpers shared by the timeline's blocks and the status bar."""

from __future__ import annotations

import json
from typing import Any

# A turn whose reply the provider cut at its output token limit (finish_reason length).
LIMIT_CUT_MARK = "✂ cut at the model's output limit"

# Why a turn was aborted, per the schema's reasons (an unknown one is shown as it is).
_ABORT_REASONS = {
    "user_initiated": "the running turn was stopped.",
    "remote_command": "the running turn was stopped by a remote command.",
    "user_abort": "the running turn was stopped at the user's request (via an MCP server).",
    "autopilot_credit_limit": "autopilot reached its AI credit limit (--max-ai-credits).",
}


def abort_reason(reason: str) -> str:
    """The sentence that says why a turn was aborted."""
    return _ABORT_REASONS.get(reason) or f"the running turn was stopped ({reason})."


# Which argument best says what a tool call does, per tool.
_KEY_ARGUMENT = {
    "view": "path",
    "grep": "pattern",
    "glob": "pattern",
    "create": "path",
    "edit": "path",
    "bash": "command",
    "task_complete": "summary",
    "ask_user": "question",
    "task": "description",  # a sub-agent's run: its prompt is shown with the run
}


# Tools whose other arguments are shown better elsewhere (the diff, the file).
_KEY_ONLY = frozenset({"create", "edit", "task_complete", "ask_user", "task"})


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def tokens(count: int | None) -> str:
    if not count:
        return ""
    if count < 1000:
        return str(count)
    if count < 999_950:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"  # an all-day session: "49.0M", not "48956.0k"


def cost(value: float | None) -> str:
    if not value:
        return ""
    return f"${value:.4f}" if value < 0.01 else f"${value:.2f}"


def speed(ttft_seconds: float | None, tokens_per_second: float | None) -> str:
    """A model call's speed: "first token 0.4s · 42 tok/s" (what is known of it)."""
    parts = []
    if ttft_seconds is not None:
        parts.append(f"first token {duration(ttft_seconds)}")
    if tokens_per_second is not None:
        rate = f"{tokens_per_second:.1f}" if tokens_per_second < 10 else f"{tokens_per_second:.0f}"
        parts.append(f"{rate} tok/s")
    return " · ".join(parts)


def one_line(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def summarize_arguments(tool: str, arguments: Any, width: int = 70) -> str:
    """One line saying what a call does: its key argument first, then the rest."""
    if isinstance(arguments, str):
        return one_line(arguments, width)  # malformed JSON from the model, shown as is
    if not isinstance(arguments, dict) or not arguments:
        return ""
    if tool == "update_todos":  # agent.events.todos.TOOL_NAME
        # Imported here: the session listing uses this module and must not load the
        # event models (agent.events.todos needs them).
        from agent.events import todos

        items = todos.parse_todos(arguments)
        if items is not None:  # the list itself is drawn from the result
            return one_line(todos.summary(items), width)
    key = _KEY_ARGUMENT.get(tool)
    parts: list[str] = []
    if key and key in arguments:
        parts.append(_value(arguments[key]))
        if tool in _KEY_ONLY:
            return one_line(parts[0], width)
    for name, value in arguments.items():
        if name != key and value not in (None, False, ""):
            parts.append(f"{name}={_value(value)}")
    return one_line(" ".join(parts), width)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def preview(text: str | None, lines: int = 3, width: int = 100) -> list[str]:
    """The first few non-empty lines of a result, each cut to ``width``."""
    if not text:
        return []
    shown: list[str] = []
    for line in text.splitlines():
        if line.strip():
            shown.append(line if len(line) <= width else line[: width - 1] + "…")
        if len(shown) == lines:
            break
    return shown


def diff_body(text: str | None) -> str | None:
    """``text`` without its leading blank lines if it is a unified diff, else ``None``.

    Copilot's edit results start with a newline before ``diff --git``; loopdeck's with
    the ``---`` header or a hunk.
    """
    if not text:
        return None
    body = text.lstrip("\r\n")
    return body if body.startswith(("diff --git", "--- ", "---\t", "@@", "diff ")) else None
