"""A turn's speed: time to first token and tokens per second, live and recorded.

While a reply streams, :class:`SpeedMeter` estimates both from the events'
timestamps (``assistant.message_start`` when the call goes out, then each delta;
a streamed chunk counts as a token). When the loop's ``turn_stats`` note arrives
(agent/events/turn_notes.py) its figures, from the provider's token count, replace the
estimate; replay has only the note, so live and replayed turns end the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agent.events.turn_notes import TurnStats


@dataclass(slots=True)
class SpeedMeter:
    started_at: datetime | None = None  # the running attempt's request
    first_at: datetime | None = None
    chunks: int = 0
    ttft_seconds: float | None = None
    tokens_per_second: float | None = None
    settled: bool = False  # set from a turn_stats note

    def attempt(self, ts: datetime | None) -> None:
        """A (new) model call starts: what an earlier attempt measured no longer holds."""
        self.started_at, self.first_at, self.chunks = ts, None, 0
        self.ttft_seconds = self.tokens_per_second = None
        self.settled = False

    def token(self, ts: datetime | None, turn_started: datetime | None) -> None:
        if self.settled or ts is None:
            return
        self.chunks += 1
        if self.first_at is None:
            self.first_at = ts
            start = self.started_at or turn_started
            if start is not None and ts >= start:
                self.ttft_seconds = (ts - start).total_seconds()
            return
        span = (ts - self.first_at).total_seconds()
        if span > 0:
            self.tokens_per_second = self.chunks / span

    def settle(self, stats: TurnStats) -> None:
        self.ttft_seconds = stats.ttft_seconds
        self.tokens_per_second = stats.tokens_per_second
        self.settled = True
