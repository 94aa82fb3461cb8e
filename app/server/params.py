"""Reading a request's params: the checks every SDK method shares.

A missing or mistyped param is JSON-RPC -32602 (invalid params) with its name; a
session id names a folder, so it is held to safe characters; a mode is one of
loopdeck's three.
"""

from __future__ import annotations

import os
import re
from typing import Any

from agent.events.schema import Mode
from agent.extensions.mcp.config import EnvValueMode, McpConfig, from_sdk
from app.server.rpc import INVALID_PARAMS, RpcError

_MODES: tuple[Mode, ...] = ("interactive", "autopilot", "plan")
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def required_str(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name} must be a non-empty string")
    return value


def optional_str(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"{name} must be a string")
    return value or None


def check_id(session_id: str) -> None:
    """Session ids name folders: keep them to safe characters."""
    if not _SAFE_ID.match(session_id) or session_id in (".", ".."):
        raise RpcError(INVALID_PARAMS, f"not a valid session id: {session_id!r}")


def mode_of(value: Any) -> Mode:
    for mode in _MODES:
        if value == mode:
            return mode
    raise RpcError(INVALID_PARAMS, f"mode must be one of {', '.join(_MODES)}, not {value!r}")


def mcp_config(params: dict[str, Any]) -> McpConfig:
    """The session's ``mcpServers`` (less ``disabledMcpServers``), as its app sent them,
    their values read as its ``envValueMode`` says."""
    mode = env_value_mode(params.get("envValueMode", "direct"))
    return from_sdk(
        params.get("mcpServers"), params.get("disabledMcpServers"), mode=mode, host_env=os.environ
    )


def env_value_mode(value: Any) -> EnvValueMode:
    if value == "direct" or value is None:
        return "direct"
    if value == "indirect":
        return "indirect"
    raise RpcError(INVALID_PARAMS, f"envValueMode must be direct or indirect, not {value!r}")
