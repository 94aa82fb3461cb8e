"""Where custom agents are found, and which one wins when two share a name.

Copilot CLI looks in ``.github/agents/`` and ``.claude/agents/`` of the working
directory and of each folder above it up to the repository's root, then in the
user's ``~/.copilot/agents/`` (``$COPILOT_HOME/agents`` when set). The first agent
found under a name is the one used: the nearest folder wins, ``.github`` before
``.claude`` in one folder, a project's agent before the user's (Copilot's command
reference; its how-to pages disagree, the reference is followed). In one folder
``x.agent.md`` wins over ``x.md``. An SDK app's ``customAgents`` come before all.

A broken file is a notice naming the file and what is wrong; the others still load.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.extensions.agents.definition import (
    AGENT_SUFFIX,
    AgentFileError,
    AgentSource,
    CustomAgent,
    agent_from_sdk,
    agent_id,
    read_agent_file,
)
from agent.loop.system_prompt import git_head

PROJECT_FOLDERS = (".github/agents", ".claude/agents")


@dataclass(frozen=True, slots=True)
class AgentFolder:
    path: Path
    source: AgentSource


@dataclass(frozen=True, slots=True)
class AgentCatalog:
    """The custom agents a session may use, in precedence order, and what was wrong."""

    agents: tuple[CustomAgent, ...] = ()
    notices: tuple[str, ...] = ()
    folders: tuple[AgentFolder, ...] = field(default=(), compare=False)

    def get(self, name: str) -> CustomAgent | None:
        """The agent whose id is ``name``, else the one whose shown name is (any case)."""
        for agent in self.agents:
            if agent.name == name:
                return agent
        folded = name.casefold()
        for agent in self.agents:
            if folded in (agent.name.casefold(), agent.display_name.casefold()):
                return agent
        return None

    def names(self) -> list[str]:
        return [agent.name for agent in self.agents]

    def user_invocable(self) -> list[CustomAgent]:
        """Those ``/agent`` and ``--agent`` offer."""
        return [agent for agent in self.agents if agent.user_invocable]

    def model_invocable(self) -> list[CustomAgent]:
        """Those the model may delegate to (the ``task`` tool's agent types)."""
        return [agent for agent in self.agents if not agent.disable_model_invocation]


def user_agents_folder(env: Mapping[str, str]) -> Path:
    home = env.get("COPILOT_HOME")
    if home:
        return Path(home) / "agents"
    base = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return base / ".copilot" / "agents"


def agent_folders(
    cwd: Path, env: Mapping[str, str], extra: Sequence[Path] = ()
) -> list[AgentFolder]:
    """The folders searched, highest precedence first (they need not exist)."""
    cwd = cwd.absolute()
    head = git_head(cwd)
    chain = [cwd]
    if head is not None and head.root != cwd and head.root in cwd.parents:
        chain += [parent for parent in cwd.parents if head.root in (parent, *parent.parents)]
    found: list[AgentFolder] = []
    for depth, folder in enumerate(chain):
        source: AgentSource = "project" if depth == 0 else "inherited"
        found += [AgentFolder(folder / name, source) for name in PROJECT_FOLDERS]
    found += [AgentFolder(Path(os.path.expanduser(str(path))), "user") for path in extra]
    found.append(AgentFolder(user_agents_folder(env), "user"))
    return found


def load_agents(
    cwd: Path,
    env: Mapping[str, str],
    *,
    sdk_agents: Iterable[object] = (),
    extra_folders: Sequence[Path] = (),
    discover: bool = True,
) -> AgentCatalog:
    """Every custom agent for a session in ``cwd``. ``sdk_agents``: an SDK app's
    ``customAgents`` entries; ``discover`` False reads no folder (an SDK app that
    brings its own agents only)."""
    agents: dict[str, CustomAgent] = {}
    notices: list[str] = []
    for index, config in enumerate(sdk_agents):
        try:
            agent = agent_from_sdk(config)
        except AgentFileError as exc:
            notices.append(f"customAgents[{index}]: {exc}; skipped")
            continue
        agents.setdefault(agent.name, agent)
    folders = agent_folders(cwd, env, extra_folders) if discover else []
    for folder in folders:
        for path in _agent_files(folder.path, notices):
            try:
                found = read_agent_file(path, folder.source)
            except AgentFileError as exc:
                notices.append(f"custom agent {path}: {exc}; skipped")
                continue
            if found is not None:
                agents.setdefault(found.name, found)
    return AgentCatalog(tuple(agents.values()), tuple(notices), tuple(folders))


def _agent_files(folder: Path, notices: list[str]) -> list[Path]:
    """The folder's agent files, ``x.agent.md`` before ``x.md``, by name."""
    try:
        entries = sorted(p for p in folder.iterdir() if p.name.endswith(".md"))
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        return []
    except OSError as exc:
        notices.append(f"custom agents folder {folder}: cannot list it ({exc.strerror or exc})")
        return []
    chosen: dict[str, Path] = {}
    for path in entries:
        if not path.is_file():
            continue
        ident = agent_id(path)
        if ident not in chosen or path.name.endswith(AGENT_SUFFIX):
            chosen[ident] = path
    return [chosen[ident] for ident in sorted(chosen)]
