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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from agent.models.base import (
    COMPACTION_CALL,
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
from agent.models.provider_errors import (
    CallContext,
    ended_early,
    known_secrets,
    provider_error_from,
    timeout_error,
)
from agent.models.select import provider_key_vars
from agent.models.settings import DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT

# Sent as the key when an api_base is given and no key is: local OpenAI-compatible
# servers (llama.cpp, vLLM, LM Studio, Ollama) ignore it, but the provider SDKs
# refuse to send a request without one.
PLACEHOLDER_API_KEY = "no-key-needed"


class LiteLLMModel:
    """Streams replies from ``model`` (a litellm model string) via litellm.

    Every wait is bounded: ``connect_timeout`` to connect, then ``idle_timeout``
    without data, both before the reply starts and between its chunks. They are
    passed to litellm (httpx timeouts) and also enforced here around each read,
    so a provider path that ignores them cannot hang a turn.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        retry_policy: RetryPolicy | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._model = model
        self._api_base = api_base
        self._connect_timeout = connect_timeout
        self._idle_timeout = idle_timeout
        # Passed straight to litellm.acompletion (temperature, api_key,
        # max_retries, mock_response in tests, ...).
        # The provider SDKs' own silent retries are off: the loop retries visibly
        # (assistant.turn_retry) with its own backoff.
        self._extra = {"max_retries": 0, **(extra or {})}
        self._retry_policy = retry_policy or RetryPolicy()
        self._cap: int | None = None  # max_tokens to send, once looked up
        self._cap_known = False
        # The session's bound on the reply (a window the user gave): wins over all else.
        self._session_cap: int | None = None
        # The session's bound on a summary (calls with COMPACTION_CALL), within the above.
        self._summary_cap: int | None = None

    @property
    def name(self) -> str:
        return self._model

    @property
    def retry_policy(self) -> RetryPolicy:
        return self._retry_policy

    @property
    def api_base(self) -> str | None:
        return self._api_base

    def cap_reply(self, tokens: int | None) -> None:
        """Ask each reply for at most ``tokens``, even over ``max_tokens`` in ``extra``:
        the session kept only that much of the window for it."""
        self._session_cap = tokens if tokens is not None and tokens > 0 else None

    def cap_summary(self, tokens: int | None) -> None:
        """Ask each summary for at most ``tokens`` (within :meth:`cap_reply`'s bound)."""
        self._summary_cap = tokens if tokens is not None and tokens > 0 else None

    @property
    def connect_timeout(self) -> float:
        return self._connect_timeout

    @property
    def idle_timeout(self) -> float:
        return self._idle_timeout

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        call_index: int,
    ) -> AsyncIterator[StreamItem]:
        # The first import takes seconds; off the event loop it cannot freeze the UI.
        litellm = await asyncio.to_thread(import_litellm)
        kwargs = self._request(messages, tools, summary=call_index == COMPACTION_CALL)

        try:
            # Connecting, sending and waiting for the response headers.
            async with asyncio.timeout(self._connect_timeout + self._idle_timeout):
                response = await litellm.acompletion(**kwargs)
        except TimeoutError:
            raise timeout_error(self._context("request")) from None
        except Exception as exc:
            raise self._provider_error(exc, litellm, "request") from exc

        builder = _ReplyBuilder()
        iterator = aiter(response)
        phase = "request"  # until the first chunk: the wait for the reply to start
        try:
            while True:
                # Only litellm's own work sits inside this try, so a bug in the
                # assembly below is never disguised as a provider error.
                try:
                    async with asyncio.timeout(self._idle_timeout):
                        chunk = await anext(iterator)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise timeout_error(self._context(phase)) from None
                except Exception as exc:
                    if ended_early(exc) and builder.empty:
                        # Closed cleanly with nothing in it: an empty reply, not a drop.
                        raise _empty_reply(self._model, None) from exc
                    raise self._provider_error(exc, litellm, phase) from exc
                phase = "stream"
                for item in builder.add(chunk):
                    yield item
        finally:
            await _close_quietly(response)

        usage = builder.usage(functools.partial(model_cost, litellm, self._model))
        reply = builder.reply(call_index=call_index, usage=usage)
        if builder.empty:
            raise _empty_reply(self._model, reply.finish_reason)
        yield reply

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, summary: bool = False
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            **self._extra,
            "model": self._model,
            "messages": messages,
            # Some providers reject an empty tools list; None means "no tools".
            "tools": tools or None,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # Loaded with litellm already; imported here to stay off the first frame.
        import httpx

        # read/write/pool: the idle limit; litellm turns it into a plain number
        # for providers whose client takes no httpx.Timeout.
        timeout = httpx.Timeout(self._idle_timeout, connect=self._connect_timeout)
        kwargs.setdefault("timeout", timeout)
        bound = self._session_cap
        if summary and self._summary_cap is not None:
            bound = min(bound, self._summary_cap) if bound is not None else self._summary_cap
        if bound is not None:
            # The prompt was sized to leave exactly this much: more would pass the window.
            key = "max_completion_tokens" if "max_completion_tokens" in kwargs else "max_tokens"
            asked = kwargs.get(key)
            kwargs[key] = min(asked, bound) if isinstance(asked, int) and asked > 0 else bound
            cap = None
        else:
            cap = self._reply_cap()
        if cap is not None and "max_completion_tokens" not in kwargs:
            # litellm asks some providers for the model's whole output limit; a prompt
            # filling its budget plus that would pass the window and be refused.
            kwargs.setdefault("max_tokens", cap)
        if self._api_base is not None:
            kwargs["api_base"] = self._api_base
            if self._needs_placeholder_key():
                kwargs["api_key"] = PLACEHOLDER_API_KEY
        return kwargs

    def _reply_cap(self) -> int | None:
        if self._api_base is not None:
            return None  # a server of one's own: the map's limits are not its model's
        if not self._cap_known:
            from agent.models.context_window import reply_cap_from_map

            self._cap = reply_cap_from_map(self._model)
            self._cap_known = True
        return self._cap

    def _needs_placeholder_key(self) -> bool:
        """A local server with no key in sight: only then, never over a real key."""
        if self._extra.get("api_key"):
            return False
        names = provider_key_vars(self._model)
        # An unknown provider may read a key from a variable we don't know of.
        return bool(names) and not any(os.environ.get(name, "").strip() for name in names)

    def _context(self, phase: str) -> CallContext:
        return CallContext(
            self._model, self._api_base, self._connect_timeout, self._idle_timeout, phase
        )

    def _provider_error(self, exc: Exception, litellm: ModuleType, phase: str) -> ProviderError:
        return provider_error_from(
            exc,
            litellm=litellm,
            model=self._model,
            api_base=self._api_base,
            secrets=known_secrets(self._extra, os.environ),
            connect_timeout=self._connect_timeout,
            idle_timeout=self._idle_timeout,
            phase=phase,
        )


def _empty_reply(model: str, finish_reason: str | None) -> ProviderError:
    if finish_reason == "length":
        why = "it hit its output limit before writing anything"
    else:
        why = "no text and no tool calls"
    return ProviderError("empty_response", f"The model returned an empty reply ({model}): {why}.")


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

    @property
    def empty(self) -> bool:
        """Nothing the user or the loop could use: no text, reasoning or tool call."""
        return not (
            any(self.text)
            or any(self.reasoning)
            or any(c.id or c.name or c.arguments for c in self.calls)
        )

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
