"""``loopdeck sessions``: the recorded sessions as a plain, pipe-friendly table."""

from __future__ import annotations

import shutil
import sys
from datetime import datetime
from pathlib import Path

from agent.store import SessionStore, SessionSummary, loopdeck_home

_HEADERS = ("ID", "STARTED", "CWD", "MODE", "TURNS", "FIRST PROMPT")


def print_sessions(cwd: Path | None, show_all: bool) -> int:
    store = SessionStore(loopdeck_home())
    sessions = store.list_sessions()
    here = [s for s in sessions if cwd is not None and s.cwd == str(cwd)]
    shown = sessions if show_all or not here else here
    out = sys.stdout
    if not shown:
        out.write(f'No sessions yet in {store.root}.\nStart one with: loopdeck -p "…"\n')
        return 0
    width = shutil.get_terminal_size((120, 24)).columns
    for line in format_table([_row(s) for s in shown], width):
        out.write(line.rstrip() + "\n")
    if len(shown) < len(sessions):
        out.write(f"\n{len(sessions) - len(shown)} more elsewhere: loopdeck sessions --all\n")
    out.write("\nResume one with: loopdeck --resume ID\n")
    return 0


def _row(s: SessionSummary) -> tuple[str, ...]:
    prompt = s.first_prompt.strip().split("\n")[0]
    return (s.id[:8], _local(s.started), _home_relative(s.cwd), s.mode, str(s.turns), prompt)


def format_table(rows: list[tuple[str, ...]], width: int) -> list[str]:
    """Columns sized to content; the cwd and the prompt are cut to fit ``width``."""
    widths = [max(len(r[i]) for r in [_HEADERS, *rows]) for i in range(len(_HEADERS))]
    widths[2] = min(widths[2], 30)
    fixed = sum(widths[:5]) + 2 * 5
    widths[5] = max(12, min(widths[5], width - fixed))
    lines = []
    for row in [_HEADERS, *rows]:
        cells = [
            _fit(cell, w).rjust(w) if i == 4 else _fit(cell, w, keep_end=i == 2).ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells))
    return lines


def _fit(text: str, width: int, *, keep_end: bool = False) -> str:
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1) :] if keep_end else text[: width - 1] + "…"


def _home_relative(cwd: str) -> str:
    home = str(Path.home())
    return "~" + cwd[len(home) :] if cwd == home or cwd.startswith(home + "/") else cwd


def _local(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp
