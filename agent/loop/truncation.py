"""The last resort when a summary cannot make the request fit: the oldest messages
dropped from what the model sees (they stay in the log), recorded as
``session.truncation`` with a warning; the newest exchange is always kept whole."""

from __future__ import annotations

from collections.abc import Callable

from agent.events.schema import EventData, SessionTruncationData, SessionWarningData
from agent.loop.history import History
from agent.models.context_window import TokenMeter, Usage


def drop_oldest(
    history: History,
    meter: TokenMeter,
    usage: Usage,
    background_threshold: float,
    emit: Callable[[EventData], object],
) -> None:
    """Drop the oldest messages (after the summary, if any) until the request is
    back under the background threshold, keeping the last message."""
    target = background_threshold * usage.window
    excess = usage.total - target
    messages = history.messages
    # As sent: a tool result cut for the model frees only what was sent of it.
    sent = history.for_model()
    start = history.summary_count()
    count = 0
    freed = 0.0
    # Always keep the last message (the prompt or the results the model must read).
    while start + count < len(messages) - 1 and freed < excess:
        freed += meter.message_tokens(sent[start + count]) * meter.ratio
        count += 1
    count = history.clean_cut(start, count)
    if start + count >= len(messages):
        # The cut took the last results with their call: the newest exchange stays
        # whole instead (the model must read what it asked for).
        keep = len(messages) - 1
        while keep > start and messages[keep].get("role") == "tool":
            keep -= 1
        count = keep - start
    if count <= 0:
        return
    dropped = sent[start : start + count]
    removed = round(sum(meter.message_tokens(m) for m in dropped) * meter.ratio)
    pre_length = len(messages)
    emit(
        SessionTruncationData(
            messages_removed_during_truncation=count,
            performed_by=History.DROP_OLDEST,
            post_truncation_messages_length=pre_length - count,
            post_truncation_tokens_in_messages=max(0, usage.messages - removed),
            pre_truncation_messages_length=pre_length,
            pre_truncation_tokens_in_messages=usage.messages,
            token_limit=usage.window,
            tokens_removed_during_truncation=removed,
        )
    )
    meter.forget(history.messages)
    emit(
        SessionWarningData(
            warning_type="context_truncated",
            message=(
                f"the conversation no longer fit the model's context window: the oldest "
                f"{count} messages were dropped from what the model sees (they stay in "
                "the log)"
            ),
        )
    )
