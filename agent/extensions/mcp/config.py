"""MCP server configuration in Copilot CLI's ``mcpServers`` shape.

Where it comes from, lowest precedence first (a later source's server of the same
name replaces an earlier one's): Copilot's ``~/.copilot/mcp-config.json`` (under
``$COPILOT_HOME`` when set), loopdeck's own ``mcp-config.json`` in its config folder,
the workspace's ``.mcp.json`` and ``.github/mcp.json`` files (when the caller loads
them: see agent.extensions.mcp.workspace), then each ``--additional-mcp-config``
(inline JSON or ``@file``) in order.
``--disable-mcp-server NAME`` leaves a server out.

A bad entry is skipped with a notice naming the server and the field; a bad file is a
notice naming the file; neither stops anything else.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.sandbox.secrets import MIN_SECRET_LENGTH, EnvFilter

Transport = Literal["stdio", "http", "sse"]
Source = Literal["user", "workspace", "plugin", "builtin", "managed", "account"]

DEFAULT_TIMEOUT_MS = 30_000  # Copilot's default for tool discovery and tool calls
CONNECT_FLOOR_MS = 60_000  # Copilot floors the connection budget at this
CONFIG_NAME = "mcp-config.json"

# $VAR, ${VAR} and ${VAR:-default}, as Copilot expands them in env, headers and more.
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_TYPES: dict[str, Transport] = {
    "local": "stdio",
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "sse": "sse",
}


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One server, its variables expanded. ``tools``: the names offered (``*``: all)."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    tools: tuple[str, ...] = ("*",)
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    source: Source = "user"
    # loopdeck's own field: false runs a local server outside the OS sandbox.
    sandbox: bool = True

    def offers(self, tool: str) -> bool:
        return "*" in self.tools or tool in self.tools

    @property
    def call_timeout(self) -> float:
        """Seconds a tool call may take before it fails."""
        return self.timeout_ms / 1000

    @property
    def connect_timeout(self) -> float:
        """Seconds to start, initialize and list tools before the server counts as failed."""
        return max(self.timeout_ms, CONNECT_FLOOR_MS) / 1000


@dataclass(slots=True)
class McpConfig:
    """The servers to start, the names of every configured one (disabled included:
    rules may name them) and what was wrong with the configuration."""

    servers: dict[str, McpServerConfig] = field(default_factory=dict)
    configured: set[str] = field(default_factory=set)
    # Left out by --disable-mcp-server (or an SDK app's disabledMcpServers): not
    # started, but a session may enable them.
    disabled: dict[str, McpServerConfig] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def secret_values(self) -> list[str]:
        """What must never reach an event: every header's value, and the values of
        ``env`` variables named like secrets (``*TOKEN*``, ``*KEY*``…)."""
        servers = [*self.servers.values(), *self.disabled.values()]
        return [secret for server in servers for secret in server_secrets(server)]


def server_secrets(server: McpServerConfig) -> list[str]:
    """One server's values that must never reach an event (see McpConfig.secret_values)."""
    names = EnvFilter()
    found = [v for k, v in server.env.items() if names.is_secret(k)]
    found += list(server.headers.values())
    found += [v.split(" ", 1)[1] for v in server.headers.values() if " " in v]
    return [v for v in found if len(v.strip()) >= MIN_SECRET_LENGTH]


def copilot_config_path(env: Mapping[str, str]) -> Path:
    home = env.get("COPILOT_HOME")
    if home:
        return Path(home) / CONFIG_NAME
    base = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return base / ".copilot" / CONFIG_NAME


def load_config(
    env: Mapping[str, str],
    *,
    own_config: Path | None = None,
    additional: Sequence[str] = (),
    disabled: Sequence[str] = (),
    workspace: Sequence[Path] = (),
) -> McpConfig:
    """Every source merged; ``own_config`` is loopdeck's ``mcp-config.json``;
    ``workspace``: the workspace's files to load, farthest first."""
    config = McpConfig()
    files = [copilot_config_path(env)]
    if own_config is not None:
        files.append(own_config)
    for path in files:
        _merge(config, _read_file(path, config.notices, required=False), str(path), env)
    for path in workspace:
        raw = _read_file(path, config.notices, required=False)
        _merge(config, raw, f'workspace MCP config "{path}"', env, source="workspace")
    for text in additional:
        where = "--additional-mcp-config"
        if text.startswith("@"):
            path = Path(os.path.expanduser(text[1:]))
            where = f"--additional-mcp-config {text}"
            raw = _read_file(path, config.notices, required=True)
        else:
            raw = _parse(text, where, config.notices)
        _merge(config, raw, where, env)
    for name in disabled:
        if name not in config.configured:
            config.notices.append(f"--disable-mcp-server {name}: no MCP server of that name")
        _disable(config, name)
    return config


def _read_file(path: Path, notices: list[str], *, required: bool) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            notices.append(f"MCP config {path}: no such file")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        notices.append(f"MCP config {path}: cannot read it ({exc})")
        return None
    return _parse(text, f"MCP config {path}", notices)


def _parse(text: str, where: str, notices: list[str]) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        notices.append(f"{where}: invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
        return None


def _merge(
    config: McpConfig,
    raw: Any,
    where: str,
    env: Mapping[str, str] | None,
    source: Source = "user",
) -> None:
    if raw is None:
        return
    servers = raw.get("mcpServers") if isinstance(raw, dict) else None
    if not isinstance(servers, dict):
        notices = config.notices
        if isinstance(raw, dict) and "servers" in raw:
            notices.append(
                f'{where}: has "servers" (VS Code\'s key); MCP servers go under "mcpServers"'
            )
        else:
            notices.append(f'{where}: expected an object with "mcpServers"')
        return
    for name, entry in servers.items():
        config.configured.add(name)
        try:
            server = parse_server(name, entry, env)
        except ValueError as exc:
            config.notices.append(f"{where}: MCP server {name!r}: {exc}; skipped")
            config.servers.pop(name, None)  # a broken override must not run the old entry
            continue
        if source == "workspace" and not server.sandbox:
            # A repository's own file must not free its server from the sandbox: that
            # choice is the user's, in their own configuration.
            config.notices.append(
                f'{where}: MCP server {name!r}: "sandbox": false is honoured only in your '
                "own MCP config (~/.copilot/mcp-config.json or loopdeck's); it runs sandboxed"
            )
            server = dataclasses.replace(server, sandbox=True)
        config.servers[name] = dataclasses.replace(server, source=source)


EnvValueMode = Literal["direct", "indirect"]
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def from_sdk(
    servers: Any,
    disabled: Any = None,
    *,
    mode: EnvValueMode = "direct",
    host_env: Mapping[str, str] | None = None,
) -> McpConfig:
    """The ``mcpServers`` and ``disabledMcpServers`` of an SDK app's session. The SDK
    sends values as they are meant (``envValueMode: "direct"``): nothing is expanded.
    ``"indirect"``: each ``env`` and ``headers`` value is a reference resolved from
    ``host_env`` (see :func:`sdk_server`)."""
    config = McpConfig()
    raw = servers if isinstance(servers, dict) else {}
    if mode == "indirect":
        raw = {name: _indirect(entry, host_env or {}) for name, entry in raw.items()}
    _merge(config, {"mcpServers": raw}, "mcpServers", None)
    for name in disabled if isinstance(disabled, list) else []:
        _disable(config, str(name))
    return config


def sdk_server(
    name: str,
    entry: Any,
    *,
    mode: EnvValueMode = "direct",
    host_env: Mapping[str, str] | None = None,
) -> McpServerConfig:
    """One server an SDK app sends (``session.mcp.startServer``). ``"direct"``: values
    as sent. ``"indirect"``: an ``env`` or ``headers`` value that is a variable's name
    (``GITHUB_TOKEN``) is that variable's value in ``host_env``; any other value has its
    ``$VAR`` / ``${VAR}`` expanded, as in a config file. ValueError names a bad field."""
    if mode == "indirect":
        entry = _indirect(entry, host_env or {})
    return parse_server(name, entry, None)


def _indirect(entry: Any, host_env: Mapping[str, str]) -> Any:
    if not isinstance(entry, dict):
        return entry

    def resolve(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if _NAME.match(value):
            return host_env.get(value, "")
        return expand(value, host_env)

    resolved = dict(entry)
    for key in ("env", "headers"):
        if isinstance(entry.get(key), dict):
            resolved[key] = {k: resolve(v) for k, v in entry[key].items()}
    return resolved


def _disable(config: McpConfig, name: str) -> None:
    server = config.servers.pop(name, None)
    if server is not None:
        config.disabled[name] = server


def parse_server(name: str, entry: Any, env: Mapping[str, str] | None) -> McpServerConfig:
    """One ``mcpServers`` entry; ValueError names the field that is wrong. ``env``:
    where ``${VAR}`` are looked up; None leaves values as they are."""
    if not name.strip():
        raise ValueError("the server's name is empty")
    if not isinstance(entry, dict):
        raise ValueError("the entry must be an object")
    kind = entry.get("type", "local")
    if kind not in _TYPES:
        raise ValueError(f"field 'type' must be local, stdio, http or sse, not {kind!r}")
    transport = _TYPES[kind]
    tools = _strings(entry, "tools", ["*"])
    timeout = entry.get("timeout", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
        raise ValueError(
            f"field 'timeout' must be a positive number of milliseconds, not {timeout!r}"
        )
    common: dict[str, Any] = {"name": name, "tools": tuple(tools), "timeout_ms": timeout}
    if transport == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("field 'command' is required for a local server")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("field 'cwd' must be a string")
        sandbox = entry.get("sandbox", True)
        if not isinstance(sandbox, bool):
            raise ValueError(f"field 'sandbox' (loopdeck's) must be true or false, not {sandbox!r}")
        return McpServerConfig(
            transport="stdio",
            command=expand(command, env),
            args=tuple(expand(a, env) for a in _strings(entry, "args", [])),
            env={k: expand(v, env) for k, v in _mapping(entry, "env").items()},
            cwd=expand(cwd, env) if cwd else None,
            sandbox=sandbox,
            **common,
        )
    url = entry.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"field 'url' must be an http(s) URL for a {kind} server")
    return McpServerConfig(
        transport=transport,
        url=expand(url, env),
        headers={k: expand(v, env) for k, v in _mapping(entry, "headers").items()},
        **common,
    )


def _strings(entry: dict[str, Any], key: str, default: list[str]) -> list[str]:
    value = entry.get(key, default)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"field {key!r} must be a list of strings")
    return value


def _mapping(entry: dict[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"field {key!r} must be an object of strings")
    return value


def expand(text: str, env: Mapping[str, str] | None) -> str:
    """``$VAR``, ``${VAR}`` and ``${VAR:-default}`` from ``env``; unset is empty.
    ``env`` None: ``text`` as it is."""
    if env is None:
        return text

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        value = env.get(name, "")
        if not value and match.group(2) is not None:
            return match.group(2)
        return value

    return _VARIABLE.sub(one, text)
