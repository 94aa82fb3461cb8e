"""A sub-agent's run drawn inside the card of the tool call that started it.

Collapsed (the default) the card says who ran, how it ended, how many turns and
tool calls it took, how long, and the start of its answer. Expanded it shows the
run itself: its prompt, each of its turns with their text and tool cards (a run
started by the run is a card there, collapsed in turn).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import RenderableType
from rich.padding import Padding
from rich.text import Text

from agent.transcript.blocks import (
    AbortBlock,
    ErrorBlock,
    NoticeBlock,
    RawBlock,
    Subagent,
    TaskCompleteBlock,
    ToolCallBlock,
    TurnBlock,
    UserBlock,
)
from widgets.format import duration, one_line, preview, tokens
from widgets.lazy_rich import rich_markdown

CardRenderer = Callable[..., RenderableType]  # widgets.tool_card.card_renderable

_STATUS = {
    "running": ("●", "cyan"),
    "completed": ("✓", "green"),
    "failed": ("✗", "red"),
    "cancelled": ("■", "yellow"),
    "interrupted": ("■", "yellow"),
}
_ANSWER_LINES = 2


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_parts(sub: Subagent) -> list[str]:
    """What the collapsed card says of the run (shared with the exports)."""
    parts = [
        sub.status,
        plural(sub.turns, "turn"),
        plural(sub.tool_calls, "tool call"),
        duration(sub.duration),
        sub.model or "",
    ]
    if sub.total_tokens:
        parts.append(f"{tokens(sub.total_tokens)} tokens")
    return [p for p in parts if p]


def summary_text(sub: Subagent) -> Text:
    glyph, style = _STATUS[sub.status]
    text = Text.assemble(("⤷ ", "dim"), (f"{glyph} ", f"bold {style}"), (sub.label, "bold"))
    text.append("  " + " · ".join(summary_parts(sub)), style="dim")
    return text


def answer_of(block: ToolCallBlock, sub: Subagent) -> str | None:
    """The run's outcome as the main agent got it: the call's result, else the
    run's last answer; the error when it failed."""
    if sub.status == "failed" or block.status == "failure":
        return block.error or sub.error
    return block.result or sub.answer


def asked_only(block: ToolCallBlock, sub: Subagent) -> str | None:
    """The prompt the call asked for when the run has none of its own to show (it
    failed before it began): the call's ``prompt`` argument."""
    if sub.prompt is not None or not isinstance(block.arguments, dict):
        return None
    prompt = block.arguments.get("prompt")
    return prompt if isinstance(prompt, str) and prompt.strip() else None


def subagent_parts(
    block: ToolCallBlock, sub: Subagent, *, expanded: bool, card: CardRenderer
) -> list[RenderableType]:
    """The lines under the card's head: the summary, then the answer (collapsed) or
    the run (expanded)."""
    parts: list[RenderableType] = [_indented(summary_text(sub))]
    if expanded:
        asked = asked_only(block, sub)
        if asked:
            prompt = Text.assemble(("prompt: ", "bold"), (asked, "italic"))
            parts.append(_indented(prompt, 4))
        parts += [_indented(part, 4) for part in _run(sub, card)]
        outcome = answer_of(block, sub)
        if outcome and sub.status == "failed":
            parts.append(_indented(Text(outcome, style="red"), 4))
        return parts
    if sub.status == "running":
        latest = _latest(sub)
        if latest:
            parts.append(_indented(Text(latest, style="dim"), 4))
        return parts
    failed = sub.status == "failed" or block.status == "failure"
    outcome = answer_of(block, sub)
    for line in preview(outcome, _ANSWER_LINES, 400 if failed else 100):
        parts.append(_indented(Text(line, style="" if failed else "dim"), 4))
    if sub.transcript.items or asked_only(block, sub):
        what = plural(sub.turns, "turn") if sub.turns else "prompt"
        hint = f"… the run's {what} (enter to expand)"
        parts.append(_indented(Text(hint, style="dim italic"), 4))
    return parts


def _run(sub: Subagent, card: CardRenderer) -> list[RenderableType]:
    """The run's own transcript, compact: prompt, turns with their cards, notes."""
    out: list[RenderableType] = []
    for item in sub.transcript.items:
        match item:
            case UserBlock():
                label = "prompt" if item.content == sub.prompt else "message"
                out.append(Text.assemble((f"{label}: ", "bold"), (item.content, "italic")))
            case TurnBlock():
                out.append(_turn_header(item))
                if item.text.strip():
                    out.append(rich_markdown(item.text))
                out += [_indented(card(tool, expanded=False)) for tool in item.tools]
            case ToolCallBlock():
                out.append(card(item, expanded=False))
            case ErrorBlock():
                out.append(Text(f"✗ {item.error_type}: {item.message}", style="red"))
            case AbortBlock():
                out.append(Text("■ aborted", style="yellow"))
            case TaskCompleteBlock():
                out.append(Text(f"✔ {item.summary or 'task complete'}", style="green"))
            case NoticeBlock():
                out.append(Text(item.message, style="dim italic"))
            case RawBlock():
                out.append(Text(item.type, style="dim"))
    return out


def _turn_header(turn: TurnBlock) -> Text:
    parts = [turn.model or "", duration(turn.duration)]
    if turn.output_tokens:
        parts.append(f"{tokens(turn.output_tokens)} out")
    if turn.status in ("aborted", "error"):
        parts.append(turn.status)
    elif turn.status == "running":
        parts.append("working…")
    text = Text(f"Turn {turn.number}", style="bold")
    shown = [p for p in parts if p]
    if shown:
        text.append("  ·  " + "  ·  ".join(shown), style="dim")
    return text


def _latest(sub: Subagent) -> str | None:
    """One line of what a running run does now: its running call, or its last text."""
    for item in reversed(sub.transcript.items):
        if isinstance(item, TurnBlock):
            running = [tool for tool in item.tools if not tool.finished]
            if running:
                tool = running[-1]
                if tool.permission == "requested":
                    return f"? {tool.name}: waiting for approval"
                return f"● {tool.name}"
            if item.text.strip():
                return one_line(item.text.strip().splitlines()[-1], 100)
    return None


def _indented(renderable: RenderableType, left: int = 2) -> Padding:
    return Padding(renderable, (0, 0, 0, left))
