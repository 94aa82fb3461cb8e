"""Fixtures for the model tests."""

from __future__ import annotations

from typing import Any

import pytest

from agent.models.litellm_import import import_litellm


@pytest.fixture(scope="module")
def litellm() -> Any:
    """litellm, imported offline (tests/conftest.py sets the environment first)."""
    return import_litellm()
