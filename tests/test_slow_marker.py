"""The quick subset (pytest -m "not slow") leaves out what drives the app, starts
processes or serves HTTP, and keeps the rest."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.conftest import _is_slow

TESTS = Path(__file__).resolve().parent


def test_app_process_and_server_tests_are_slow_and_the_rest_quick() -> None:
    for slow in ("app/test_app_pilot.py", "widgets/test_snapshots.py", "app/test_cli_edges.py"):
        assert _is_slow(TESTS / slow), slow
    assert _is_slow(TESTS / "models/test_provider_faults.py")  # the fake OpenAI server
    quick_ones = (
        "permissions/test_shell_rules.py",
        "loop/test_loop.py",
        "permissions/test_permissions.py",
    )
    for quick in quick_ones:
        assert not _is_slow(TESTS / quick), quick


def test_the_marker_is_declared() -> None:
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text("utf-8"))
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in markers)
