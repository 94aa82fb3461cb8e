"""``loopdeck export``: a session as a readable Markdown or HTML transcript.

Both formats render the transcript (the same fold the timeline draws), so an
export shows what the timeline shows: turns, tool calls, nudges, the outcome.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from markdown_it import MarkdownIt

from agent.blocks import (
    AbortBlock,
    Block,
    ErrorBlock,
    NoticeBlock,
    RawBlock,
    TaskCompleteBlock,
    ToolCallBlock,
    TurnBlock,
    UserBlock,
)
from agent.store import read_events, with_unreadable_rows
from agent.transcript import Transcript, fold
from widgets.format import LIMIT_CUT_MARK, cost, duration, speed, summarize_arguments, tokens

MAX_OUTPUT_LINES = 40  # in Markdown; HTML keeps the full output in a collapsed block
_BACKTICKS = re.compile(r"`{3,}")
_GLYPH = {"success": "✓", "failure": "✗", "interrupted": "■", "running": "…", "pending": "…"}


def export_session(path: Path, fmt: str) -> str:
    transcript = fold(with_unreadable_rows(read_events(path)), replay=True)
    return to_html(transcript) if fmt == "html" else to_markdown(transcript)


# --- Markdown ------------------------------------------------------------------------


def to_markdown(t: Transcript) -> str:
    out = [f"# Session {t.session_id or ''}".rstrip(), "", *_facts(t), ""]
    for block in t.items:
        out += _md_block(block, t)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _facts(t: Transcript) -> list[str]:
    facts = [
        ("Model", t.model),
        ("Mode", t.mode),
        ("Working directory", t.cwd),
        ("Turns", str(t.turns)),
        ("Tool calls", str(t.tool_calls)),
        ("Tokens", f"{tokens(t.input_tokens) or 0} in / {tokens(t.output_tokens) or 0} out"),
        ("Cost", cost(t.cost)),
    ]
    return [f"- **{name}:** {value}" for name, value in facts if value]


def _md_block(block: Block, t: Transcript) -> list[str]:
    match block:
        case UserBlock(is_nudge=True):
            quoted = f"**↻ Autopilot nudge {block.nudge_number}** — {block.content}"
            return [f"> {line}".rstrip() for line in quoted.splitlines()]
        case UserBlock():
            chips = [" ".join(f"`@{name}`" for name in block.attachments)]
            return ["## User", "", block.content, *(["", *chips] if block.attachments else [])]
        case TurnBlock():
            lines = [f"### {_turn_title(block)}", ""]
            if block.cut_text.strip():
                struck = " ".join(block.cut_text.split()).replace("~", "\\~")
                lines += [f"> *attempt {block.cut_attempt or 1}, cut:* ~~{struck}~~", ""]
            if block.text.strip():
                lines += [block.text.strip(), ""]
            for tool in block.tools:
                lines += _md_tool(tool)
            return lines
        case ToolCallBlock():
            return _md_tool(block)
        case TaskCompleteBlock():
            return ["## ✔ Task complete", "", block.summary or "(no summary)"]
        case ErrorBlock():
            return [f"> **✗ Error ({block.error_type}):** {block.message}", ">", f"> {block.hint}"]
        case AbortBlock():
            return ["> **■ Aborted** — the running turn was stopped."]
        case NoticeBlock():
            return [f"*{block.message}*"]
        case RawBlock():
            data = json.dumps(block.data, ensure_ascii=False)
            shown = data if len(data) <= 200 else data[:199] + "…"
            return [f"`{block.type}` `{shown}`"]
    return []


def _turn_title(block: TurnBlock) -> str:
    parts = [f"Turn {block.number}", block.model or "", duration(block.duration)]
    usage = [
        f"{tokens(count)} {what}"
        for count, what in ((block.input_tokens, "in"), (block.output_tokens, "out"))
        if count
    ]
    parts += [
        " / ".join(usage),
        cost(block.cost),
        speed(block.ttft_seconds, block.tokens_per_second),
    ]
    if block.retries:
        parts.append(f"{block.retries} retr{'y' if block.retries == 1 else 'ies'}")
    if block.status in ("aborted", "error"):
        parts.append(block.status)
    if block.cut_at_limit:
        parts.append(LIMIT_CUT_MARK)
    return " · ".join(p for p in parts if p)


def _md_tool(tool: ToolCallBlock) -> list[str]:
    head = f"- {_GLYPH.get(tool.status, '?')} **{tool.name}** `{_args(tool)}`"
    if tool.duration is not None:
        head += f" · {duration(tool.duration)}"
    body = tool.detailed_content or tool.result or tool.error or ""
    if not body.strip():
        return [head]
    lines = body.rstrip().splitlines()
    if len(lines) > MAX_OUTPUT_LINES:
        lines = [*lines[:MAX_OUTPUT_LINES], f"… {len(lines) - MAX_OUTPUT_LINES} more lines"]
    # Longer than any run of backticks in the output, so a fence in it (a viewed
    # Markdown file) cannot close this one.
    ticks = "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(body)), default=0))
    fence = ticks + ("diff" if body.startswith(("---", "@@", "diff ")) else "")
    return [head, "", "  " + fence, *("  " + line for line in lines), "  " + ticks, ""]


def _args(tool: ToolCallBlock) -> str:
    return summarize_arguments(tool.name, tool.arguments, width=100).replace("`", "'")


# --- HTML ---------------------------------------------------------------------------

_CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:860px;margin:2em auto;padding:0 1em;
color:#1f2328}
h1{font-size:1.4em} .facts{color:#57606a} .user{border-left:4px solid #0969da;padding:.2em .8em}
.nudge{border-left:4px solid #bf8700;background:#fff8c5;padding:.2em .8em}
.user,.nudge{white-space:pre-wrap}
.turn{border-left:2px solid #d0d7de;padding:.1em .8em;margin:1em 0}
.turn h3{font-size:.95em;color:#57606a;margin:.2em 0}
details{margin:.3em 0} summary{cursor:pointer;font-family:ui-monospace,monospace;font-size:.9em}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em}
.ok{color:#1a7f37} .fail{color:#cf222e}
.done{border:2px solid #1a7f37;border-radius:6px;padding:.2em 1em}
.error{border:2px solid #cf222e;border-radius:6px;padding:.2em 1em}
.notice{color:#57606a;font-style:italic} .cut{color:#57606a;white-space:pre-wrap}
"""


def to_html(t: Transcript) -> str:
    md = MarkdownIt("commonmark", {"html": False})
    title = html.escape(f"loopdeck session {t.session_id or ''}")
    parts = [
        "<!doctype html>",
        f'<html><head><meta charset="utf-8"><title>{title}</title><style>{_CSS}</style></head>',
        f"<body><h1>{title}</h1>",
        '<ul class="facts">'
        + "".join(f"<li>{md.renderInline(f[2:])}</li>" for f in _facts(t))
        + "</ul>",
    ]
    for block in t.items:
        parts.append(_html_block(block, md))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_block(block: Block, md: MarkdownIt) -> str:
    esc = html.escape
    match block:
        case UserBlock(is_nudge=True):
            label = f"↻ Autopilot nudge {block.nudge_number}"
            return f'<div class="nudge"><b>{label}</b> — {esc(block.content)}</div>'
        case UserBlock():
            chips = "".join(f'<span class="chip">@{esc(a)}</span> ' for a in block.attachments)
            chips = f"<br>{chips}" if chips else ""
            return f'<div class="user"><b>User</b><br>{esc(block.content)}{chips}</div>'
        case TurnBlock():
            tools = "".join(_html_tool(tool) for tool in block.tools)
            cut = (
                f'<p class="cut"><i>attempt {block.cut_attempt or 1}, cut:</i> '
                f"<del>{esc(block.cut_text.strip())}</del></p>"
                if block.cut_text.strip()
                else ""
            )
            return (
                f'<div class="turn"><h3>{esc(_turn_title(block))}</h3>{cut}'
                f"{md.render(block.text) if block.text.strip() else ''}{tools}</div>"
            )
        case ToolCallBlock():
            return _html_tool(block)
        case TaskCompleteBlock():
            return (
                f'<div class="done"><h2>✔ Task complete</h2>{md.render(block.summary or "")}</div>'
            )
        case ErrorBlock():
            return (
                f'<div class="error"><b>✗ Error ({esc(block.error_type)})</b> {esc(block.message)}'
                f"<br><i>{esc(block.hint)}</i></div>"
            )
        case AbortBlock():
            return '<p class="notice">■ Aborted — the running turn was stopped.</p>'
        case NoticeBlock():
            return f'<p class="notice">{esc(block.message)}</p>'
        case RawBlock():
            data = esc(json.dumps(block.data, ensure_ascii=False))
            return f'<p class="notice"><code>{esc(block.type)}</code> <code>{data}</code></p>'
    return ""


def _html_tool(tool: ToolCallBlock) -> str:
    esc = html.escape
    css = "ok" if tool.status == "success" else "fail"
    took = f" · {duration(tool.duration)}" if tool.duration is not None else ""
    summary = (
        f'<span class="{css}">{_GLYPH.get(tool.status, "?")}</span> '
        f"<b>{esc(tool.name)}</b> {esc(_args(tool))}{took}"
    )
    body = tool.detailed_content or tool.result or tool.error or ""
    return f"<details><summary>{summary}</summary><pre>{esc(body)}</pre></details>"
