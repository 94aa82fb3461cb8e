"""A user's own shell command (``!cmd``) in the Markdown and HTML exports."""

from __future__ import annotations

import html
import re

from agent.transcript.blocks import ShellBlock
from widgets.format import duration

_BACKTICKS = re.compile(r"`{3,}")
_GLYPH = {"success": "✓", "failure": "✗", "interrupted": "■", "running": "…", "pending": "…"}
MAX_OUTPUT_LINES = 40


def _output(block: ShellBlock) -> str:
    if block.status == "success":
        return block.output or ""
    return block.error or block.output or ""


def _title(block: ShellBlock) -> str:
    parts = [_GLYPH.get(block.status, "?"), duration(block.duration)]
    if block.status == "interrupted":
        parts.append("interrupted")
    return " · ".join(p for p in parts if p)


def md_shell(block: ShellBlock) -> list[str]:
    body = _output(block)
    ticks = "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(body)), default=0))
    # The command in a code span that no backtick run in it can close.
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", block.command)), default=0))
    lines = [f"**Shell** {fence} $ {block.command} {fence} · {_title(block)}"]
    out = body.rstrip().splitlines()
    if out:
        if len(out) > MAX_OUTPUT_LINES:
            out = [*out[:MAX_OUTPUT_LINES], f"… {len(out) - MAX_OUTPUT_LINES} more lines"]
        lines += ["", ticks, *out, ticks]
    return lines


def html_shell(block: ShellBlock) -> str:
    esc = html.escape
    head = f"<b>Shell</b> <code>$ {esc(block.command)}</code> {esc(_title(block))}"
    body = _output(block)
    out = f"<pre>{esc(body)}</pre>" if body.strip() else ""
    return f'<div class="shell">{head}{out}</div>'
