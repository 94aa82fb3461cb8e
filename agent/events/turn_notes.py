"""What loopdeck records about a turn's model call beyond the Copilot event types.

The schema has no persisted field for a call's speed (``assistant.usage`` carries
``timeToFirstTokenMs`` and ``duration`` but is ephemeral) nor for the text of an
attempt the provider cut off (only ephemeral deltas carried it). Both go into the
schema's own extension point, ``session.custom_notification`` with ``source:
"loopdeck"``, so replay and export show what the live timeline showed:

* ``turn_stats`` (after each reply): ``{timeToFirstTokenMs, durationMs,
  outputTokens, streamedChunks}``, subject ``{turnId, messageId}``;
* ``attempt_cut`` (when a call fails after streaming text): ``{attempt, content,
  contentLength}``, subject ``{turnId, messageId}``; ``content`` keeps at most
  :data:`CUT_KEEP` characters.

:class:`StreamClock` measures a call from the timestamps of the events the loop
emits for it, so the live numbers and the recorded ones are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent.events.schema import SessionCustomNotificationData

SOURCE = "loopdeck"
TURN_STATS = "turn_stats"
ATTEMPT_CUT = "attempt_cut"
VERSION = 1
CUT_KEEP = 2000  # characters of a cut attempt kept (and shown): enough to recognise it


@dataclass(frozen=True, slots=True)
class TurnStats:
    ttft_ms: float | None  # request sent -> first streamed token (text or reasoning)
    duration_ms: float | None  # request sent -> reply complete
    output_tokens: int | None
    chunks: int  # streamed deltas

    @property
    def ttft_seconds(self) -> float | None:
        return None if self.ttft_ms is None else self.ttft_ms / 1000

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens over the time from the first token to the end of the reply
        (streamed chunks stand in when the provider reports no usage)."""
        if self.ttft_ms is None or self.duration_ms is None:
            return None
        seconds = (self.duration_ms - self.ttft_ms) / 1000
        count = self.output_tokens if self.output_tokens is not None else self.chunks
        return count / seconds if seconds > 0 and count > 0 else None


@dataclass(frozen=True, slots=True)
class CutAttempt:
    attempt: int  # 1-based
    content: str  # at most CUT_KEEP characters
    length: int  # characters the attempt streamed


def cap_cut(text: str) -> str:
    return text if len(text) <= CUT_KEEP else text[:CUT_KEEP] + "…"


class StreamClock:
    """Times one model call from its events' timestamps (ISO 8601)."""

    def __init__(self, started: str) -> None:
        self.started = started
        self.first: str | None = None
        self.chunks = 0

    def token(self, stamp: str) -> None:
        if self.first is None:
            self.first = stamp
        self.chunks += 1

    def stats(self, ended: str, output_tokens: int | None) -> TurnStats:
        return TurnStats(
            ttft_ms=_ms(self.started, self.first),
            duration_ms=_ms(self.started, ended),
            output_tokens=output_tokens,
            chunks=self.chunks,
        )


def turn_stats_note(
    turn_id: str, message_id: str, stats: TurnStats
) -> SessionCustomNotificationData:
    payload: dict[str, Any] = {"streamedChunks": stats.chunks}
    for key, value in (
        ("timeToFirstTokenMs", stats.ttft_ms),
        ("durationMs", stats.duration_ms),
        ("outputTokens", stats.output_tokens),
    ):
        if value is not None:
            payload[key] = value
    return SessionCustomNotificationData(
        source=SOURCE,
        name=TURN_STATS,
        version=VERSION,
        subject={"turnId": turn_id, "messageId": message_id},
        payload=payload,
    )


def attempt_cut_note(
    turn_id: str, message_id: str, attempt: int, text: str
) -> SessionCustomNotificationData:
    return SessionCustomNotificationData(
        source=SOURCE,
        name=ATTEMPT_CUT,
        version=VERSION,
        subject={"turnId": turn_id, "messageId": message_id},
        payload={"attempt": attempt, "content": cap_cut(text), "contentLength": len(text)},
    )


def read_note(note: SessionCustomNotificationData) -> TurnStats | CutAttempt | None:
    """loopdeck's notes as values; ``None`` for any other (or a malformed) one."""
    payload = note.payload
    if note.source != SOURCE or not isinstance(payload, dict):
        return None
    if note.name == TURN_STATS:
        return TurnStats(
            ttft_ms=_number(payload.get("timeToFirstTokenMs")),
            duration_ms=_number(payload.get("durationMs")),
            output_tokens=_count(payload.get("outputTokens")),
            chunks=_count(payload.get("streamedChunks")) or 0,
        )
    if note.name == ATTEMPT_CUT:
        content = payload.get("content")
        if not isinstance(content, str):
            return None
        attempt = _count(payload.get("attempt")) or 1
        length = _count(payload.get("contentLength"))
        return CutAttempt(attempt, cap_cut(content), len(content) if length is None else length)
    return None


def turn_of(note: SessionCustomNotificationData) -> str | None:
    turn_id = (note.subject or {}).get("turnId")
    return turn_id if isinstance(turn_id, str) else None


def _ms(start: str, end: str | None) -> float | None:
    if end is None:
        return None
    try:
        delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except (TypeError, ValueError):
        return None
    ms = delta.total_seconds() * 1000
    return round(ms, 3) if ms >= 0 else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
