"""The agent types ``task`` can start: Copilot's built-in kinds, and custom agents
(``*.agent.md``, read by agent/extensions/agents/) the model may delegate to.

A kind says what the sub-agent is told (its prompt, before loopdeck's own system
prompt), which of the session's tools it gets, and optionally its model. Tools a
sub-agent never gets, whatever its kind: ``task`` (no sub-agent starts another),
and what talks to the user or ends the session's task (``ask_user``,
``task_complete``, ``update_todos``, ``exit_plan_mode``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.extensions.agents.definition import CustomAgent
from agent.extensions.agents.tool_filter import ToolRef, kept_tools
from agent.tools.registry import ToolRegistry

# ``skill``: a skill's instructions are written into the session's own conversation
# (agent/session/extensions.py), which a sub-agent does not read.
NEVER_OFFERED = frozenset(
    {"task", "ask_user", "task_complete", "update_todos", "exit_plan_mode", "skill"}
)


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
    # A custom agent's ``tools`` are Copilot's names and aliases (``search``, ``edit``,
    # ``server/*``): matched by the custom agents' own filter.
    aliases: bool = False

    def registry(self, offered: ToolRegistry) -> ToolRegistry:
        """Its tools, out of those the session offers now."""
        allowed = set(self._allowed(offered)) if self.tools is not None else None
        picked = []
        for name in offered.names():
            tool = offered.get(name)
            if tool is None or name in NEVER_OFFERED:
                continue
            if self.read_only and tool.kind != "read":
                continue
            if allowed is not None and name not in allowed:
                continue
            picked.append(tool)
        registry = ToolRegistry(picked)
        registry.compact = offered.compact  # a small window is small for its runs too
        return registry

    def _allowed(self, offered: ToolRegistry) -> list[str]:
        if not self.aliases:
            return list(self.tools or ())
        refs = []
        for name in offered.names():
            tool = offered.get(name)
            origin = tool.mcp_origin() if tool is not None else None
            refs.append(ToolRef(name, *(origin or (None, None))))
        return kept_tools(self.tools, refs)

    @classmethod
    def from_custom(cls, agent: CustomAgent) -> AgentKind:
        """A custom agent (``*.agent.md``) as an agent type: its prompt, tools, model."""
        return cls(
            name=agent.name,
            display_name=agent.display_name,
            description=agent.description,
            prompt=agent.prompt.strip(),
            tools=agent.tools,
            model=agent.preferred_model,
            aliases=True,
        )


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
