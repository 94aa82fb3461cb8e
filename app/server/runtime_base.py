"""What every SDK method shares: the runtime's sessions and how a new one is made.

:class:`RuntimeBase` holds the hosted sessions (shared by every connection), the
session store, and the server's flags; from those and a request's params it makes
what a session is created or resumed with: its model (flags over config.toml, an
app's own ``provider``), working directory, sandbox, permission rules and autopilot
cap. The methods, by namespace, build on it (``methods_*.py``); the runtime that
serves them, with its dispatch table, is :class:`app.server.methods.Runtime`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agent.log.store import SessionStore
from agent.loop.turn_loop import DEFAULT_MAX_CONTINUES
from agent.models.base import ModelClient
from agent.models.scripted import SCRIPTED_PREFIX, ScriptError
from agent.models.select import NO_MODEL_HELP
from agent.models.settings import ApiBaseError, check_api_base
from agent.permissions.rules import PermissionPolicy, RuleError
from agent.sandbox.policy import Sandbox
from agent.sandbox.secrets import EnvFilter
from agent.tools.registry import rule_tool_names
from app.model_setup import SetupError, make_model, pick_model, provider_settings
from app.sandbox_setup import SandboxSetupError, sandbox_setup
from app.server.bridge import HostedSession
from app.server.lifecycle import Lifecycle
from app.server.params import mcp_config, optional_str, required_str
from app.server.rpc import INVALID_PARAMS, SERVER_ERROR, RpcError


class RuntimeBase:
    """The sessions the runtime hosts, and what makes new ones."""

    def __init__(
        self,
        *,
        cwd: Path,
        store: SessionStore,
        flags: argparse.Namespace | None = None,
    ) -> None:
        self.cwd = cwd
        self.store = store
        self.flags = flags
        self.sessions: dict[str, HostedSession] = {}
        self.lifecycle = Lifecycle()  # session.lifecycle to every client

    def _hosted(self, params: dict[str, Any]) -> HostedSession:
        session_id = required_str(params, "sessionId")
        hosted = self.sessions.get(session_id)
        if hosted is None:
            raise RpcError(SERVER_ERROR, f"Session not found: {session_id}")
        return hosted

    def _default_model(self) -> str | None:
        return getattr(self.flags, "model", None) if self.flags else None

    def _model(self, params: dict[str, Any], recorded: str | None) -> ModelClient:
        provider = params.get("provider") if isinstance(params.get("provider"), dict) else None
        try:
            picked = pick_model(optional_str(params, "model") or self._default_model(), recorded)
        except SetupError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        if picked is None:
            raise RpcError(INVALID_PARAMS, "no model given and none configured.\n" + NO_MODEL_HELP)
        spec, api_base = picked
        flags_base = getattr(self.flags, "api_base", None) if self.flags else None
        api_base = flags_base or api_base
        try:
            if spec.startswith(SCRIPTED_PREFIX):
                return make_model(spec)
            # The same timeouts and retries as the app and -p: flags over config.
            settings = provider_settings(self.flags)
            if provider:
                from agent.models.litellm_client import LiteLLMModel

                base = provider.get("baseUrl")
                extra = {"api_key": provider["apiKey"]} if provider.get("apiKey") else None
                return LiteLLMModel(
                    spec,
                    api_base=check_api_base(str(base)) if base else api_base,
                    connect_timeout=settings.connect_timeout,
                    idle_timeout=settings.idle_timeout,
                    retry_policy=settings.retry_policy,
                    extra=extra,
                )
            return make_model(spec, api_base, settings)
        except SetupError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        except ApiBaseError as exc:
            raise RpcError(INVALID_PARAMS, f"provider.baseUrl {exc}") from exc
        except ScriptError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc

    def _cwd(self, params: dict[str, Any]) -> Path:
        given = optional_str(params, "workingDirectory")
        path = Path(given).expanduser() if given else self.cwd
        if not path.is_absolute():
            path = self.cwd / path
        if not path.is_dir():
            raise RpcError(INVALID_PARAMS, f"workingDirectory {path}: not a directory")
        return path.resolve()

    def _sandbox(self) -> tuple[Sandbox, EnvFilter]:
        """The server's --sandbox flags over config.toml, fresh per session (its temp dir)."""
        try:
            return sandbox_setup(self.flags)
        except SandboxSetupError as exc:
            raise RpcError(SERVER_ERROR, str(exc)) from exc

    def _permissions(self, params: dict[str, Any]) -> tuple[PermissionPolicy, list[Path]]:
        """The server's permission flags (a fresh policy per session), plus the
        session's ``additionalDirectories``."""
        flags = self.flags
        # A rule may name a built-in tool that asks or one of this session's own tools.
        own_tools = [
            str(raw.get("name")) for raw in params.get("tools") or [] if isinstance(raw, dict)
        ]
        try:
            policy = PermissionPolicy.from_flags(
                getattr(flags, "allow_tool", None),
                getattr(flags, "deny_tool", None),
                allow_all=bool(getattr(flags, "allow_all_tools", False))
                or bool(getattr(flags, "yolo", False)),
                tools=[*rule_tool_names(), *own_tools],
                servers=mcp_config(params).configured,
            )
        except RuleError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        extra: list[Path] = [Path(p).expanduser().resolve() for p in getattr(flags, "add_dir", [])]
        if getattr(flags, "yolo", False):
            extra.append(Path("/"))
        for entry in params.get("additionalDirectories") or []:
            path = Path(str(entry)).expanduser()
            if not path.is_dir():
                raise RpcError(INVALID_PARAMS, f"additionalDirectories: {path}: not a directory")
            extra.append(path.resolve())
        return policy, extra

    def _max_continues(self, params: dict[str, Any]) -> int:
        autopilot = params.get("autopilot") if isinstance(params.get("autopilot"), dict) else {}
        assert isinstance(autopilot, dict)
        if autopilot.get("continuationEnabled") is False:
            return 0
        cap = autopilot.get("maxContinues")
        if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 0:
            return cap
        flag_cap = getattr(self.flags, "max_autopilot_continues", None) if self.flags else None
        return flag_cap if isinstance(flag_cap, int) else DEFAULT_MAX_CONTINUES
