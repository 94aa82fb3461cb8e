"""A session's custom agents and skills: which are offered, which agent is selected,
which skills were loaded.

The app finds them (agent/extensions/agents, agent/extensions/skills) and hands them
over with :meth:`SessionExtensions.load`. Selecting an agent is an event
(``subagent.selected``, ``subagent.deselected``): the fold of those events is the
selection, live and on resume, and from it come the tools offered (the agent's
``tools``) and a section of the system prompt (its prompt). A skill the model loads
is written as ``skill.invoked`` and its instructions as a ``user.message`` (source
``skill-<name>``), both right after the ``skill`` call's ``tool.execution_complete``,
as Copilot CLI writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent.events.schema import (
    SKILL_MESSAGE_PREFIX,
    AssistantTurnStartData,
    Event,
    EventData,
    SessionSkillsLoadedData,
    SessionWarningData,
    SkillInvokedData,
    SkillsLoadedSkill,
    SubagentDeselectedData,
    SubagentSelectedData,
    UserMessageData,
)
from agent.extensions.agents.catalog import AgentCatalog
from agent.extensions.agents.definition import CustomAgent
from agent.extensions.agents.prompt import agent_prompt_section
from agent.extensions.agents.tool_filter import ToolRef, kept_tools
from agent.extensions.skills.catalog import SkillCatalog
from agent.extensions.skills.definition import Skill, SkillFileError
from agent.extensions.skills.tool import (
    TOOL_NAME,
    SkillTool,
    loaded_message,
    skill_context,
    skills_prompt_section,
)
from agent.tools.base import Tool, ToolResult
from agent.tools.registry import ToolRegistry

AGENTS_WARNING = "custom_agents"  # session.warning's warningType for a broken agent file
SKILLS_WARNING = "skills"


class ExtensionsHost(Protocol):
    def emit(self, data: EventData) -> Event: ...


@dataclass(frozen=True, slots=True)
class InvokedSkill:
    """A skill loaded in this session (``session.skills.getInvoked``)."""

    name: str
    path: str
    content: str
    invoked_at_turn: int
    allowed_tools: list[str] | None = None


class SessionExtensions:
    def __init__(self, host: ExtensionsHost, on_change: Callable[[], None]) -> None:
        self._host = host
        self._changed = on_change  # the tools or the prompt must be built again
        self.agents = AgentCatalog()
        self.skills = SkillCatalog()
        self.disabled_skills: set[str] = set()
        self._selected: str | None = None  # the selected agent's name, as the log says
        self.invoked: list[InvokedSkill] = []
        self._turns = 0
        self._pending: dict[str, list[EventData]] = {}  # a skill call's events to follow it
        self._tool = SkillTool(self)

    # --- what there is ---------------------------------------------------------

    def load(self, agents: AgentCatalog, skills: SkillCatalog) -> None:
        """Offer these agents and skills; what was wrong with their files is a warning."""
        self.agents, self.skills = agents, skills
        for notice in agents.notices:
            self._host.emit(SessionWarningData(warning_type=AGENTS_WARNING, message=notice))
        for notice in skills.notices:
            self._host.emit(SessionWarningData(warning_type=SKILLS_WARNING, message=notice))
        if self._selected is not None and self.agent is None:
            self._host.emit(
                SessionWarningData(
                    warning_type=AGENTS_WARNING,
                    message=f"custom agent {self._selected!r} is no longer available; "
                    "the default agent is used",
                )
            )
        self._changed()
        if skills.skills:
            self._host.emit(self.skills_loaded())

    def skills_loaded(self) -> SessionSkillsLoadedData:
        return SessionSkillsLoadedData(
            skills=[
                SkillsLoadedSkill(
                    name=s.name,
                    description=s.description,
                    source=s.source,
                    user_invocable=s.user_invocable,
                    enabled=s.name not in self.disabled_skills,
                    path=str(s.path),
                    argument_hint=s.argument_hint,
                )
                for s in self.skills.skills
            ]
        )

    def model_skills(self) -> list[Skill]:
        """The skills the model may load: enabled, and not kept for the user."""
        return [
            s
            for s in self.skills.skills
            if s.name not in self.disabled_skills and not s.disable_model_invocation
        ]

    def set_skill_enabled(self, name: str, enabled: bool) -> Skill:
        skill = self.skills.get(name)
        if skill is None:
            raise KeyError(f"no skill named {name!r}")
        if enabled:
            self.disabled_skills.discard(skill.name)
        else:
            self.disabled_skills.add(skill.name)
        self._changed()
        return skill

    # --- the selected agent ----------------------------------------------------

    @property
    def agent(self) -> CustomAgent | None:
        return self.agents.get(self._selected) if self._selected is not None else None

    def select(self, name: str) -> CustomAgent:
        """Make ``name`` the session's agent (``subagent.selected``). KeyError if none."""
        agent = self.agents.get(name)
        if agent is None:
            known = ", ".join(self.agents.names()) or "none"
            raise KeyError(f"no custom agent named {name!r} (available: {known})")
        self._host.emit(
            SubagentSelectedData(
                agent_name=agent.name,
                agent_display_name=agent.display_name,
                tools=list(agent.tools) if agent.tools is not None else None,
            )
        )
        return agent

    def deselect(self) -> None:
        if self._selected is not None:
            self._host.emit(SubagentDeselectedData())

    # --- what the model is offered ---------------------------------------------

    def tools(self) -> list[Tool]:
        return [self._tool] if self.model_skills() else []

    def narrow(self, registry: ToolRegistry) -> ToolRegistry:
        """The tools the selected agent keeps (all of them without one)."""
        agent = self.agent
        if agent is None or agent.tools is None:
            return registry
        refs = []
        for name in registry.names():
            tool = registry.get(name)
            server, server_tool = (tool.mcp_origin() if tool else None) or (None, None)
            refs.append(ToolRef(name, server, server_tool))
        kept = (registry.get(name) for name in kept_tools(agent.tools, refs))
        return ToolRegistry(tool for tool in kept if tool is not None)

    def prompt_sections(self, tool_names: list[str]) -> str:
        """What the system prompt adds: the agent's prompt, the skills to load."""
        agent = self.agent
        sections = [agent_prompt_section(agent) if agent is not None else ""]
        if TOOL_NAME in tool_names:
            sections.append(skills_prompt_section(self.model_skills()))
        return "\n\n".join(s for s in sections if s)

    # --- loading a skill ---------------------------------------------------------

    def load_skill(self, name: str, tool_call_id: str) -> ToolResult:
        skill = self.skills.get(name)
        if skill is None or skill.disable_model_invocation:
            available = ", ".join(s.name for s in self.model_skills()) or "none"
            return ToolResult.failure(f'Skill "{name}" not found. Available skills: {available}')
        if skill.name in self.disabled_skills:
            return ToolResult.failure(
                f'Skill "{skill.name}" is disabled. Use /skills to enable it.'
            )
        try:
            body = skill.body()
        except SkillFileError as exc:
            return ToolResult.failure(f'Skill "{skill.name}" cannot be read: {exc}')
        self._pending[tool_call_id] = [
            SkillInvokedData(
                name=skill.name,
                path=str(skill.path),
                content=body,
                allowed_tools=list(skill.allowed_tools) if skill.allowed_tools else None,
                source=skill.source,
                description=skill.description,
                trigger="agent-invoked",
                invoked_at_turn=self._turns,
            ),
            UserMessageData(
                content=skill_context(skill, body), source=SKILL_MESSAGE_PREFIX + skill.name
            ),
        ]
        return ToolResult(
            content=loaded_message(skill.name),
            detailed_content=f"Skill loaded successfully ✅\n\n{body}",
        )

    def after_tool(self, tool_call_id: str, success: bool) -> None:
        """A call is complete: a skill it loaded follows it into the log."""
        follow = self._pending.pop(tool_call_id, [])
        if success:
            for data in follow:
                self._host.emit(data)

    # --- the fold --------------------------------------------------------------

    def fold(self, event: Event) -> None:
        if event.agent_id is not None:
            return  # a sub-agent's own run selects nothing for the session
        match event.data:
            case AssistantTurnStartData():
                self._turns += 1
            case SubagentSelectedData(agent_name=name):
                self._selected = name
                self._changed()
            case SubagentDeselectedData():
                self._selected = None
                self._changed()
            case SkillInvokedData() as d:
                self.invoked.append(
                    InvokedSkill(d.name, d.path, d.content, d.invoked_at_turn or 0, d.allowed_tools)
                )
            case _:
                pass
