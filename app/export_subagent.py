"""A sub-agent's run in the exports, under the tool call that started it.

As in the timeline, the run is collapsed by default: its summary line is always
shown (who ran, how it ended, turns, tool calls, duration), the run itself — its
prompt, turns and tool calls — sits in a ``<details>`` block (which GitHub and
browsers show closed). The call's own output (the run's answer) follows as for any
tool call.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from functools import cache

from markdown_it import MarkdownIt

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
from widgets.subagent_view import asked_only, plural, summary_parts

ToolLines = Callable[[ToolCallBlock], list[str]]
ToolHtml = Callable[[ToolCallBlock], str]
TurnTitle = Callable[[TurnBlock], str]

_GLYPH = {"running": "…", "completed": "✓", "failed": "✗", "cancelled": "■", "interrupted": "■"}
_RUN_STYLE = "border-left:2px dashed #8250df;padding:.1em .8em;margin:.4em 0"


def summary_line(sub: Subagent) -> str:
    return f"⤷ {_GLYPH[sub.status]} {sub.label} — {' · '.join(summary_parts(sub))}"


def _what(sub: Subagent) -> str:
    return f"the run: {plural(sub.turns, 'turn')}, {plural(sub.tool_calls, 'tool call')}"


# --- Markdown ------------------------------------------------------------------------


def _error(tool: ToolCallBlock, sub: Subagent) -> str | None:
    """The run's error, unless the call's output (shown anyway) already says it."""
    return sub.error if sub.error and sub.error != tool.error else None


def subagent_markdown(
    tool: ToolCallBlock, tool_lines: ToolLines, turn_title: TurnTitle
) -> list[str]:
    """Lines to put under the call's head line (indented into its list item)."""
    sub = tool.subagent
    if sub is None:
        return []
    head = summary_line(sub).replace(sub.label, f"**{sub.label}**", 1)
    lines = ["", head]
    error = _error(tool, sub)
    if error:
        lines += ["", f"**Error:** {error}"]
    asked = asked_only(tool, sub)
    run = [f"**Prompt:** {asked.strip()}", ""] if asked else []
    run += _md_run(sub, tool_lines, turn_title)
    if run:
        lines += ["", f"<details><summary>{html.escape(_what(sub))}</summary>", "", *run]
        lines += ["", "</details>"]
    return [f"  {line}".rstrip() for line in lines]


def _md_run(sub: Subagent, tool_lines: ToolLines, turn_title: TurnTitle) -> list[str]:
    out: list[str] = []
    for item in sub.transcript.items:
        match item:
            case UserBlock():
                label = "Prompt" if item.content == sub.prompt else "Message"
                out += [f"**{label}:** {item.content.strip()}", ""]
            case TurnBlock():
                out += [f"#### {turn_title(item)}", ""]
                if item.text.strip():
                    out += [item.text.strip(), ""]
                for tool in item.tools:
                    out += tool_lines(tool)
            case ToolCallBlock():
                out += tool_lines(item)
            case ErrorBlock():
                out += [f"**✗ Error ({item.error_type}):** {item.message}", ""]
            case AbortBlock():
                out += ["**■ Aborted**", ""]
            case TaskCompleteBlock():
                out += [f"**✔ Task complete:** {item.summary or ''}".rstrip(), ""]
            case NoticeBlock():
                out += [f"*{item.message}*", ""]
            case RawBlock():
                out += [f"`{item.type}`", ""]
    while out and not out[-1]:
        out.pop()
    return out


# --- HTML ----------------------------------------------------------------------------


@cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False})


def subagent_summary_html(sub: Subagent) -> str:
    """The run's summary, shown on the call's (closed) ``<summary>`` line."""
    css = "ok" if sub.status == "completed" else "fail"
    return f'<br><span class="{css}">{html.escape(summary_line(sub))}</span>'


def subagent_html(tool: ToolCallBlock, tool_html: ToolHtml, turn_title: TurnTitle) -> str:
    """The run itself, inside the call's ``<details>``."""
    sub = tool.subagent
    if sub is None:
        return ""
    esc = html.escape
    md = _markdown()
    parts: list[str] = []
    error = _error(tool, sub)
    if error:
        parts.append(f'<p class="fail"><b>Error:</b> {esc(error)}</p>')
    asked = asked_only(tool, sub)
    if asked:
        parts.append(f'<div class="user"><b>Prompt</b><br>{esc(asked)}</div>')
    for item in sub.transcript.items:
        match item:
            case UserBlock():
                label = "Prompt" if item.content == sub.prompt else "Message"
                parts.append(f'<div class="user"><b>{label}</b><br>{esc(item.content)}</div>')
            case TurnBlock():
                text = md.render(item.text) if item.text.strip() else ""
                tools = "".join(tool_html(tool) for tool in item.tools)
                parts.append(
                    f'<div class="turn"><h4>{esc(turn_title(item))}</h4>{text}{tools}</div>'
                )
            case ToolCallBlock():
                parts.append(tool_html(item))
            case ErrorBlock():
                parts.append(f'<p class="fail">✗ {esc(item.error_type)}: {esc(item.message)}</p>')
            case AbortBlock():
                parts.append('<p class="notice">■ Aborted</p>')
            case TaskCompleteBlock():
                parts.append(f'<p class="ok">✔ {esc(item.summary or "Task complete")}</p>')
            case NoticeBlock():
                parts.append(f'<p class="notice">{esc(item.message)}</p>')
            case RawBlock():
                parts.append(f'<p class="notice"><code>{esc(item.type)}</code></p>')
    return f'<div class="subagent" style="{_RUN_STYLE}">{"".join(parts)}</div>'
