"""Points where an embedder can steer the loop: a prompt, each tool call, the stop.

The loop awaits these on its session's ``hooks``. :class:`LoopHooks` does nothing,
so a session nobody hooks into runs exactly as before. The SDK server implements
them by asking the connected app (``hooks.invoke``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agent.events.schema import ToolRequest
from agent.tools.base import ToolResult


@dataclass(frozen=True, slots=True)
class PromptDecision:
    """What to do with a submitted prompt. All fields optional."""

    prompt: str | None = None  # replaces the prompt
    context: str | None = None  # appended to it, for the model
    block_reason: str | None = None  # refuse it: no turn runs


@dataclass(frozen=True, slots=True)
class ToolDecision:
    """Before a tool call: allow it (no permission check), deny it, or leave it to the
    permission gate (``ask``/None); optionally with different arguments."""

    permission: Literal["allow", "deny", "ask"] | None = None
    reason: str | None = None
    arguments: dict[str, Any] | None = None  # replaces the model's arguments
    context: str | None = None  # appended to the result the model reads


@dataclass(frozen=True, slots=True)
class ToolAfterword:
    """After a tool call: a different result for the model, and/or context to add."""

    content: str | None = None  # replaces a successful result's content
    context: str | None = None


class LoopHooks:
    """No-op hooks. Subclass and override what you need; every method may await."""

    async def user_prompt_submitted(self, prompt: str) -> PromptDecision | None:
        return None

    async def pre_tool_use(self, request: ToolRequest) -> ToolDecision | None:
        return None

    async def post_tool_use(self, request: ToolRequest, result: ToolResult) -> ToolAfterword | None:
        return None

    async def agent_stop(self, *, stop_reason: str, repeated: bool) -> str | None:
        """The loop is about to stop. Return a reason to keep going instead: it becomes
        the next user message. ``repeated`` is true once a stop was already blocked."""
        return None
