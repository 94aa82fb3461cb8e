"""Clocks for the app's tests: a monotonic clock that moves only when the test says, and
a fixture that shortens the prompts' arming delay (keys typed before a prompt is
painted do not answer it) for tests that are not about it."""

from __future__ import annotations

import pytest

import widgets.arming as arming


class FakeMonotonic:
    """Stands in for a ``time`` module where only ``monotonic()`` is read."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def quick_arm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that are not about the arming delay need not wait the full delay."""
    monkeypatch.setattr(arming, "ARM_DELAY", 0.05)
