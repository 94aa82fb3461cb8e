"""The agent types ``task`` can start: Copilot's built-in kinds, and custom agents.

A kind says what the sub-agent is told (its prompt, before loopdeck's own system
prompt), which of the session's tools it gets, and optionally its model. Tools a
sub-agent never gets, whatever its kind: ``task`` (no sub-agent starts another),
and what talks to the user or ends the session's task (``ask_user``,
``task_complete``, ``update_todos``, ``exit_plan_mode``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.tools.registry import ToolRegistry

NEVER_OFFERED = frozenset({"task", "ask_user", "task_complete", "update_todos", "exit_plan_mode"})


@dataclass(frozen=True, slots=True)
class AgentKind:
    name: str
    display_name: str
    description: str
    prompt: str
    # Tool names it may use (None: every tool of the session); ``read_only`` keeps
    # only the tools that change nothing.
    tools: tuple[str, ...] | None = None
    read_only: bool = False
    model: str | None = None

    def registry(self, offered: ToolRegistry) -> ToolRegistry:
        """Its tools, out of those the session offers now."""
        picked = []
        for name in offered.names():
            tool = offered.get(name)
            if tool is None or name in NEVER_OFFERED:
                continue
            if self.read_only and tool.kind != "read":
                continue
            if self.tools is not None and name not in self.tools:
                continue
            picked.append(tool)
        return ToolRegistry(picked)


EXPLORE = AgentKind(
    name="explore",
    display_name="Explore Agent",
    description="finds files, searches and reads code, answers questions; read-only",
    prompt="You are an exploration agent. Search and read the code to answer the task "
    "you are given; you cannot change files or run commands. Be quick and thorough: "
    "run independent searches together. Answer with what you found, with the paths "
    "and line numbers that matter, in a few short paragraphs or a list.",
    read_only=True,
)

TASK = AgentKind(
    name="task",
    display_name="Task Agent",
    description="runs commands (tests, builds, linters) and reports briefly",
    prompt="You are a command execution agent: run the development commands the task "
    "asks for and report the result. On success answer briefly; on failure give the "
    "output that explains it.",
)

GENERAL_PURPOSE = AgentKind(
    name="general-purpose",
    display_name="General-purpose Agent",
    description="multi-step work with every tool: reads, edits, runs commands",
    prompt="You are a general-purpose agent working on one task handed to you by "
    "another agent. Do the task completely, then answer with a concise report of what "
    "you did and found: your answer is all the other agent will see.",
)

BUILT_IN: tuple[AgentKind, ...] = (EXPLORE, TASK, GENERAL_PURPOSE)
