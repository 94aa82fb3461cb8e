"""``/context`` and ``/usage``: what fills the model's context window, by part.

The numbers are the session's own (agent/models/context_window.py): the same counts that
decide when to compact and that the status bar's ``ctx`` shows.
"""

from __future__ import annotations

from agent.loop.compaction_settings import CompactionSettings
from agent.models.context_window import ContextLimits, Usage

_SOURCES = {
    "model map": "litellm's model map",
    "config": "--context-window / config.toml",
    "script": "the script",
    "assumed": "assumed: set --context-window for this model",
}


def report(
    model: str,
    usage: Usage,
    limits: ContextLimits,
    settings: CompactionSettings,
    *,
    checkpoints: int,
    input_tokens: int,
    output_tokens: int,
    cost: float,
) -> str:
    """The text ``/context`` shows."""

    def share(tokens: int) -> str:
        return f"  {tokens / usage.window:6.1%}"

    source = _SOURCES.get(limits.source, limits.source)
    if settings.enabled:
        if settings.background:
            when = (
                f"in the background from {settings.background_threshold:.0%}, "
                f"waited for from {settings.blocking_threshold:.0%}"
            )
        else:
            when = (
                f"from {settings.background_threshold:.0%}, waited for (background compaction off)"
            )
        compaction = f"Compaction: {when}; {checkpoints} so far (/compact to do it now)"
    else:
        compaction = "Compaction: off"
    lines = [
        f"Context for {model} (window: {limits.window:,} tokens, {source})",
        *(
            [
                f"  {usage.window:,} for the request (the shares below are of it), "
                f"{limits.window - usage.window:,} kept for the reply"
            ]
            if usage.window < limits.window
            else []
        ),
        f"  system prompt  {usage.system:>9,}{share(usage.system)}",
        f"  tools          {usage.tools:>9,}{share(usage.tools)}",
        f"  messages       {usage.messages:>9,}{share(usage.messages)}"
        f"  ({usage.message_count} messages)",
        f"  total          {usage.total:>9,}{share(usage.total)}",
        compaction,
        "",
        f"Session usage: {input_tokens:,} tokens in, {output_tokens:,} out, cost ${cost:.4f}",
    ]
    return "\n".join(lines)
