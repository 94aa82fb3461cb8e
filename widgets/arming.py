"""Keys typed just before a question appears do not answer it.

A question answered by single keys (a permission's y/a/n, a plan's 1/2/3, a choice
and Enter) appears while the user may still be typing in the chat prompt: a key
meant for the prompt would answer it. So each such question takes keys only
:data:`ARM_DELAY` after it was first drawn.
"""

from __future__ import annotations

import math
import time

from textual.message_pump import MessagePump

ARM_DELAY = 0.4  # seconds before keys count


class Arming:
    """When a question was first drawn, and whether its keys count yet."""

    def __init__(self) -> None:
        self.shown_at = math.inf  # set once drawn: until then no key counts

    def start_after_refresh(self, widget: MessagePump) -> None:
        """Start the delay once ``widget`` is drawn (call it from ``on_mount``).

        Mounted is not yet on screen: the delay counts from the first refresh, so a
        slow first draw does not use it up.
        """
        widget.call_after_refresh(self._start)

    def _start(self) -> None:
        self.shown_at = time.monotonic()

    @property
    def drawn(self) -> bool:
        return self.shown_at != math.inf

    @property
    def armed(self) -> bool:
        return time.monotonic() - self.shown_at >= ARM_DELAY
