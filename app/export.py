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

from agent.log.lock import in_use_by
from agent.log.store import read_events, with_unreadable_rows
from agent.transcript.blocks import (
    AbortBlock,
    Block,
    ErrorBlock,
    InfoRowBlock,
    NoticeBlock,
    PlanBlock,
    RawBlock,
    ShellBlock,
    TaskCompleteBlock,
    ToolCallBlock,
    TurnBlock,
    UserBlock,
)
from agent.transcript.fold import Transcript, fold
from agent.transcript.plan_review import outcome_text
from agent.transcript.stream_fold import run_facts
from app.export_shell import html_shell, md_shell
from app.export_subagent import subagent_html, subagent_markdown, subagent_summary_html
from widgets.format import (
    LIMIT_CUT_MARK,
    abort_reason,
    cost,
    diff_body,
    duration,
    speed,
    summarize_arguments,
    tokens,
)
from widgets.info_row import cut_lines, info_glyph

MAX_OUTPUT_LINES = 40  # in Markdown; HTML keeps the full output in a collapsed block
# Raw events and the detail of info rows (a system prompt is ~40 KB) are cut in both
# formats: an export is for reading the conversation, the log keeps everything.
MAX_RAW_CHARS = 200
MAX_INFO_CHARS = 4000
# The system prompt is the same long text in every Copilot log: its start says which.
MAX_INFO_LINES = {"system": 12}
_BACKTICKS = re.compile(r"`{3,}")
_GLYPH = {"success": "✓", "failure": "✗", "interrupted": "■", "running": "…", "pending": "…"}


def format_for(target: Path | None) -> str:
    """The format a file's name asks for: html for .html/.htm, else md (``/export``
    and ``loopdeck export -o``)."""
    return "html" if target is not None and target.suffix.lower() in (".html", ".htm") else "md"


def export_session(path: Path, fmt: str) -> str:
    # A log no live loopdeck process writes is complete: what it left open is over.
    finished = in_use_by(path.parent) is None
    transcript = fold(with_unreadable_rows(read_events(path)), replay=True, finished=finished)
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
        ("Model", t.model_label),
        ("Mode", t.mode),
        ("Working directory", t.cwd),
        ("Turns", str(t.turns)),
        ("Tool calls", str(t.tool_calls)),
        ("Tokens", f"{tokens(t.input_tokens) or 0} in / {tokens(t.output_tokens) or 0} out"),
        ("Cost", cost(t.cost)),
        *run_facts(t.stream.result),  # the `result` line of a `copilot -p` JSON stream
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
            if block.reasoning.strip():
                lines += [
                    "<details><summary>∴ thinking</summary>",
                    "",
                    *(f"> {line}".rstrip() for line in block.reasoning.strip().splitlines()),
                    "",
                    "</details>",
                    "",
                ]
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
        case ShellBlock():
            return md_shell(block)
        case TaskCompleteBlock():
            return ["## ✔ Task complete", "", block.summary or "(no summary)"]
        case ErrorBlock():
            return [f"> **✗ Error ({block.error_type}):** {block.message}", ">", f"> {block.hint}"]
        case AbortBlock():
            return [f"> **■ Aborted** — {abort_reason(block.reason)}"]
        case NoticeBlock():
            return [f"*{block.message}*"]
        case PlanBlock():
            said = f" — “{block.feedback}”" if block.feedback else ""
            return [
                f"## ☰ Plan: {block.summary}",
                "",
                block.plan.strip(),
                "",
                f"*{outcome_text(block)}{said}*",
            ]
        case InfoRowBlock():
            head = f"*{info_glyph(block)} {_md_escape(block.title)}*"
            if not block.body:
                return [head]
            body = _info_body(block)
            ticks = _fence_for(body)
            return [
                f"<details><summary>{html.escape(info_glyph(block) + ' ' + block.title)}</summary>",
                "",
                ticks + "text",
                *body.splitlines(),
                ticks,
                "",
                "</details>",
            ]
        case RawBlock():
            return [f"`{block.type}` `{_raw_line(block)}`"]
    return []


def _raw_line(block: RawBlock) -> str:
    data = json.dumps(block.data, ensure_ascii=False)
    return data if len(data) <= MAX_RAW_CHARS else data[: MAX_RAW_CHARS - 1] + "…"


def _info_body(block: InfoRowBlock) -> str:
    body = block.body or ""
    cut = cut_lines(body, MAX_INFO_LINES.get(block.kind, MAX_OUTPUT_LINES))
    if len(cut) > MAX_INFO_CHARS:
        cut = cut[:MAX_INFO_CHARS] + f"\n… {len(body) - MAX_INFO_CHARS:,} more characters"
    return cut


def _md_escape(text: str) -> str:
    return re.sub(r"([*_`\\<>\[\]])", r"\\\1", text)


def _fence_for(body: str) -> str:
    """Longer than any run of backticks in ``body``, so one in it (a viewed Markdown
    file) cannot close the fence."""
    return "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(body)), default=0))


def _turn_title(block: TurnBlock) -> str:
    parts = [f"Turn {block.number}", block.model_label, duration(block.duration)]
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
    run = subagent_markdown(tool, _md_tool, _turn_title)
    body = tool.detailed_content or tool.result or tool.error or ""
    if not body.strip():
        return [head, *run, ""] if run else [head]
    diff = diff_body(body)
    lines = (diff or body).rstrip().splitlines()
    if len(lines) > MAX_OUTPUT_LINES:
        lines = [*lines[:MAX_OUTPUT_LINES], f"… {len(lines) - MAX_OUTPUT_LINES} more lines"]
    ticks = _fence_for(body)
    fence = ticks + ("diff" if diff else "")
    return [head, *run, "", "  " + fence, *("  " + line for line in lines), "  " + ticks, ""]


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
.plan{border:2px solid #0969da;border-radius:6px;padding:.2em 1em}
.error{border:2px solid #cf222e;border-radius:6px;padding:.2em 1em}
.notice{color:#57606a;font-style:italic} .cut{color:#57606a;white-space:pre-wrap}
.shell{border-left:4px solid #57606a;padding:.2em .8em}
.info summary,.raw summary{color:#57606a;font-family:inherit;font-size:.9em}
.thinking{color:#57606a;white-space:pre-wrap;font-style:italic}
.diff .add{color:#1a7f37} .diff .del{color:#cf222e} .diff .hunk{color:#8250df}
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
            thinking = (
                '<details class="thinking"><summary>∴ thinking</summary>'
                f"{esc(block.reasoning.strip())}</details>"
                if block.reasoning.strip()
                else ""
            )
            return (
                f'<div class="turn"><h3>{esc(_turn_title(block))}</h3>{thinking}{cut}'
                f"{md.render(block.text) if block.text.strip() else ''}{tools}</div>"
            )
        case ToolCallBlock():
            return _html_tool(block)
        case ShellBlock():
            return html_shell(block)
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
            return f'<p class="notice">■ Aborted — {esc(abort_reason(block.reason))}</p>'
        case NoticeBlock():
            return f'<p class="notice">{esc(block.message)}</p>'
        case PlanBlock():
            said = f" — “{esc(block.feedback)}”" if block.feedback else ""
            return (
                f'<div class="plan"><h2>☰ Plan: {esc(block.summary)}</h2>{md.render(block.plan)}'
                f"<p><i>{esc(outcome_text(block))}{said}</i></p></div>"
            )
        case InfoRowBlock():
            title = esc(f"{info_glyph(block)} {block.title}")
            if not block.body:
                return f'<p class="notice">{title}</p>'
            body = esc(_info_body(block))
            return f'<details class="info"><summary>{title}</summary><pre>{body}</pre></details>'
        case RawBlock():
            return (
                f'<details class="raw"><summary><code>{esc(block.type)}</code></summary>'
                f"<code>{esc(_raw_line(block))}</code></details>"
            )
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
    run = ""
    if tool.subagent is not None:
        summary += subagent_summary_html(tool.subagent)
        run = subagent_html(tool, _html_tool, _turn_title)
    diff = diff_body(body)
    if diff:
        shown = _diff_html(diff)
        return (
            f'<details><summary>{summary}</summary>{run}<pre class="diff">{shown}</pre></details>'
        )
    return f"<details><summary>{summary}</summary>{run}<pre>{esc(body)}</pre></details>"


def _diff_html(diff: str) -> str:
    """A diff's lines, each coloured by what it does (added, removed, a hunk)."""
    out = []
    for line in diff.rstrip("\n").split("\n"):
        css = ""
        if line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+") and not line.startswith("+++"):
            css = "add"
        elif line.startswith("-") and not line.startswith("---"):
            css = "del"
        text = html.escape(line)
        out.append(f'<span class="{css}">{text}</span>' if css else text)
    return "\n".join(out)
