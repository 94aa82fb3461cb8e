"""Usage accounting: what the model calls cost, kept where replay and resume find it.

``assistant.usage`` is ephemeral (the Copilot schema says so): it reaches live
renderers only. After each one the session writes a ``session.usage_checkpoint``
with its cumulative usage per model, in the schema's ``providerModelMetrics`` shape.
A turn's own usage is the difference between the checkpoint it wrote and the one
before; the session's total is the latest checkpoint. :class:`UsageLedger` keeps the
cumulative numbers (the session writes them; resume restores them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The models are imported where they are built: the session listing reads
    # usage from plain JSON (agent/log/summary.py) and never loads them.
    from agent.events.schema import AssistantUsageData, SessionUsageCheckpointData


@dataclass(slots=True)
class UsageTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    requests: int = 0

    def plus(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cost + other.cost,
            self.requests + other.requests,
        )

    def minus(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cost - other.cost,
            self.requests - other.requests,
        )

    def covers(self, other: UsageTotals) -> bool:
        """True if every count is at least ``other``'s (cumulative totals only grow)."""
        return (
            self.input_tokens >= other.input_tokens
            and self.output_tokens >= other.output_tokens
            and self.cost >= other.cost - 1e-12
            and self.requests >= other.requests
        )


class UsageLedger:
    """Cumulative usage per model, as ``session.usage_checkpoint`` records it."""

    def __init__(self) -> None:
        self.by_model: dict[str, UsageTotals] = {}
        # The checkpoint made from the totals as they are now, if any: the session
        # folds the checkpoint it has just recorded, and rebuilding the totals from
        # it (each turn) would only give them back.
        self._made: SessionUsageCheckpointData | None = None

    def add(self, usage: AssistantUsageData) -> None:
        self._made = None
        totals = self.by_model.setdefault(usage.model, UsageTotals())
        totals.input_tokens += usage.input_tokens or 0
        totals.output_tokens += usage.output_tokens or 0
        totals.cost += usage.cost or 0.0
        totals.requests += 1

    def restore(self, checkpoint: SessionUsageCheckpointData) -> None:
        if checkpoint is not self._made:
            self.by_model = metrics_of(checkpoint)
            self._made = None

    def totals(self) -> UsageTotals:
        out = UsageTotals()
        for totals in self.by_model.values():
            out = out.plus(totals)
        return out

    def checkpoint(self) -> SessionUsageCheckpointData:
        from agent.events.schema import SessionUsageCheckpointData

        self._made = SessionUsageCheckpointData(
            total_nano_aiu=0.0,
            provider_model_metrics=[
                {
                    "modelId": model,
                    "provider": None,  # a litellm model string names its provider itself
                    "metrics": {
                        "requests": {"cost": float(t.cost), "count": t.requests},
                        "usage": {
                            "inputTokens": t.input_tokens,
                            "outputTokens": t.output_tokens,
                            "cacheReadTokens": 0,
                            "cacheWriteTokens": 0,
                        },
                    },
                }
                for model, t in self.by_model.items()
            ],
        )
        return self._made


def metrics_of(checkpoint: SessionUsageCheckpointData) -> dict[str, UsageTotals]:
    """Per-model totals of a checkpoint; entries that do not fit count as nothing."""
    return metrics_by_model(checkpoint.provider_model_metrics)


def metrics_by_model(entries: list[Any]) -> dict[str, UsageTotals]:
    """Per-model totals of ``providerModelMetrics`` entries (as the log has them)."""
    out: dict[str, UsageTotals] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        metrics = _dict(entry.get("metrics"))
        usage, requests = _dict(metrics.get("usage")), _dict(metrics.get("requests"))
        model = entry.get("modelId")
        key = model if isinstance(model, str) else ""
        out[key] = out.get(key, UsageTotals()).plus(
            UsageTotals(
                _int(usage.get("inputTokens")),
                _int(usage.get("outputTokens")),
                _float(requests.get("cost")),
                _int(requests.get("count")),
            )
        )
    return out


def totals_of(checkpoint: SessionUsageCheckpointData) -> UsageTotals:
    return totals_of_metrics(checkpoint.provider_model_metrics)


def totals_of_metrics(entries: list[Any]) -> UsageTotals:
    """The sum over models of ``providerModelMetrics`` entries."""
    out = UsageTotals()
    for totals in metrics_by_model(entries).values():
        out = out.plus(totals)
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)
