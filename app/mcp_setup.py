"""The MCP servers the flags and config files describe (agent.extensions.mcp.config),
and whether the workspace's own files are loaded.

The workspace's ``.mcp.json`` / ``.github/mcp.json`` (agent.extensions.mcp.workspace)
load only in a trusted folder (app.trust): the terminal app asks once per folder;
``-p`` loads them only when ``LOOPDECK_WORKSPACE_MCP`` (or Copilot's
``GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP``) is ``true``. ``LOOPDECK_WORKSPACE_MCP``
set to ``true`` or ``false`` decides for the app too, without asking.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from agent.extensions.mcp.config import CONFIG_NAME, McpConfig, load_config
from agent.extensions.mcp.workspace import workspace_files, workspace_root
from app.trust import TrustedFolders

ENV_SWITCH = "LOOPDECK_WORKSPACE_MCP"
COPILOT_PROMPT_SWITCH = "GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP"


def mcp_config(args: argparse.Namespace, cwd: Path | None = None) -> McpConfig:
    """Copilot's mcp-config.json, loopdeck's own, the workspace's files (from ``cwd``,
    when allowed), then --additional-mcp-config, less --disable-mcp-server. Never
    raises: what is wrong is in the notices."""
    from agent.models.select import user_config_dir

    env = os.environ
    found = workspace_files(cwd) if cwd is not None else []
    load, why_not = _load_workspace(args, cwd, env) if found else (False, "")
    config = load_config(
        env,
        own_config=user_config_dir(env) / CONFIG_NAME,
        additional=getattr(args, "additional_mcp_config", None) or [],
        disabled=getattr(args, "disable_mcp_server", None) or [],
        workspace=found if load else (),
    )
    if found and not load:
        names = ", ".join(str(p) for p in found)
        config.notices.append(f"workspace MCP config not loaded ({names}): {why_not}")
        # Rules may still name their servers, as they may a disabled one.
        config.configured |= load_config({}, workspace=found).configured
    return config


def _load_workspace(
    args: argparse.Namespace, cwd: Path | None, env: Mapping[str, str]
) -> tuple[bool, str]:
    """Whether to load the workspace's files, and if not, what would."""
    switch = _switch(env.get(ENV_SWITCH))
    if switch is not None:
        return switch, f"{ENV_SWITCH} is false"
    if getattr(args, "prompt", None) is not None:
        if _switch(env.get(COPILOT_PROMPT_SWITCH)):
            return True, ""
        return False, f"-p loads them only when {ENV_SWITCH}=true"
    assert cwd is not None
    root = workspace_root(cwd)
    decision = TrustedFolders.of_user(env).decision(root)
    if decision == "trusted":
        return True, ""
    if decision == "declined":
        return False, (
            f"you declined to trust {root} (to be asked again, remove it from "
            f"{TrustedFolders.of_user(env).path}; or set {ENV_SWITCH}=true)"
        )
    return False, f"{root} is not trusted yet (the terminal app asks when it starts)"


def _switch(value: str | None) -> bool | None:
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    return None


def ask_workspace_trust(
    cwd: Path,
    *,
    ask: Callable[[str], str] = input,
    interactive: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Before the terminal app starts: when the workspace has MCP files and its folder
    was never asked about, ask once on the terminal and record the answer."""
    env = os.environ if env is None else env
    if _switch(env.get(ENV_SWITCH)) is not None:
        return
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    found = workspace_files(cwd)
    if not found or not interactive:
        return
    root = workspace_root(cwd)
    trusted = TrustedFolders.of_user(env)
    if trusted.decision(root) is not None:
        return
    names = "\n".join(f"  {p}" for p in found)
    question = (
        f"This workspace configures MCP servers:\n{names}\n"
        "Their commands run on this machine when loopdeck starts.\n"
        f"Trust {root} and load them? [y/N] "
    )
    try:
        answer = ask(question)
    except (EOFError, KeyboardInterrupt):
        print()
        return  # not answered: asked again next time
    trusted.record(root, "trusted" if answer.strip().lower() in ("y", "yes") else "declined")
