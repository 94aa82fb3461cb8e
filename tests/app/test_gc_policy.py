"""The interactive apps' collector policy: survivors of a full collection are frozen,
and thawed once the frozen heap doubles, so frozen garbage is freed in the end."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref
from collections.abc import Iterator

import pytest

from app import gc_policy
from app.gc_policy import FreezeSurvivors


class FakeNode:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture
def policy() -> Iterator[FreezeSurvivors]:
    # An app test earlier in this process installed the app's own hook: set it aside.
    others = [cb for cb in gc.callbacks if isinstance(cb, FreezeSurvivors)]
    for cb in others:
        gc.callbacks.remove(cb)
    gc.collect()
    gc.unfreeze()
    hook = FreezeSurvivors()
    hook.install()
    gc.disable()  # only the test's own collections: no automatic one in between
    try:
        yield hook
    finally:
        gc.enable()
        hook.uninstall()
        gc.unfreeze()
        gc.callbacks.extend(others)


def test_survivors_of_a_full_collection_are_frozen(policy: FreezeSurvivors) -> None:
    kept = [FakeNode() for _ in range(1_000)]
    gc.collect()
    assert gc.get_freeze_count() >= len(kept)
    assert not policy.thawed


def frozen_garbage(policy: FreezeSurvivors) -> weakref.ref[FakeNode]:
    """A cycle frozen while alive, then dropped: only a walk of everything frees it."""
    gc.collect()  # freezes what the test process holds
    policy.walked = sys.getallocatedblocks()  # ...as if the collector had just walked it all
    doomed = FakeNode()
    gone = weakref.ref(doomed)
    gc.collect()
    del doomed
    gc.collect()
    assert gone() is not None  # frozen: in a cycle, out of the collector's sight
    return gone


def test_once_the_heap_doubles_a_thaw_waits_for_the_session_to_rest(
    policy: FreezeSurvivors,
) -> None:
    """The thaw's walk of the whole heap is the longest pause of a long session: not
    in the middle of a stream, when the heap has merely doubled."""
    gone = frozen_garbage(policy)
    policy.walked = sys.getallocatedblocks() // 3  # the heap tripled since the last walk
    gc.collect()
    assert not policy.thawed and policy.thaw_due
    assert gc.get_freeze_count() > 0  # still frozen: the walk has not happened
    assert gone() is not None
    assert policy.thaw_if_due()  # the session rests
    assert gone() is None
    assert not policy.thaw_due and not policy.thawed and policy.full_walks == 1
    assert policy.walked > 0  # the new baseline: what that walk left
    assert not policy.thaw_if_due()  # nothing due any more


def test_a_due_thaw_waits_until_no_key_was_pressed_for_a_while(policy: FreezeSurvivors) -> None:
    """A key pressed during the walk of the whole heap would wait for it (0.7 s at
    10,000 tool calls): someone who just typed is likely to type again."""
    gone = frozen_garbage(policy)
    policy.walked = sys.getallocatedblocks() // 3
    gc.collect()
    assert policy.thaw_due
    policy.note_input(now=1_000.0)
    quiet = gc_policy.QUIET_BEFORE_THAW_S
    assert policy.quiet_left(now=1_000.0 + quiet / 2) == pytest.approx(quiet / 2)
    assert not policy.thaw_if_due(now=1_000.0 + quiet / 2)
    assert gone() is not None and policy.thaw_due
    assert policy.thaw_if_due(now=1_000.0 + quiet)
    assert gone() is None and not policy.thaw_due


def test_a_thaw_that_freed_little_puts_off_the_next(policy: FreezeSurvivors) -> None:
    """Frozen garbage is rare: a walk of the whole heap that frees next to nothing is
    not repeated at the next doubling, but at twice that growth."""
    gc.collect()
    policy.walked = sys.getallocatedblocks() // 3
    gc.collect()
    assert policy.thaw_due and policy.thaw_if_due()  # frees (next to) nothing
    assert policy.backoff == 2
    policy.walked = sys.getallocatedblocks() // 3  # tripled: would be due, were it not
    gc.collect()
    assert not policy.thaw_due
    policy.walked = sys.getallocatedblocks() // 5  # fivefold: over twice the doubling
    gc.collect()
    assert policy.thaw_due and not policy.thawed  # still only due, not done mid-stream
    garbage = [FakeNode() for _ in range(gc_policy.WORTH_A_THAW)]  # a walk worth it
    garbage_gone = weakref.ref(garbage[0])
    gc.collect()
    del garbage
    assert garbage_gone() is not None  # frozen
    assert policy.thaw_if_due()
    assert garbage_gone() is None and policy.backoff == 1


def test_trim_heap_runs_where_glibc_is() -> None:
    ran = gc_policy.trim_heap()
    assert ran == (sys.platform.startswith("linux") and gc_policy._malloc_trim is not False)


def test_a_heap_grown_fourfold_is_thawed_at_once(policy: FreezeSurvivors) -> None:
    """A session that never rests still gets its frozen garbage freed, later."""
    gone = frozen_garbage(policy)
    policy.walked = sys.getallocatedblocks() // (gc_policy.THAW_NOW_AT + 1)
    gc.collect()
    assert policy.thawed
    assert gc.get_freeze_count() == 0
    gc.collect()  # this one walks everything, then freezes the survivors again
    assert gone() is None
    assert not policy.thawed and policy.full_walks == 1


async def test_full_collections_run_from_the_event_loop(policy: FreezeSurvivors) -> None:
    """Run by the allocator, a full collection comes in the middle of a frame and freezes
    its temporary cycles (which hold every mounted widget); from the loop, between
    callbacks, they are garbage already."""
    full: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    policy.from_loop = True
    gc.callbacks.append(count)
    try:
        for _ in range(gc_policy.FULL_COLLECTION_EVERY):
            gc.collect(1)
        assert policy.full_scheduled and not full  # scheduled, not run inside a collection
        await asyncio.sleep(0)
        assert full == [1] and not policy.full_scheduled
    finally:
        gc.callbacks.remove(count)


def test_a_full_collection_does_not_count_the_frozen_heap(
    policy: FreezeSurvivors, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting frozen objects walks them all, scattered over the heap: a cost in every
    full collection's pause that grew with the session."""

    def walk_frozen() -> int:
        raise AssertionError("gc.get_freeze_count walks the whole frozen heap")

    monkeypatch.setattr(gc, "get_freeze_count", walk_frozen)
    doomed = [FakeNode() for _ in range(100)]
    gc.collect()
    del doomed
    gc.collect()
    policy.walked = sys.getallocatedblocks() // (gc_policy.THAW_NOW_AT + 1)  # and when it thaws
    gc.collect()
    gc.collect()
    assert policy.full_walks == 1


def test_interactive_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Middle collections are rarer than CPython's (a running turn's widgets die
    there rather than in a full collection), and full ones come every few of them."""
    monkeypatch.setattr(gc_policy, "_applied", False)
    monkeypatch.setattr(gc_policy, "_hook", None)
    monkeypatch.setattr(gc_policy.FreezeSurvivors, "install", lambda self: None)
    monkeypatch.setattr(gc, "freeze", lambda: None)
    before = gc.get_threshold()
    try:
        gc_policy.tune_for_interactive()
        _, middle, full = gc.get_threshold()
    finally:
        gc.set_threshold(*before)
    # Full collections are run from the loop; the allocator's threshold is a backstop.
    assert (middle, full) == (gc_policy.MIDDLE_COLLECTION_EVERY, gc_policy.FULL_COLLECTION_BACKSTOP)
    assert middle > 10
