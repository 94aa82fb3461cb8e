"""The MCP servers the flags and config files describe (agent.extensions.mcp.config)."""

from __future__ import annotations

import argparse
import os

from agent.extensions.mcp.config import CONFIG_NAME, McpConfig, load_config


def mcp_config(args: argparse.Namespace) -> McpConfig:
    """Copilot's mcp-config.json, loopdeck's own, then --additional-mcp-config, less
    --disable-mcp-server. Never raises: what is wrong is in the notices."""
    from agent.models.select import user_config_dir

    env = os.environ
    return load_config(
        env,
        own_config=user_config_dir(env) / CONFIG_NAME,
        additional=getattr(args, "additional_mcp_config", None) or [],
        disabled=getattr(args, "disable_mcp_server", None) or [],
    )
