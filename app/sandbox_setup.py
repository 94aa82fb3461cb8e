"""From flags and config.toml to the shell's sandbox and environment filter.

Precedence: ``--sandbox`` over ``--yolo`` (which means off) over config.toml's
``sandbox`` over the default, ``workspace-write``. Network: ``--sandbox-network``
over ``sandbox_network`` over "on in interactive mode, off in autopilot". Hidden
paths: config.toml's ``sandbox_hidden`` in place of the default list, plus each
``--sandbox-hide``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import cast

from agent.models.select import ConfigError, ConfigValues, read_config, user_config_dir
from agent.sandbox.policy import Sandbox, SandboxMode, SandboxSettings, default_hidden
from agent.sandbox.secrets import EnvFilter


class SandboxSetupError(Exception):
    """config.toml cannot be read; the message says why."""


def sandbox_config() -> ConfigValues:
    try:
        return read_config(user_config_dir(os.environ))
    except ConfigError as exc:
        raise SandboxSetupError(str(exc)) from exc


def sandbox_settings(args: argparse.Namespace | None, config: ConfigValues) -> SandboxSettings:
    flag = getattr(args, "sandbox", None)
    if flag is not None:
        mode = flag
    elif getattr(args, "yolo", False):
        mode = "off"
    else:
        mode = config.sandbox or "workspace-write"
    network_flag = getattr(args, "sandbox_network", None)
    network = {"on": True, "off": False}.get(network_flag) if network_flag else None
    if network is None:
        network = config.sandbox_network
    hidden = config.sandbox_hidden
    more = getattr(args, "sandbox_hide", None) or []
    if more:
        hidden = (*(default_hidden() if hidden is None else hidden), *more)
    return SandboxSettings(mode=cast(SandboxMode, mode), network=network, hidden=hidden)


def sandbox_setup(args: argparse.Namespace | None) -> tuple[Sandbox, EnvFilter]:
    """The session's sandbox (its workspace is set by the session) and env filter."""
    config = sandbox_config()
    add_dirs = [Path(d).expanduser().resolve() for d in getattr(args, "add_dir", None) or []]
    sandbox = Sandbox(sandbox_settings(args, config), add_dirs=add_dirs)
    env_filter = EnvFilter(include=config.shell_env_include, exclude=config.shell_env_exclude)
    return sandbox, env_filter
