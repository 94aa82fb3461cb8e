"""A :class:`~agent.models.base.ModelClient` for any model litellm can reach.

``openai/…``, ``anthropic/…``, ``ollama/…`` (with an ``api_base``),
``github_copilot/…`` and the rest all stream through ``litellm.acompletion``;
this module turns its OpenAI-shaped chunks into loopdeck's stream items and its
exceptions into :class:`ProviderError`. litellm itself is imported only when a
call is made (see :mod:`agent.models.litellm_import`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

from agent.models.base import (
    ModelReply,
    ProviderError,
    ReasoningDelta,
    RetryPolicy,
    StreamItem,
    TextDelta,
    ToolCall,
    Usage,
)
from agent.models.litellm_import import import_litellm


class LiteLLMModel:
    """Streams replies from ``model`` (a litellm model string) via litellm."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._model = model
        self._api_base = api_base
        # Passed straight to litellm.acompletion (temperature, api_key,
        # max_retries, mock_response in tests, ...).
        # The provider SDKs' own silent retries are off: the loop retries visibly
        # (assistant.turn_retry) with its own backoff.
        self._extra = {"max_retries": 0, **(extra or {})}
        self._retry_policy = RetryPolicy()

    @property
    def name(self) -> str:
        return self._model

    @property
    def retry_policy(self) -> RetryPolicy:
        return self._retry_policy

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        call_index: int,
    ) -> AsyncIterator[StreamItem]:
        # The first import takes seconds; off the event loop it cannot freeze the UI.
        litellm = await asyncio.to_thread(import_litellm)
        kwargs: dict[str, Any] = {
            **self._extra,
            "model": self._model,
            "messages": messages,
            # Some providers reject an empty tools list; None means "no tools".
            "tools": tools or None,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self._api_base is not None:
            kwargs["api_base"] = self._api_base

        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            raise self._provider_error(exc, litellm) from exc

        builder = _ReplyBuilder()
        iterator = aiter(response)
        try:
            while True:
                # Only litellm's own work sits inside this try, so a bug in the
                # assembly below is never disguised as a provider error.
                try:
                    chunk = await anext(iterator)
                except StopAsyncIteration:
                    break
                except Exception as exc:
                    raise self._provider_error(exc, litellm) from exc
                for item in builder.add(chunk):
                    yield item
        finally:
            await _close_quietly(response)

        usage = builder.usage(functools.partial(model_cost, litellm, self._model))
        yield builder.reply(call_index=call_index, usage=usage)

    def _provider_error(self, exc: Exception, litellm: ModuleType) -> ProviderError:
        return provider_error_from(
            exc,
            litellm=litellm,
            model=self._model,
            api_base=self._api_base,
            secrets=_known_secrets(self._extra, os.environ),
        )


# --- assembling a reply from chunks -----------------------------------------


@dataclass(slots=True)
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _ReplyBuilder:
    """Accumulates one streamed reply: text, reasoning, tool calls, usage."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[_PendingCall] = field(default_factory=list)
    by_index: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    raw_usage: Any = None

    def add(self, chunk: Any) -> list[StreamItem]:
        items: list[StreamItem] = []
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.raw_usage = usage
        choices = getattr(chunk, "choices", None) or []
        # n > 1 is never requested; anything past the first choice is ignored.
        choice = next((c for c in choices if getattr(c, "index", 0) == 0), None)
        if choice is None:
            return items
        if getattr(choice, "finish_reason", None):
            self.finish_reason = str(choice.finish_reason)
        delta = getattr(choice, "delta", None)
        if delta is None:
            return items
        reasoning = getattr(delta, "reasoning_content", None)
        if isinstance(reasoning, str) and reasoning:
            self.reasoning.append(reasoning)
            items.append(ReasoningDelta(reasoning))
        content = getattr(delta, "content", None)
        if isinstance(content, str) and content:
            self.text.append(content)
            items.append(TextDelta(content))
        for tool_call in getattr(delta, "tool_calls", None) or []:
            self._add_tool_call(tool_call)
        return items

    def _add_tool_call(self, delta: Any) -> None:
        call_id = getattr(delta, "id", None) or None
        function = getattr(delta, "function", None)
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None)
        slot = self._slot_for(getattr(delta, "index", None), call_id)
        if call_id and slot.id is None:
            slot.id = call_id
        # The name comes once (OpenAI) or repeated on every chunk (some
        # proxies); either way the first one is the name, never a fragment.
        if name and not slot.name:
            slot.name = name
        if isinstance(arguments, str) and arguments:
            slot.arguments.append(arguments)

    def _slot_for(self, index: int | None, call_id: str | None) -> _PendingCall:
        slot = self.by_index.get(index) if index is not None else None
        if index is None and call_id:
            slot = next((c for c in self.calls if c.id == call_id), None)
        # A different id under an index already in use means a provider that
        # numbers every parallel call 0 (seen with Gemini): it is a new call.
        if slot is not None and call_id and slot.id and slot.id != call_id:
            slot = None
        if slot is None:
            slot = _PendingCall()
            self.calls.append(slot)
        if index is not None:
            self.by_index[index] = slot
        return slot

    def usage(self, cost_of: Callable[[Any, int, int], float | None]) -> Usage | None:
        if self.raw_usage is None:
            return None
        input_tokens = _int_or_none(getattr(self.raw_usage, "prompt_tokens", None))
        output_tokens = _int_or_none(getattr(self.raw_usage, "completion_tokens", None))
        cost = None
        if input_tokens is not None and output_tokens is not None:
            cost = cost_of(self.raw_usage, input_tokens, output_tokens)
        return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost=cost)

    def reply(self, *, call_index: int, usage: Usage | None) -> ModelReply:
        tool_calls = [
            ToolCall(
                # Ollama and some others send no ids; the loop needs one to pair
                # the result with the call, unique across the whole session.
                id=call.id or f"call_{call_index}_{n}",
                name=call.name,
                arguments="".join(call.arguments),
            )
            for n, call in enumerate(c for c in self.calls if c.id or c.name or c.arguments)
        ]
        return ModelReply(
            text="".join(self.text),
            tool_calls=tool_calls,
            reasoning="".join(self.reasoning) or None,
            usage=usage,
            finish_reason=self.finish_reason,
        )


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def _close_quietly(response: Any) -> None:
    # Releases the HTTP connection when the consumer stops early (e.g. the
    # user cancels); a failure to close must not mask the real outcome.
    aclose = getattr(response, "aclose", None)
    if callable(aclose):
        with contextlib.suppress(Exception):
            await aclose()


# --- cost --------------------------------------------------------------------


def model_cost(
    litellm: ModuleType, model: str, usage: Any, input_tokens: int, output_tokens: int
) -> float | None:
    """Dollar cost of one call per litellm's bundled price map; None if unknown."""
    # Naming the provider explicitly keeps litellm from "resolving" it, which
    # for github_copilot/… starts a device-login flow over the network.
    custom_provider: str | None = None
    bare = model
    if "/" in model:
        custom_provider, bare = model.split("/", 1)
    # Only models in the bundled price map: for others litellm answers a
    # made-up 0, or (ollama) asks the model server with a blocking HTTP call.
    if model not in litellm.model_cost and bare not in litellm.model_cost:
        return None
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=bare,
            custom_llm_provider=custom_provider,
            prompt_tokens=input_tokens,
            completion_tokens=output_tokens,
            usage_object=usage if hasattr(usage, "prompt_tokens_details") else None,
        )
        return float(prompt_cost) + float(completion_cost)
    except Exception:
        return None


# --- errors --------------------------------------------------------------------

_SUMMARIES = {
    "rate_limit": "Rate limited by the provider",
    "server": "The provider had a server error",
    "timeout": "The model request timed out",
    "auth": "Authentication failed; check the API key for this provider",
    "context_limit": "The conversation no longer fits in the model's context window",
    "bad_request": "The provider rejected the request",
}


def provider_error_from(
    exc: BaseException,
    *,
    litellm: ModuleType,
    model: str,
    api_base: str | None = None,
    secrets: Iterable[str] = (),
) -> ProviderError:
    """Map a litellm (or stray) exception to a :class:`ProviderError`."""
    error_type = _classify(exc, litellm)
    summary = _SUMMARIES[error_type]
    if isinstance(exc, litellm.PermissionDeniedError):
        summary = "The provider denied access (check the key's permissions)"
    elif error_type == "server" and isinstance(exc, litellm.APIConnectionError):
        summary = "Could not connect to the provider" + (f" at {api_base}" if api_base else "")
    detail = _clean_detail(str(exc))
    message = f"{summary} ({model})" + (f": {detail}" if detail else "")
    status = getattr(exc, "status_code", None)
    return ProviderError(
        error_type,
        _redact(message, secrets),
        status_code=status if isinstance(status, int) else None,
        retry_after=_retry_after(exc) if error_type in ("rate_limit", "server") else None,
    )


def _classify(exc: BaseException, litellm: ModuleType) -> str:
    # Order matters: ContextWindowExceededError is a BadRequestError and
    # Timeout is an APIConnectionError.
    ordered: list[tuple[tuple[type[BaseException], ...], str]] = [
        ((litellm.ContextWindowExceededError,), "context_limit"),
        ((litellm.RateLimitError,), "rate_limit"),
        ((litellm.Timeout, TimeoutError), "timeout"),
        ((litellm.AuthenticationError, litellm.PermissionDeniedError), "auth"),
        (
            (
                litellm.InternalServerError,
                litellm.ServiceUnavailableError,
                litellm.BadGatewayError,
                litellm.APIConnectionError,
            ),
            "server",
        ),
        ((litellm.BadRequestError,), "bad_request"),
    ]
    for classes, error_type in ordered:
        if isinstance(exc, classes):
            return error_type
    # Generic litellm.APIError and friends still carry the HTTP status; an
    # Anthropic 529 "overloaded" must be retried, not reported as our fault.
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return "rate_limit"
        if status == 408:
            return "timeout"
        if status in (401, 403):
            return "auth"
        if status >= 500:
            return "server"
    return "bad_request"


_LITELLM_PREFIX = re.compile(r"^(?:\s*litellm\.\w+:\s*)+")
_MAX_DETAIL = 600


def _clean_detail(text: str) -> str:
    # litellm stacks "litellm.XError: litellm.XError: …" prefixes; the summary
    # already says what kind of error it is.
    detail = _LITELLM_PREFIX.sub("", text).strip()
    if len(detail) > _MAX_DETAIL:
        detail = detail[:_MAX_DETAIL].rstrip() + "…"
    return detail


# Well-known key shapes, redacted even when we don't know the exact value.
_KEY_PATTERNS = re.compile(
    r"\b(?:sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{8,}|gsk_[A-Za-z0-9]{8,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|xai-[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,})"
)
_URL_USERINFO = re.compile(r"(?<=//)[^/@\s:]+:[^/@\s]+@")
_SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET)$", re.IGNORECASE)


def _known_secrets(extra: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """Values that must never appear in an error message: keys we were given."""
    values = [v for k, v in extra.items() if _SECRET_NAME.search(k) and isinstance(v, str)]
    values += [v for k, v in env.items() if _SECRET_NAME.search(k)]
    # Short values ("1", "true") would shred the message and are no secrets.
    return [v for v in values if len(v) >= 8]


def _redact(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _KEY_PATTERNS.sub("***", text)
    return _URL_USERINFO.sub("***@", text)


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait, from Retry-After(-Ms) headers."""
    response = getattr(exc, "response", None)
    sources = [getattr(exc, "headers", None), getattr(response, "headers", None)]
    for headers in sources:
        if not headers:
            continue
        lowered = {str(k).lower(): str(v) for k, v in headers.items()}
        if "retry-after-ms" in lowered:
            try:
                return max(float(lowered["retry-after-ms"]) / 1000.0, 0.0)
            except ValueError:
                pass
        if "retry-after" in lowered:
            return _parse_retry_after(lowered["retry-after"])
    return None


def _parse_retry_after(value: str) -> float | None:
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    # The header may also be an HTTP date.
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
