"""When the context is compacted: the SDK's ``infinite_sessions`` (``enabled`` and the
two thresholds, as fractions of the window) and whether a summary may run beside the
turn, read from an SDK app's or config.toml's keys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """The SDK's ``infinite_sessions``: ``enabled``, ``background_compaction_threshold``
    and ``buffer_exhaustion_threshold``, as fractions of the context window."""

    enabled: bool = True
    background_threshold: float = 0.80
    blocking_threshold: float = 0.95
    # The summary runs while the turn goes on. Off, the call at the background threshold
    # waits for it: a server that serves one request at a time (llama.cpp's, by
    # default) would hold the turn's request behind the summary until it timed out.
    background: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.background_threshold <= self.blocking_threshold <= 1:
            raise ValueError(
                "compaction thresholds must satisfy 0 < background <= blocking <= 1 "
                f"(got {self.background_threshold} and {self.blocking_threshold})"
            )


def settings_from(values: dict[str, Any] | None) -> CompactionSettings:
    """Settings from the SDK's ``infiniteSessions`` (camelCase) or config keys."""
    if not values:
        return CompactionSettings()
    get: Callable[..., Any] = values.get
    enabled = get("enabled", True)
    background = get("backgroundCompactionThreshold", get("background_compaction_threshold"))
    blocking = get("bufferExhaustionThreshold", get("buffer_exhaustion_threshold"))
    defaults = CompactionSettings()
    return CompactionSettings(
        enabled=bool(enabled),
        background_threshold=float(background)
        if background is not None
        else defaults.background_threshold,
        blocking_threshold=float(blocking) if blocking is not None else defaults.blocking_threshold,
    )
