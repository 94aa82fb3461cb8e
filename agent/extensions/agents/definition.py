"""One custom agent, as a ``*.agent.md`` file or an SDK app's ``customAgents`` entry says it.

The file's id is its name minus ``.agent.md`` (or ``.md``); the front matter's
``name`` is the name shown. ``description`` is required; ``tools`` is a YAML list or a
comma-separated string (absent or ``*``: every tool); the body is the agent's prompt.
Fields Copilot documents but loopdeck does not act on (``mcp-servers``, ``github``,
``target``, ``metadata``...) are read and kept, never an error when well formed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent.extensions.front_matter import FrontMatterError, read_markdown

# Where an agent came from, in the SDK's words (``AgentInfo.source``); "sdk": the app's own.
AgentSource = Literal["project", "inherited", "user", "sdk"]
ModelPolicy = Literal["preferred", "required"]

AGENT_SUFFIX = ".agent.md"


class AgentFileError(ValueError):
    """A file that is not a usable agent; the message names the field when one is wrong."""


@dataclass(frozen=True, slots=True)
class CustomAgent:
    """A custom agent. ``tools`` None: every tool the session has."""

    name: str  # the id: what /agent, --agent and the task tool's agent_type use
    display_name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str | None = None
    models: tuple[str, ...] = ()
    model_policy: ModelPolicy | None = None
    reasoning_effort: str | None = None
    skills: tuple[str, ...] = ()
    mcp_servers: Mapping[str, Any] | None = None
    user_invocable: bool = True
    disable_model_invocation: bool = False
    include_custom_instructions: bool = False
    source: AgentSource = "project"
    path: Path | None = None

    @property
    def preferred_model(self) -> str | None:
        """The model the agent asks for: ``model``, else the first of ``models``."""
        return self.model or (self.models[0] if self.models else None)


def agent_id(path: Path) -> str:
    """``reviewer.agent.md`` and ``reviewer.md`` are both the agent ``reviewer``."""
    name = path.name
    for suffix in (AGENT_SUFFIX, ".md"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def read_agent_file(path: Path, source: AgentSource) -> CustomAgent | None:
    """The agent in ``path``; None for a plain ``.md`` without front matter (a README
    beside the agents is not one). AgentFileError says what is wrong otherwise."""
    try:
        doc = read_markdown(path)
    except FrontMatterError as exc:
        raise AgentFileError(str(exc)) from exc
    if not doc.has_front_matter:
        if not path.name.endswith(AGENT_SUFFIX):
            return None
        raise AgentFileError("it has no front matter (a '---' block with a description)")
    ident = agent_id(path)
    if not ident.strip():
        raise AgentFileError("the file name gives the agent no name")
    return agent_from_fields(ident, doc.fields, doc.body, source=source, path=path)


def agent_from_fields(
    ident: str,
    fields: Mapping[str, Any],
    prompt: str,
    *,
    source: AgentSource,
    path: Path | None = None,
) -> CustomAgent:
    """An agent from front-matter fields (Copilot's kebab-case names)."""
    display = _optional_str(fields, "name") or ident
    description = _optional_str(fields, "description")
    if description is None or not description.strip():
        raise AgentFileError("field 'description' is required")
    infer = _optional_bool(fields, "infer")
    disable = _optional_bool(fields, "disable-model-invocation")
    if disable is None:
        disable = (not infer) if infer is not None else False
    user_invocable = _optional_bool(fields, "user-invocable")
    include = _optional_bool(fields, "include-custom-instructions")
    return CustomAgent(
        name=ident,
        display_name=display,
        description=description.strip(),
        prompt=prompt,
        tools=tool_list(fields.get("tools"), "tools"),
        model=_optional_str(fields, "model"),
        models=_str_list(fields, "models"),
        model_policy=_policy(fields.get("modelPolicy", fields.get("model-policy"))),
        reasoning_effort=_optional_str(fields, "reasoningEffort")
        or _optional_str(fields, "reasoning-effort"),
        skills=_str_list(fields, "skills"),
        mcp_servers=_mapping(fields, "mcp-servers"),
        user_invocable=True if user_invocable is None else user_invocable,
        disable_model_invocation=disable,
        include_custom_instructions=bool(include),
        source=source,
        path=path,
    )


def agent_from_sdk(config: Any) -> CustomAgent:
    """One entry of an SDK app's ``customAgents`` (camelCase, ``prompt`` given)."""
    if not isinstance(config, Mapping):
        raise AgentFileError("the entry must be an object")
    name = config.get("name")
    if not isinstance(name, str) or not name.strip():
        raise AgentFileError("field 'name' is required")
    prompt = config.get("prompt")
    if not isinstance(prompt, str):
        raise AgentFileError("field 'prompt' is required")
    fields: dict[str, Any] = {
        "name": config.get("displayName"),
        "description": config.get("description") or name,  # optional on the wire
        "tools": config.get("tools"),
        "model": config.get("model"),
        "modelPolicy": config.get("modelPolicy"),
        "reasoningEffort": config.get("reasoningEffort"),
        "skills": config.get("skills"),
        "mcp-servers": config.get("mcpServers"),
        "infer": config.get("infer"),
    }
    return agent_from_fields(
        name, {k: v for k, v in fields.items() if v is not None}, prompt, source="sdk"
    )


def tool_list(value: Any, field: str) -> tuple[str, ...] | None:
    """``tools`` as written: a list or a comma-separated string; None (every tool)
    when absent or when ``*`` is among them."""
    if value is None:
        return None
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = [item.strip() for item in value]
    else:
        raise AgentFileError(f"field '{field}' must be a list of tool names or a string")
    names = tuple(item for item in items if item)
    return None if "*" in names else names


def _optional_str(fields: Mapping[str, Any], key: str) -> str | None:
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise AgentFileError(f"field '{key}' must be a string")
    return str(value)


def _optional_bool(fields: Mapping[str, Any], key: str) -> bool | None:
    value = fields.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise AgentFileError(f"field '{key}' must be true or false")


def _str_list(fields: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = fields.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise AgentFileError(f"field '{key}' must be a list of strings")


def _mapping(fields: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = fields.get(key)
    if value is None or isinstance(value, Mapping):
        return value
    raise AgentFileError(f"field '{key}' must be a mapping")


def _policy(value: Any) -> ModelPolicy | None:
    if value is None:
        return None
    if value == "preferred":
        return "preferred"
    if value == "required":
        return "required"
    raise AgentFileError("field 'modelPolicy' must be 'preferred' or 'required'")
