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


# A test is "slow" (pytest -m "not slow" leaves it out) when its module drives the
# Textual app (Pilot, snapshots), starts processes or serves HTTP: told from the module's
# source, so a new test of that kind is marked without anyone remembering to.
_SLOW_SIGNS = ("run_test(", "snap_compare", "subprocess", "AppInPty", "openai_server")
_slow_modules: dict[str, bool] = {}


def _is_slow(path: Path) -> bool:
    key = str(path)
    if key not in _slow_modules:
        source = path.read_text("utf-8") if path.suffix == ".py" else ""
        _slow_modules[key] = any(sign in source for sign in _SLOW_SIGNS)
    return _slow_modules[key]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_slow(Path(item.path)):
            item.add_marker(pytest.mark.slow)
