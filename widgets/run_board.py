"""The board of runs (``loopdeck runs``): two lines per run, drawn from its row.

The first line says which run and how it stands (state, title or first prompt,
workspace, mode, model, elapsed time); the second what it is doing (the tool
running and for how long, turns, nudges of the cap, tokens and cost, context
used, the last line of text). Narrow terminals drop the less telling cells first.
Draws nothing but what it is given: the rows come from :class:`agent.log.runs.RunBoard`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text

from agent.log.run_fold import (
    ASKING,
    DONE,
    ENDED,
    FAILED,
    IDLE,
    INTERRUPTED,
    NEEDS_PERSON,
    RUNNING,
    THINKING,
    TOOL,
    WAITING,
)
from agent.log.runs import RunView
from widgets.format import cost, duration, tokens

LINES_PER_RUN = 2
_STATE_WIDTH = 22
_MARK = {True: "◆", False: " "}
_ICONS = {
    WAITING: ("⚠", "bold black on yellow"),
    ASKING: ("?", "bold black on yellow"),
    FAILED: ("✗", "bold red"),
    INTERRUPTED: ("✗", "magenta"),
    TOOL: ("⚙", "bold cyan"),
    THINKING: ("●", "bold green"),
    IDLE: ("○", "dim"),
    DONE: ("✓", "green"),
}


def board_title(views: Sequence[RunView]) -> str:
    """The count that matters first: runs waiting for a person, then the rest."""
    waiting = sum(1 for v in views if v.state in NEEDS_PERSON)
    running = sum(1 for v in views if v.state in RUNNING)
    failed = sum(1 for v in views if v.state in (FAILED, INTERRUPTED))
    parts = []
    if waiting:
        parts.append(f"⚠ {waiting} waiting for approval")
    parts.append(f"{running} running")
    if failed:
        parts.append(f"{failed} failed or interrupted")
    parts.append(f"{len(views)} run" if len(views) == 1 else f"{len(views)} runs")
    return " · ".join(parts)


def terminal_title(views: Sequence[RunView]) -> str:
    """The terminal window's title: what waits for a person, first."""
    waiting = sum(1 for v in views if v.state in NEEDS_PERSON)
    running = sum(1 for v in views if v.state in RUNNING)
    lead = f"⚠ {waiting} waiting · " if waiting else ""
    return f"{lead}{running} running · loopdeck runs"


def header(views: Sequence[RunView], width: int) -> Text:
    waiting = any(v.state in NEEDS_PERSON for v in views)
    text = Text("loopdeck runs  ", style="bold")
    text.append(board_title(views), style="bold black on yellow" if waiting else "bold")
    text.truncate(width, overflow="ellipsis")
    return text


def run_lines(
    view: RunView, *, width: int, now: float, cursor: bool, marked: bool
) -> tuple[Text, Text]:
    """The two lines of one run."""
    row = view.row
    icon, style = _ICONS.get(view.state, ("·", ""))
    alive_unknown = view.writer_alive is None and view.state not in ENDED
    state = view.state + ("?" if alive_unknown else "")
    first = Text()
    first.append("▶" if cursor else " ", style="bold")
    first.append(_MARK[marked], style="bold magenta")
    first.append(f"{icon} ", style=style)
    first.append(_pad(state, _STATE_WIDTH - 2), style=style)
    cells = _first_cells(view, width)
    # marks, icon and state; a space before the title; the elapsed time
    used = _STATE_WIDTH + 11 + sum(cell_len(c) + 1 for c, _ in cells)
    title = (f"[{view.source}] " if view.read_only else "") + (row.label or "(no prompt yet)")
    room = max(8, width - used)
    first.append(" ")
    first.append(_pad(title, room), style="bold" if cursor else "")
    for cell, cell_style in cells:
        first.append(" ")
        first.append(cell, style=cell_style)
    elapsed = _elapsed(view, now)
    if elapsed:
        first.append(" ")
        first.append(elapsed.rjust(7), style="dim")
    first.truncate(width, overflow="ellipsis")
    second = Text("    ")
    second.append(_doing(view, now), style="dim")
    if row.last_text:
        second.append(" │ ", style="dim")
        second.append(row.last_text.replace("\n", " "), style="italic")
    second.truncate(width, overflow="ellipsis")
    if cursor:
        first.stylize("reverse", 0, 1)
    return first, second


def board_text(
    views: Sequence[RunView],
    *,
    width: int,
    height: int,
    now: float,
    cursor: int,
    marked: set[str],
) -> Text:
    """The whole board: header, the runs that fit (the cursor's kept in view), keys."""
    out = Text()
    out.append_text(header(views, width))
    out.append("\n")
    if not views:
        out.append("\nNo runs on this machine in the last day.\n", style="dim")
        out.append('Start one with: loopdeck -p "…" --autopilot\n', style="dim")
    room = max(1, (height - 3) // LINES_PER_RUN)
    top = max(0, min(cursor - room + 1, len(views) - room)) if cursor >= room else 0
    for index, view in enumerate(views[top : top + room], start=top):
        first, second = run_lines(
            view,
            width=width,
            now=now,
            cursor=index == cursor,
            marked=view.session_id in marked,
        )
        out.append_text(first)
        out.append("\n")
        out.append_text(second)
        out.append("\n")
    hidden = len(views) - min(len(views), top + room)
    if hidden > 0:
        out.append(f"  … {hidden} more below\n", style="dim")
    out.append(
        "↑/↓ move · enter open · space mark (up to 4, then enter: side by side) · q quit",
        style="dim",
    )
    return out


def _first_cells(view: RunView, width: int) -> list[tuple[str, str]]:
    row = view.row
    cells: list[tuple[str, str]] = [(_pad(_workspace(row.cwd), 16), "cyan")]
    if width >= 100:
        cells.append((_pad(row.mode, 11), "magenta" if row.mode == "autopilot" else ""))
    if width >= 110:
        cells.append((_pad(_model(row.model), 18), "dim"))
    if width < 90:
        cells[0] = (_pad(_workspace(row.cwd), 12), "cyan")
    return cells


def _doing(view: RunView, now: float) -> str:
    row = view.row
    parts: list[str] = []
    tool = row.current_tool()
    if tool is not None and view.state not in ENDED:
        running = duration(now - tool.started) if tool.started is not None else ""
        parts.append(f"⚙ {tool.name} {running}".rstrip())
    parts.append(f"turn {row.turns}")
    if row.mode == "autopilot" or row.nudges:
        cap = f"/{row.nudge_cap}" if row.nudge_cap is not None else ""
        parts.append(f"nudges {row.nudges}{cap}")
    used = tokens(row.input_tokens + row.output_tokens)
    if used:
        parts.append(f"{used} tok")
    spent = cost(row.cost)
    if spent:
        parts.append(spent)
    percent = row.context_percent
    if percent is not None:
        parts.append(f"ctx {percent}%")
    return " · ".join(parts)


def _elapsed(view: RunView, now: float) -> str:
    row = view.row
    if row.started is None:
        return ""
    end = row.updated if view.state in ENDED or view.state == IDLE else now
    return duration(max(0.0, (end or now) - row.started))


def _workspace(cwd: str) -> str:
    if not cwd:
        return "?"
    home = os.path.expanduser("~")
    if cwd == home:
        return "~"
    return os.path.basename(cwd.rstrip("/")) or cwd


def _model(model: str) -> str:
    if model.startswith("scripted:"):
        name = os.path.basename(model[len("scripted:") :])
        return "scripted:" + name.removesuffix(".json")
    return model


def _pad(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    if cell_len(text) > width:
        out = ""
        for char in text:
            if cell_len(out + char) > width - 1:
                break
            out += char
        return out + "…" + " " * (width - cell_len(out) - 1)
    return text + " " * (width - cell_len(text))
