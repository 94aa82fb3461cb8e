"""What the system prompt says of the custom agent selected for the session."""

from __future__ import annotations

from agent.extensions.agents.definition import CustomAgent


def agent_prompt_section(agent: CustomAgent) -> str:
    """The agent's own prompt, after loopdeck's: it narrows the general guidance."""
    lines = [
        f"# Custom agent: {agent.display_name}",
        f"The user selected the custom agent {agent.name!r} for this session "
        f"({agent.description}). Act as this agent: its instructions follow, and where "
        "they differ from the general guidance above, they win.",
    ]
    if agent.prompt.strip():
        lines += ["", agent.prompt.strip()]
    return "\n".join(lines)
