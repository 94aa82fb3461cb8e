"""The one small interface every model speaks: stream a reply for messages + tools.

A model yields :class:`TextDelta` / :class:`ReasoningDelta` while it streams and
finishes with exactly one :class:`ModelReply`. Failures are :class:`ProviderError`
with a normalised ``error_type`` so the loop can decide whether to retry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

# The provider error types the loop knows. Retryable ones get backoff: only
# failures a second try can fix (busy, broken or unreachable for a moment).
RETRYABLE_ERRORS = frozenset({"rate_limit", "server", "timeout", "connection"})
ERROR_TYPES = frozenset(
    {
        "rate_limit",
        "server",
        "timeout",
        "connection",  # the server could not be reached, or dropped the stream
        "auth",
        "context_limit",
        "bad_request",
        "empty_response",  # a 200 with no text, no reasoning and no tool calls
    }
)


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model produced it; may be malformed
    # Written in the reply's text, not as a structured call (agent/loop/text_tool_calls.py).
    from_text: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


@dataclass(frozen=True, slots=True)
class ModelReply:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None


StreamItem = TextDelta | ReasoningDelta | ModelReply

# The ``call_index`` of a summary request (agent/loop/compaction.py): not one of the
# session's turns, so a scripted model answers it with its summary, not a turn.
COMPACTION_CALL = -1


class ProviderError(Exception):
    """A model call failed. ``error_type`` is one of :data:`ERROR_TYPES`."""

    def __init__(
        self,
        error_type: str,
        message: str,
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.error_type in RETRYABLE_ERRORS


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Backoff for retryable provider errors: base * 2**attempt, capped."""

    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 20.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        return float(min(self.base_delay * (2**attempt), self.max_delay))


class ModelClient(Protocol):
    """What the loop needs from a model."""

    @property
    def name(self) -> str:
        """The model string shown to users and written to events."""
        ...

    @property
    def retry_policy(self) -> RetryPolicy: ...

    def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        call_index: int,
    ) -> AsyncIterator[StreamItem]:
        """Stream one reply. ``call_index`` is the n-th model call of the session, or
        :data:`COMPACTION_CALL` for a summary of the history."""
        ...


@runtime_checkable
class ReplyCapped(Protocol):
    """A model whose replies the session can bound: the window it was told leaves only
    so much room for the reply (see
    :attr:`agent.models.context_window.ContextLimits.sent_max_tokens`)."""

    def cap_reply(self, tokens: int | None) -> None:
        """Ask every later reply for at most ``tokens`` (None: the model's own choice)."""
        ...


@runtime_checkable
class SummaryCapped(Protocol):
    """A model whose summaries (calls with :data:`COMPACTION_CALL`) the session can
    bound apart from its replies: a summary is asked to be smaller than what it
    replaces (see :mod:`agent.compaction`)."""

    def cap_summary(self, tokens: int | None) -> None:
        """Ask later summaries for at most ``tokens`` (None: as any other reply)."""
        ...
