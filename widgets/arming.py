"""Keys typed before a question appears do not answer it; keys typed after it do.

A question answered by single keys (a permission's y/a/n, a plan's 1/2/3, a choice
and Enter) appears while the user may still be typing in the chat prompt: a key
meant for the prompt would answer it. So each such question takes only the keys (and
pastes) that *arrived* at least :data:`ARM_DELAY` after it was first painted.

Both ends are measured where they happen, not where they are handled: the paint when
the question's lines have been rendered for the screen (the write to the terminal
follows in the same step), the key when the terminal delivered it (Textual stamps each
input event in its input thread). On a loaded machine the loop may handle a key, or run
an after-refresh callback, long after either; measuring at those points dropped keys
typed well after the question was visible.
"""

from __future__ import annotations

import math

from textual._time import get_time  # the clock Textual stamps every event with
from textual.message import Message

# Below the fastest reaction to something newly seen (~0.15–0.2 s): a key this soon after
# the paint was typed for the chat prompt, not for the question.
ARM_DELAY = 0.12  # seconds


class Arming:
    """When a question was first painted, and whether an input event answers it."""

    def __init__(self) -> None:
        self.shown_at = math.inf  # set once painted: until then nothing counts

    def painted(self) -> None:
        """Note the first paint: call it after rendering the question's lines."""
        if self.shown_at == math.inf:
            self.shown_at = get_time()

    def counts(self, event: Message) -> bool:
        """Whether ``event`` (a key or a paste) arrived once the question could be seen."""
        return event.time - self.shown_at >= ARM_DELAY

    @property
    def drawn(self) -> bool:
        return self.shown_at != math.inf

    @property
    def armed(self) -> bool:
        """Whether a key arriving now would count."""
        return get_time() - self.shown_at >= ARM_DELAY
