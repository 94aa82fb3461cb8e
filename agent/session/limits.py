"""The context window of a session's model, and the meter that measures requests
against it: the window and output limit the user gave (config, flag, SDK), else what
a scripted model claims, else litellm's model map (:mod:`agent.models.context_window`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from agent.models.base import ModelClient
from agent.models.context_window import (
    ContextLimits,
    Counter,
    TokenMeter,
    estimate_tokens,
    limits_for,
    litellm_counter,
    uncalibrated_ratio,
)


class SessionLimits:
    """The overrides, and a fresh meter for the model the session uses now."""

    def __init__(self, model: Callable[[], ModelClient]) -> None:
        self._model = model
        self.window: int | None = None  # tokens, given by the user
        self.max_output: int | None = None  # the reply's room, given by the user

    def limits(self) -> ContextLimits:
        model, output = self._model(), self.max_output
        if self.window is not None:
            return ContextLimits(self.window, output, "config", enforce_reply_room=True)
        scripted = getattr(model, "context_window", None)
        if isinstance(scripted, int) and scripted > 0:
            return ContextLimits(scripted, output, "script", enforce_reply_room=bool(output))
        found = limits_for(model.name, max_output=output)
        return dataclasses.replace(found, enforce_reply_room=True) if output else found

    def known_window(self) -> int | None:
        """The window the user gave, or a scripted model claims; None when only
        litellm's map could tell (not looked up here: it loads litellm)."""
        if self.window is not None:
            return self.window
        scripted = getattr(self._model(), "context_window", None)
        return scripted if isinstance(scripted, int) and scripted > 0 else None

    def new_meter(self) -> TokenMeter:
        """A meter for the model now: its window, output limit and tokenizer, and no
        correction learnt from another provider's counts. Looks nothing up yet."""
        return TokenMeter(self.limits, self._token_counter, self._first_ratio)

    def _first_ratio(self) -> float:
        # A scripted model's counts are the estimate's own: nothing to allow for.
        name = self._model().name
        if name.startswith("scripted:"):
            return 1.0
        return uncalibrated_ratio(name)

    def _token_counter(self) -> Counter:
        # A scripted model has no tokenizer, and must not pull in litellm (seconds).
        name = self._model().name
        if name.startswith("scripted:"):
            return estimate_tokens
        return litellm_counter(name)
