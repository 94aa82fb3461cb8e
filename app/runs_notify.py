"""Telling the person at the board that a run needs them or has ended: the
terminal's bell, and a desktop notification where the terminal is known to show
one for an escape sequence (OSC 9 or OSC 777).

``--notify`` (or config.toml's ``[runs] notify``): ``auto`` (the default: the bell,
and the desktop notification where the terminal supports it), ``bell``,
``desktop``, ``off``. Only changes seen while the board is open are told: the
runs found waiting or ended when it opens are not news.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass

from agent.log.run_fold import ENDED, NEEDS_PERSON
from agent.log.runs import RunView
from agent.models.select import CONFIG_FILE_NAME, user_config_dir

NOTIFY_CHOICES = ("auto", "bell", "desktop", "off")
BELL = "\a"


def osc_kind(env: Mapping[str, str]) -> str | None:
    """The desktop-notification sequence this terminal shows: "9" (iTerm2), "777"
    (WezTerm, Ghostty, foot, urxvt with its notify extension), or None (unknown:
    the bell alone). Inside tmux or screen none: they would swallow it."""
    if env.get("TMUX") or env.get("TERM", "").startswith("screen"):
        return None
    program = env.get("TERM_PROGRAM", "")
    term = env.get("TERM", "")
    if program == "iTerm.app":
        return "9"
    if program in ("WezTerm", "ghostty") or term.startswith(("foot", "xterm-ghostty")):
        return "777"
    if term.startswith("rxvt-unicode"):
        return "777"
    return None


def sequences(mode: str, kind: str | None, title: str, body: str) -> str:
    """What to write to the terminal for one notification."""
    clean_title, clean_body = _clean(title), _clean(body)
    out = ""
    if mode in ("auto", "bell"):
        out += BELL
    if mode in ("auto", "desktop") and kind is not None:
        if kind == "9":
            out += f"\x1b]9;{clean_title}: {clean_body}\x07"
        else:
            out += f"\x1b]777;notify;{clean_title};{clean_body}\x07"
    return out


def _clean(text: str) -> str:
    # No control characters (an ESC or BEL would end the sequence), no ';' in 777's fields.
    kept = "".join(ch if ch.isprintable() else " " for ch in text)
    return kept.replace(";", ",")[:120]


@dataclass(frozen=True, slots=True)
class Notice:
    session_id: str
    title: str  # "needs approval", "ended: done"
    body: str  # the run's title or first prompt


class ChangeWatch:
    """Compares each poll's states with the last: what became waiting, what ended."""

    def __init__(self) -> None:
        self._states: dict[str, str] | None = None

    def notices(self, views: list[RunView]) -> list[Notice]:
        states = {v.session_id: v.state for v in views}
        before, self._states = self._states, states
        if before is None:
            return []  # what the board found on opening is not news
        out: list[Notice] = []
        for view in views:
            old = before.get(view.session_id)
            label = view.row.label or view.session_id[:8]
            if view.state in NEEDS_PERSON and old not in NEEDS_PERSON:
                out.append(Notice(view.session_id, f"loopdeck: {view.state}", label))
            elif view.state in ENDED and old not in ENDED:
                # (a run first seen ended started and ended while the board was open)
                out.append(Notice(view.session_id, f"loopdeck: run {view.state}", label))
        return out


def notify_mode(flag: str | None, env: Mapping[str, str] | None = None) -> str:
    """The flag, else config.toml's ``[runs] notify``, else ``auto``. A bad value in
    the file is ignored (the board is no place to fail on a config typo)."""
    if flag is not None:
        return flag
    env = os.environ if env is None else env
    try:
        data = tomllib.loads((user_config_dir(env) / CONFIG_FILE_NAME).read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return "auto"
    table = data.get("runs")
    value = table.get("notify") if isinstance(table, dict) else None
    return value if isinstance(value, str) and value in NOTIFY_CHOICES else "auto"
