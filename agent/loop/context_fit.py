"""Whether loopdeck's own part of a request (the system prompt and the tools'
definitions) leaves room for the conversation in the model's context window, and the
warning (``session.warning`` ``context_too_small``) when it does not."""

from __future__ import annotations

import json
from typing import Any

from agent.models.context_window import MESSAGE_OVERHEAD, ContextLimits, estimate_tokens

_ADVICE = (
    "Give the model server's real window with --context-window (context_window; a window "
    "of 8192 tokens or less gets the compact system prompt, or ask for it with "
    "--system-prompt compact), start the server with a larger context, or use a model "
    "with a larger window"
)


def estimated_fixed(system_prompt: str, tools: list[dict[str, Any]]) -> int:
    """The fixed part's tokens, estimated (before a tokenizer is loaded)."""
    fixed = estimate_tokens(system_prompt) + MESSAGE_OVERHEAD
    return fixed + (estimate_tokens(json.dumps(tools, sort_keys=True)) if tools else 0)


def fit_warning(fixed: int, budget: int, limits: ContextLimits) -> str:
    """What to tell when the fixed part takes ``fixed`` of the ``budget`` a request may
    hold: that nothing will fit, or that little is left for the conversation."""
    where = (
        f"the {budget:,} tokens a request may hold in a {limits.window:,}-token context "
        f"window ({limits.reply_room:,} kept for the reply)"
    )
    if fixed >= budget:
        what = (
            f"loopdeck's system prompt and tools' definitions alone take about {fixed:,} "
            f"tokens, more than {where}: no request will fit"
        )
    else:
        what = (
            f"loopdeck's system prompt and tools' definitions take about {fixed:,} of "
            f"{where}: little is left for the conversation, which will be compacted "
            "at nearly every call"
        )
    return f"{what}. {_ADVICE}"


def no_room_warning(fixed: int, window: int) -> str:
    """Nothing could be taken out of a refused request: the fixed part fills it."""
    return (
        f"the system prompt and the tools' definitions alone take about {fixed:,} "
        f"tokens of the {window:,} a request may hold in this context window: "
        "give the model server's real window with --context-window "
        "(context_window), or use a model with a larger one"
    )
