"""Clocks for the arming delay of the app's prompts (keys typed as a prompt appears do not
answer it): a monotonic clock that moves only when the test says, a fixture that puts it
behind the delay, and one that shortens the delay for tests that are not about it."""

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
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeMonotonic:
    """The prompts' arming clock, moved by hand: ``clock.now += ...``."""
    fake = FakeMonotonic()
    monkeypatch.setattr(arming, "time", fake)
    return fake


@pytest.fixture
def quick_arm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that are not about the arming delay need not wait the full delay."""
    monkeypatch.setattr(arming, "ARM_DELAY", 0.05)
