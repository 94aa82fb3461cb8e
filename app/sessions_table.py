"""``loopdeck sessions``: the recorded sessions as a plain, pipe-friendly table."""

from __future__ import annotations

import os
import shutil
import sys
from datetime import datetime
from pathlib import Path

from agent.log.lock import in_use_by
from agent.log.places import copilot_home, loopdeck_home
from agent.log.session_row import SessionSummary
from agent.log.store import SessionStore
from widgets.format import cost, duration, tokens

_HEADERS = (
    "ID",
    "STARTED",
    "CWD",
    "MODEL",
    "MODE",
    "TURNS",
    "TOOLS",
    "OUTCOME",
    "TOOK",
    "IN",
    "OUT",
    "COST",
    "FIRST PROMPT",
)
_RIGHT = {"TURNS", "TOOLS", "TOOK", "IN", "OUT", "COST"}
_KEEP_END = {"CWD"}  # a path's end says more than its start
_CAPS = {"CWD": 30, "MODEL": 18}
# What a narrow terminal leaves out first, so that the first prompt (what says which
# session it is) keeps PROMPT_ROOM characters.
_DROPPED_FIRST = ("TOOLS", "OUT", "COST", "TURNS", "IN", "TOOK", "MODE", "CWD")
PROMPT_ROOM = 24
MODEL_WIDTH = 18


def sessions_for(
    store: SessionStore, cwd: Path | None, *, show_all: bool = False, search: str = ""
) -> tuple[list[SessionSummary], int]:
    """This workspace's sessions first (all of them with ``show_all``), filtered by
    ``search`` in the title (``/rename``) or first prompt. Returns (shown, how many
    others exist)."""
    sessions = store.list_sessions()
    if search:
        needle = search.lower()
        sessions = [
            s for s in sessions if needle in s.first_prompt.lower() or needle in s.title.lower()
        ]
    here = [s for s in sessions if cwd is not None and s.cwd == str(cwd)]
    if show_all:
        elsewhere = [s for s in sessions if s not in here]
        return here + elsewhere, 0
    shown = here or sessions
    return shown, len(sessions) - len(shown)


def print_sessions(
    cwd: Path | None, show_all: bool, *, copilot: bool = False, search: str = ""
) -> int:
    store = SessionStore(copilot_home() if copilot else loopdeck_home())
    if copilot:
        from agent.log.listing_cache import ListingCache

        # In loopdeck's home: Copilot's folders are only ever read.
        store.listing_cache = ListingCache(loopdeck_home() / "cache" / "copilot-listing.json")
    shown, others = sessions_for(store, cwd, show_all=show_all, search=search)
    out = sys.stdout
    if not shown:
        hint = "" if copilot else '\nStart one with: loopdeck -p "…"'
        out.write(f"No sessions yet in {store.root}.{hint}\n")
        return 0
    width = shutil.get_terminal_size((140, 24)).columns
    # A pipe gets every column and the whole prompt (a reader may cut them); a
    # terminal, what fits it.
    for line in format_table([_row(s) for s in shown], width, narrow=out.isatty()):
        out.write(line.rstrip() + "\n")
    if others:
        listing = "loopdeck sessions --copilot --all" if copilot else "loopdeck sessions --all"
        out.write(f"\n{others} more elsewhere: {listing}\n")
    if copilot:
        # Resuming one forks it: Copilot's own files are only ever read.
        out.write(
            "\nContinue one in loopdeck, as a new session (Copilot's files are left as they "
            "are): loopdeck --resume ID\nReplay: loopdeck replay ID   Export: loopdeck export ID\n"
        )
    else:
        out.write("\nResume: loopdeck --resume ID   Replay: loopdeck replay ID\n")
    return 0


def _row(s: SessionSummary) -> tuple[str, ...]:
    prompt = origin_prefix(s) + (s.title or s.first_prompt).strip().split("\n")[0]
    return (
        s.id[:8],
        _local(s.started),
        _home_relative(s.cwd),
        model_label(s.model),
        s.mode,
        str(s.turns),
        str(s.tool_calls),
        outcome_cell(s),
        duration(s.duration),
        *usage_cells(s),
        prompt,
    )


def origin_prefix(s: SessionSummary) -> str:
    """``⑂ copilot 6a23e131: `` before the first prompt of a fork (agent/log/fork.py)."""
    return f"⑂ {s.origin}: " if s.origin else ""


def outcome_cell(s: SessionSummary) -> str:
    """The outcome, and whether a live process has the session open (read from its
    lock file's details; a listing never takes the lock)."""
    holder = in_use_by(s.path.parent)
    if holder is None:
        return s.outcome
    if holder.pid == os.getpid():
        return f"{s.outcome} (open here)"
    return f"{s.outcome} (in use, pid {holder.pid})"


def usage_cells(s: SessionSummary) -> tuple[str, str, str]:
    """Input tokens, output tokens and cost, as the timeline's status bar counts them."""
    return tokens(s.input_tokens) or "0", tokens(s.output_tokens) or "0", cost(s.cost) or "-"


def model_label(model: str) -> str:
    """The model's own name, without the provider path (``claude-sonnet-4-5``)."""
    name = model.rsplit("/", 1)[-1] or "?"
    return name if len(name) <= MODEL_WIDTH else name[: MODEL_WIDTH - 1] + "…"


def format_table(rows: list[tuple[str, ...]], width: int, *, narrow: bool = True) -> list[str]:
    """Columns sized to content. For a terminal (``narrow``), what fits ``width``: the
    least telling columns are left out first (_DROPPED_FIRST), then the prompt is cut;
    a pipe gets every column and the whole first line of the prompt."""
    table = [_HEADERS, *rows]
    natural = {
        name: min(max(len(r[i]) for r in table), _CAPS.get(name, 1 << 30))
        for i, name in enumerate(_HEADERS)
    }
    kept = list(_HEADERS[:-1])

    def used() -> int:
        return sum(natural[name] for name in kept) + 2 * len(kept)

    room = min(PROMPT_ROOM, natural["FIRST PROMPT"])
    for name in _DROPPED_FIRST if narrow else ():
        if used() + room <= width:
            break
        kept.remove(name)
    prompt_width = natural["FIRST PROMPT"]  # a pipe's reader cuts it if it likes
    if narrow:
        prompt_width = max(12, min(prompt_width, width - used()))
    columns = [*(_HEADERS.index(name) for name in kept), len(_HEADERS) - 1]
    widths = {**natural, "FIRST PROMPT": prompt_width}
    lines = []
    for row in table:
        cells = []
        for i in columns:
            name, w = _HEADERS[i], widths[_HEADERS[i]]
            fitted = _fit(row[i], w, keep_end=name in _KEEP_END)
            cells.append(fitted.rjust(w) if name in _RIGHT else fitted.ljust(w))
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
    except (ValueError, OverflowError):  # not a date, or one the local zone cannot hold
        return stamp
