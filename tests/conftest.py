"""Shared test set-up: litellm stays offline, sessions write under a temp home."""

from __future__ import annotations

import os
import time

# Must be set before anything imports litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def loopdeck_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own LOOPDECK_HOME and config dir; none touches ~."""
    home = tmp_path / "loopdeck-home"
    monkeypatch.setenv("LOOPDECK_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("LOOPDECK_MODEL", raising=False)
    # Local times (session listings, the browser) render the same on every machine.
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield home
