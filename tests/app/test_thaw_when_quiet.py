"""The app runs a due thaw of the collector's frozen heap once its session rests and
no key was pressed for a while (app/gc_policy.py): the thaw's walk of the whole heap
blocks the loop, and a key pressed just before is likely followed by another."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app import gc_policy
from app.gc_policy import FreezeSurvivors
from tests.support.app_harness import SIZE, Harness, started, wait_idle
from tests.support.app_harness import workspace as workspace  # the fixture
from tests.support.pilot import wait_for

QUIET_S = 1.0


class FakeDueThaw(FreezeSurvivors):
    """A hook whose thaw is due; it records when it was let walk the heap."""

    def __init__(self) -> None:
        super().__init__()
        self.thaw_due = True
        self.thawed_at: list[float] = []

    def thaw_if_due(self, now: float | None = None) -> bool:
        if not self.thaw_due or self.quiet_left(now) > 0:
            return False
        self.thaw_due = False
        self.thawed_at.append(time.monotonic())
        return True


async def test_the_idle_thaw_waits_for_input_to_be_quiet(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = FakeDueThaw()
    monkeypatch.setattr(gc_policy, "_applied", True)  # not the process's real policy
    monkeypatch.setattr(gc_policy, "_hook", hook)
    monkeypatch.setattr(gc_policy, "QUIET_BEFORE_THAW_S", QUIET_S)
    h = Harness([{"text": "Hello."}], workspace)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        typed = time.monotonic()
        await pilot.press(*"hi")
        await pilot.press("enter")
        await wait_idle(pilot, h)
        await wait_for(pilot, lambda: bool(hook.thawed_at), "the thaw, once input is quiet")
        assert hook.last_input >= typed  # the keys were noted
        assert hook.thawed_at[0] - hook.last_input >= QUIET_S
        assert len(hook.thawed_at) == 1


async def test_a_session_that_comes_to_rest_gives_its_user_time_before_the_thaw(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody typed during the run (an autopilot run, a prompt from the command line):
    the quiet the thaw waits for counts from the rest, when the user is likely to
    answer, not from the last key long before."""
    hook = FakeDueThaw()
    monkeypatch.setattr(gc_policy, "_applied", True)
    monkeypatch.setattr(gc_policy, "_hook", hook)
    monkeypatch.setattr(gc_policy, "QUIET_BEFORE_THAW_S", QUIET_S)
    began = time.monotonic()
    h = Harness([{"text": "Hello."}], workspace, initial_prompt="hi")
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await wait_idle(pilot, h)
        await wait_for(pilot, lambda: bool(hook.thawed_at), "the thaw, once the rest is quiet")
        assert hook.last_input >= began  # the rest was noted; no key was pressed
        assert hook.thawed_at[0] - hook.last_input >= QUIET_S
