"""The user's config file in tests: tests/conftest.py points XDG_CONFIG_HOME at
``tmp_path/config``, so loopdeck reads ``tmp_path/config/loopdeck/config.toml``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_config(tmp_path: Path, config: str | dict[str, Any]) -> Path:
    """Write the config.toml loopdeck reads: TOML text, or top-level ``key = value``
    lines from a dict (each value as JSON, which TOML reads alike for strings, numbers
    and booleans). Returns its path."""
    if isinstance(config, dict):
        config = "\n".join(f"{key} = {json.dumps(value)}" for key, value in config.items()) + "\n"
    path = tmp_path / "config" / "loopdeck" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config, encoding="utf-8")
    return path
