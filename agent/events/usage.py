"""The model's context and what its calls cost: compaction, truncation, usage."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agent.events.base import EventData

CompactionTrigger = Literal[
    "threshold", "context_limit_retry", "manual", "memory_pressure", "model_switch"
]


class SessionCompactionStartData(EventData):
    """A summary of the older history is being made (see agent/loop/compaction.py)."""

    TYPE = "session.compaction_start"
    current_tokens: int | None = None
    token_limit: int | None = None
    system_tokens: int | None = None
    conversation_tokens: int | None = None
    tool_definitions_tokens: int | None = None
    # A CompactionTrigger when loopdeck writes it; Copilot's logs also say "auto".
    trigger: str | None = None
    compaction_attempt_id: str | None = None


class CompactionTokensUsed(EventData):
    """What the summary call took (the schema's ``compactionTokensUsed``)."""

    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    request_count: int | None = None
    cost: float | None = None  # loopdeck's own: the schema counts cost in other units


class SessionCompactionCompleteData(EventData):
    """The summary is made (or not): on success it stands in for the first
    ``messages_removed`` messages of the model's history from here on."""

    TYPE = "session.compaction_complete"
    success: bool
    error: str | None = None
    messages_removed: int | None = None
    summary_content: str | None = None
    pre_compaction_tokens: int | None = None
    post_compaction_tokens: int | None = None
    pre_compaction_messages_length: int | None = None
    tokens_removed: int | None = None
    token_limit: int | None = None
    checkpoint_number: int | None = None
    trigger: str | None = None  # as on session.compaction_start
    compaction_attempt_id: str | None = None
    model: str | None = None
    compaction_tokens_used: CompactionTokensUsed | None = None


class SessionTruncationData(EventData):
    """Messages dropped from the start of the model's history (the oldest turns,
    when a summary could not be made), or oversized content cut."""

    TYPE = "session.truncation"
    messages_removed_during_truncation: int
    performed_by: str
    post_truncation_messages_length: int
    post_truncation_tokens_in_messages: int
    pre_truncation_messages_length: int
    pre_truncation_tokens_in_messages: int
    token_limit: int
    tokens_removed_during_truncation: int


class SessionUsageInfoData(EventData):
    """How full the model's context window is, sent before each model call."""

    TYPE = "session.usage_info"
    EPHEMERAL = True
    current_tokens: int
    messages_length: int
    token_limit: int
    system_tokens: int | None = None
    conversation_tokens: int | None = None
    tool_definitions_tokens: int | None = None
    is_initial: bool | None = None


class SessionUsageCheckpointData(EventData):
    """The session's usage so far, per model (cumulative): the persisted record of
    what ``assistant.usage`` (ephemeral) reported, read back by replay and resume.

    Each ``providerModelMetrics`` entry is ``{modelId, provider, metrics: {requests:
    {cost, count}, usage: {inputTokens, outputTokens, cacheReadTokens,
    cacheWriteTokens}}}`` (see agent/events/usage_ledger.py).
    """

    TYPE = "session.usage_checkpoint"
    total_nano_aiu: float = 0.0  # Copilot's billing unit; loopdeck bills none
    provider_model_metrics: list[dict[str, Any]] = Field(default_factory=list)


class AssistantUsageData(EventData):
    TYPE = "assistant.usage"
    EPHEMERAL = True
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    duration: float | None = None  # milliseconds, the whole call
    time_to_first_token_ms: float | None = None
