"""``/context`` and ``/usage``: what fills the model's context window, by part.

Token counts come from litellm's counter (the model's own tokenizer when litellm
knows it, a generic one otherwise), imported only when asked: never on the way to
the first frame.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ContextUse:
    model: str
    system_tokens: int
    tools_tokens: int
    messages_tokens: int
    messages: int
    window: int | None  # the model's input limit, when litellm knows it

    @property
    def total(self) -> int:
        return self.system_tokens + self.tools_tokens + self.messages_tokens


def measure(
    model: str, system_prompt: str, tools: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> ContextUse:
    """Count the tokens of each part. Slow the first time (imports litellm): call it
    off the UI's loop."""
    import litellm

    litellm.suppress_debug_info = True  # no "Provider List" banner for unknown models

    def count(text: str) -> int:
        return int(litellm.token_counter(model=model, text=text)) if text else 0

    messages_tokens = int(litellm.token_counter(model=model, messages=messages)) if messages else 0
    window: int | None
    try:
        info = litellm.get_model_info(model)
        window = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:  # an unknown model: no window to compare with
        window = None
    return ContextUse(
        model=model,
        system_tokens=count(system_prompt),
        tools_tokens=count(json.dumps(tools)) if tools else 0,
        messages_tokens=messages_tokens,
        messages=len(messages),
        window=int(window) if window else None,
    )


def report(use: ContextUse, *, input_tokens: int, output_tokens: int, cost: float) -> str:
    """The text ``/context`` shows."""

    def share(tokens: int) -> str:
        return f"  {tokens / use.window:6.1%}" if use.window else ""

    window = f"{use.window:,} tokens" if use.window else "unknown"
    lines = [
        f"Context for {use.model} (window: {window})",
        f"  system prompt  {use.system_tokens:>9,}{share(use.system_tokens)}",
        f"  tools          {use.tools_tokens:>9,}{share(use.tools_tokens)}",
        f"  messages       {use.messages_tokens:>9,}{share(use.messages_tokens)}"
        f"  ({use.messages} messages)",
        f"  total          {use.total:>9,}{share(use.total)}",
        "",
        f"Session usage: {input_tokens:,} tokens in, {output_tokens:,} out, cost ${cost:.4f}",
    ]
    return "\n".join(lines)
