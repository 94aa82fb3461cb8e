"""Which of a session's tools an agent's ``tools`` list keeps.

A name in the list is one of Copilot's aliases (any case): ``execute`` (``shell``,
``powershell``: bash), ``read`` (``notebookread``: view), ``edit`` (``multiedit``,
``write``, ``notebookedit``: edit and create), ``search`` (grep and glob), ``agent``
(``custom-agent``: task), ``web``, ``todo`` (update_todos); or a tool's own name
(``Grep`` is grep); or an MCP
server's tools as ``server/tool`` or ``server/*``. Unknown names are ignored, as
Copilot ignores them. The tools that end or steer a session (``task_complete``,
``exit_plan_mode``, ``ask_user``, and ``skill`` that loads the session's skills) are
the session's, not the agent's: they stay.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Copilot's alias -> the loopdeck tools it stands for.
_ALIASES: dict[str, tuple[str, ...]] = {
    "execute": ("bash",),
    "read": ("view",),
    "edit": ("edit", "create"),
    "search": ("grep", "glob"),
    "agent": ("task",),
    "web": ("web_fetch", "fetch"),
    "todo": ("update_todos",),
}
# Other products' names for the same (a tool's own name, any case, is matched as is).
_SYNONYMS: dict[str, str] = {
    "shell": "execute",
    "powershell": "execute",
    "notebookread": "read",
    "multiedit": "edit",
    "write": "edit",
    "notebookedit": "edit",
    "custom-agent": "agent",
}
SESSION_TOOLS = frozenset({"task_complete", "exit_plan_mode", "ask_user", "skill"})


@dataclass(frozen=True, slots=True)
class ToolRef:
    """A tool as the filter sees it: its name, and its MCP server and tool if any."""

    name: str
    mcp_server: str | None = None
    mcp_tool: str | None = None


def kept_tools(allowed: Sequence[str] | None, tools: Iterable[ToolRef]) -> list[str]:
    """The names of ``tools`` an agent with ``allowed`` keeps (None: all of them)."""
    refs = list(tools)
    if allowed is None:
        return [ref.name for ref in refs]
    wanted = _expand(allowed)
    return [ref.name for ref in refs if ref.name in SESSION_TOOLS or _matches(ref, wanted)]


def _expand(allowed: Sequence[str]) -> set[str]:
    wanted: set[str] = set()
    for raw in allowed:
        name = raw.strip()
        folded = name.casefold()
        wanted.update((name, folded))
        alias = folded if folded in _ALIASES else _SYNONYMS.get(folded)
        if alias is not None:
            wanted.update(_ALIASES[alias])
    return wanted


def _matches(ref: ToolRef, wanted: set[str]) -> bool:
    if ref.name in wanted:
        return True
    if ref.mcp_server is None:
        return False
    return f"{ref.mcp_server}/*" in wanted or f"{ref.mcp_server}/{ref.mcp_tool}" in wanted
