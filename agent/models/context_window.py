"""How big the model's context window is, and how much of it the next request fills.

The window and the output limit come from litellm's model map (``get_model_info``)
unless the user says otherwise (``--context-window`` / ``context_window`` in
config.toml, or the scripted model's ``context_window``); a model the map does not
know gets :data:`ASSUMED_WINDOW`, marked as assumed.

The next request's size is counted with litellm's token counter, one message at a
time (a message is counted once, when it joins the history), then corrected by
what the provider reported: after each call the ratio of the reported prompt size
to the counted one scales later counts, so a tokenizer that differs from the
provider's does not let the history overflow. Until the first report, a count by a
tokenizer that is not the model's own is taken :data:`UNCALIBRATED_MARGIN` larger.

litellm is imported (through :mod:`agent.models.litellm_import`, which keeps it offline
and quiet) when the limits are first looked up or the first count is made; that takes
seconds, so it happens in :meth:`TokenMeter.load`, which callers on an event loop run
in a thread — never on the way to the first frame, never on the UI's loop.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.models.litellm_import import import_litellm

log = logging.getLogger(__name__)

ASSUMED_WINDOW = 128_000  # tokens, for a model no one told us about
MESSAGE_OVERHEAD = 4  # tokens a chat message costs beyond its content (role, framing)
# Of the window kept for the reply at most (a model whose output limit is its whole
# window, as local ones often say, must still take a prompt).
MAX_REPLY_SHARE = 1 / 3
# The reply's room in a window the user gave (a local or unknown model) when no output
# limit is given with it: a server's own default may be "until the context is full", so
# the prompt must leave room, and the reply is asked to stay within it (``max_tokens``).
# Enough for a long edit; at most a quarter of a small window.
DEFAULT_REPLY_TOKENS = 4_096
DEFAULT_REPLY_SHARE = 1 / 4

# Until the provider has reported a request's size, a count by a tokenizer that is not
# the model's own (litellm falls back to tiktoken's) is taken this much larger: the
# model's may count more, and the first request must fit all the same. Measured against
# llama.cpp's server: SmolLM2's tokenizer counts 5-11 % more than tiktoken's on prose,
# code and the templated tool definitions; models with small vocabularies count more.
UNCALIBRATED_MARGIN = 1.2
# Providers whose models litellm counts with their own tokenizer (tiktoken).
_TIKTOKEN_PROVIDERS = frozenset({"openai", "azure", "text-completion-openai"})

# A refused request was counted this much over the prompt budget, at least, once the
# refusal has corrected the count (it held more than the budget: the provider said so).
REFUSED_MARGIN = 1.05

# How providers say how many tokens a refused prompt held (OpenAI and vLLM, Anthropic,
# llama.cpp's server): the number corrects the count exactly.
_REFUSED_SIZE = re.compile(
    r"resulted in (\d[\d,]*) tokens|\((\d[\d,]*) in the messages"
    r"|prompt is too long: (\d[\d,]*) tokens|prompt contains (?:at least )?(\d[\d,]*)"
    r"|n_prompt_tokens\W{0,4}(\d+)",
    re.IGNORECASE,
)

Counter = Callable[[str], int]


def refused_prompt_tokens(detail: str) -> int | None:
    """The prompt's size in a provider's "too long" refusal, when it says."""
    found = _REFUSED_SIZE.search(detail)
    if found is None:
        return None
    number = next(group for group in found.groups() if group)
    return int(number.replace(",", ""))


@dataclass(frozen=True, slots=True)
class ContextLimits:
    window: int  # tokens the model reads at most: prompt + tools + history
    max_output: int | None = None  # tokens it writes at most, if known
    source: str = "model map"  # "model map", "config", "script" or "assumed"
    # The user gave the window or the output limit: the room kept for the reply is also
    # sent as ``max_tokens`` (see :attr:`sent_max_tokens`).
    enforce_reply_room: bool = False

    @property
    def prompt_budget(self) -> int:
        """Tokens the request may hold: the window less the reply's room. Some
        providers (Anthropic) refuse a prompt whose size plus ``max_tokens`` passes
        the window, and litellm asks for the model's whole output limit; that room
        is kept, up to :data:`MAX_REPLY_SHARE` of the window."""
        return self.window - self.reply_room

    @property
    def reply_room(self) -> int:
        """Tokens kept in the window for the reply: its output limit, up to
        :data:`MAX_REPLY_SHARE` of the window; for a window the user gave without one,
        :data:`DEFAULT_REPLY_TOKENS` (at most :data:`DEFAULT_REPLY_SHARE` of it); none
        for another window whose output limit is unknown."""
        if self.max_output:
            return min(self.max_output, int(self.window * MAX_REPLY_SHARE))
        if self.source == "config":
            return min(DEFAULT_REPLY_TOKENS, int(self.window * DEFAULT_REPLY_SHARE))
        return 0

    @property
    def sent_max_tokens(self) -> int | None:
        """``max_tokens`` every request must carry, whatever else asks for more: the
        room kept for the reply, when the user gave the window or the output limit
        (None: the model client's own choice, :attr:`reply_cap` from litellm's map)."""
        if self.enforce_reply_room and self.reply_room > 0:
            return self.reply_room
        return None

    @property
    def reply_cap(self) -> int | None:
        """``max_tokens`` to ask for when the output limit passes the room kept for
        it, so a full prompt and its reply still fit (None: the model's own limit fits)."""
        if self.max_output and self.max_output > self.reply_room:
            return self.reply_room
        return None


def limits_for(
    model: str, *, window: int | None = None, max_output: int | None = None, source: str = "config"
) -> ContextLimits:
    """The limits of ``model``: the given ``window`` if any, else litellm's map."""
    if window is not None and window > 0:
        return ContextLimits(window, max_output, source)
    found, output = _window_and_output(_model_info(model))
    output = max_output or output
    if found is None:
        return ContextLimits(ASSUMED_WINDOW, output, "assumed")
    return ContextLimits(found, output, "model map")


def reply_cap_from_map(model: str) -> int | None:
    """:attr:`ContextLimits.reply_cap` from litellm's bundled map alone: never asks a
    server (litellm's lookup does, for a local provider such as Ollama)."""
    table = import_litellm().model_cost
    info = table.get(model) or table.get(model.split("/", 1)[-1])
    if not isinstance(info, dict):
        return None
    window, output = _window_and_output(info)
    return ContextLimits(window, output).reply_cap if window else None


def _window_and_output(info: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The prompt's limit and the reply's, as litellm's map gives them."""
    window = _positive(info.get("max_input_tokens")) or _positive(info.get("max_tokens"))
    return window, _positive(info.get("max_output_tokens"))


def _model_info(model: str) -> dict[str, Any]:
    if model.startswith("scripted:"):
        return {}
    try:
        info = import_litellm().get_model_info(model)
    except Exception:  # unknown to the map: litellm raises for those
        return {}
    return dict(info) if isinstance(info, dict) else {}


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def litellm_counter(model: str) -> Counter:
    """Tokens in a text as litellm counts them for ``model`` (its tokenizer, or
    tiktoken's general one for a model it does not know)."""
    litellm = import_litellm()
    name = "gpt-4o" if model.startswith("scripted:") else model

    def count(text: str) -> int:
        if not text:
            return 0
        try:
            return int(litellm.token_counter(model=name, text=text))
        except Exception:  # a tokenizer that cannot load: estimate instead
            return estimate_tokens(text)

    return count


def uncalibrated_ratio(model: str) -> float:
    """How much larger than litellm's count to take ``model``'s requests before its
    provider has reported one: 1 for the models litellm counts with their own
    tokenizer (OpenAI's, by its bundled map), else :data:`UNCALIBRATED_MARGIN`."""
    table = import_litellm().model_cost
    info = table.get(model) or table.get(model.split("/", 1)[-1])
    provider = info.get("litellm_provider") if isinstance(info, dict) else None
    return 1.0 if provider in _TIKTOKEN_PROVIDERS else UNCALIBRATED_MARGIN


def estimate_tokens(text: str) -> int:
    """About four bytes of UTF-8 a token: the fallback when no tokenizer works. Bytes,
    not characters: a tokenizer spends a token or more on a CJK character or an
    emoji, and counting those as a quarter would let the window overflow."""
    if text.isascii():
        return math.ceil(len(text) / 4)
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message that counts against the window."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif content is not None:
        parts.append(json.dumps(content))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(str(function.get("name", "")))
        parts.append(str(function.get("arguments", "")))
    return "\n".join(parts)


@dataclass(slots=True)
class Usage:
    """The next request's size, by part, in (corrected) tokens; ``window``: what the
    request may hold (:attr:`ContextLimits.prompt_budget`)."""

    system: int
    tools: int
    messages: int
    window: int
    message_count: int

    @property
    def total(self) -> int:
        return self.system + self.tools + self.messages

    @property
    def fraction(self) -> float:
        return self.total / self.window if self.window else 0.0


class TokenMeter:
    """Counts what a request holds, caching each message's count by identity.

    ``counter`` is called lazily (litellm on first use), so building a meter is free;
    so is ``first_ratio``, the scale of counts until the provider reports one. Both,
    and the limits, may import litellm (seconds): on an event loop, run :meth:`load`
    in a thread before anything else.
    """

    def __init__(
        self,
        limits: ContextLimits | Callable[[], ContextLimits],
        counter_factory: Callable[[], Counter],
        first_ratio: Callable[[], float] | None = None,
    ) -> None:
        self._limits = limits
        self._factory = counter_factory
        self._first_ratio = first_ratio
        self.calibrated = False  # True once a provider's report has set the ratio
        self._counter: Counter | None = None
        self._counts: dict[int, tuple[dict[str, Any], int]] = {}  # id -> (message, tokens)
        self._text_cache: dict[str, int] = {}  # system prompt / tool schemas
        # The tools' schemas last counted: (the list, its items' ids, raw tokens).
        self._tools_counted: tuple[list[dict[str, Any]], tuple[int, ...], int] | None = None
        # The last conversation measured and its count, extended when it only grew
        # (it is measured before every call: a pass over all of it each time would
        # cost in proportion to the history): (messages, how many, first and last
        # one, tokens).
        self._summed: tuple[Sequence[dict[str, Any]] | None, int, object, object, int] = (
            None,
            0,
            None,
            None,
            0,
        )
        self.ratio = 1.0  # provider-reported / counted, from the last call
        self.added = 0  # raw tokens of every message counted so far: how the history grew
        self.last_counted: int | None = None  # raw count of the last request measured

    @property
    def limits(self) -> ContextLimits:
        """Looked up on first use (litellm's model map loads with litellm)."""
        if not isinstance(self._limits, ContextLimits):
            self._limits = self._limits()
        return self._limits

    @property
    def ready(self) -> bool:
        """True once the limits are looked up and the counter is loaded (measuring is
        cheap from then on)."""
        return self._counter is not None and isinstance(self._limits, ContextLimits)

    def load(self) -> None:
        """Look up the limits and load the tokenizer: what may import litellm, which
        takes seconds. Blocking: on an event loop, ``await asyncio.to_thread(meter.load)``."""
        _ = self.limits
        # A first count loads the tokenizer itself (tiktoken's tables: a second more).
        self._load_counter()("warm up")

    def _load_counter(self) -> Counter:
        if self._counter is None:
            counter = self._factory()
            if self._first_ratio is not None and not self.calibrated:
                self.ratio = self._first_ratio()
            self._counter = counter
        return self._counter

    def count_text(self, text: str) -> int:
        return self._load_counter()(text)

    def _cached_text(self, text: str) -> int:
        found = self._text_cache.get(text)
        if found is None:
            if len(self._text_cache) > 8:
                self._text_cache.clear()
            found = self._text_cache[text] = self.count_text(text)
        return found

    def message_tokens(self, message: dict[str, Any]) -> int:
        key = id(message)
        cached = self._counts.get(key)
        if cached is not None and cached[0] is message:
            return cached[1]
        tokens = self.count_text(message_text(message)) + MESSAGE_OVERHEAD
        self._counts[key] = (message, tokens)
        self.added += tokens
        return tokens

    def forget(self, keep: Sequence[dict[str, Any]]) -> None:
        """Drop counts of messages no longer in the history (after a compaction)."""
        alive = {id(m) for m in keep}
        self._counts = {k: v for k, v in self._counts.items() if k in alive}
        self._summed = (None, 0, None, None, 0)

    def conversation_tokens(self, messages: Sequence[dict[str, Any]]) -> int:
        """The raw count of ``messages``; only those appended since the last call are
        counted when the same list has only grown (its first ones are unchanged)."""
        of, done, first, last, total = self._summed
        if (
            of is not messages
            or done > len(messages)
            or (done and (messages[0] is not first or messages[done - 1] is not last))
        ):
            done, total = 0, 0
        total += sum(self.message_tokens(m) for m in messages[done:])
        edge = (messages[0], messages[-1]) if messages else (None, None)
        self._summed = (messages, len(messages), *edge, total)
        return total

    def _tool_tokens(self, tools: list[dict[str, Any]]) -> int:
        """The count of the tools' schemas, kept while the same schemas are offered: a
        registry builds its list once, and dumping it to JSON each turn cost more than
        the rest of the measure."""
        key = tuple(map(id, tools))
        kept = self._tools_counted
        if kept is not None and kept[0] is tools and kept[1] == key:
            return kept[2]
        count = self._cached_text(json.dumps(tools, sort_keys=True))
        self._tools_counted = (tools, key, count)
        return count

    def measure(
        self, system_prompt: str, tools: list[dict[str, Any]], messages: Sequence[dict[str, Any]]
    ) -> Usage:
        system = self._cached_text(system_prompt) + MESSAGE_OVERHEAD
        tool_tokens = self._tool_tokens(tools) if tools else 0
        conversation = self.conversation_tokens(messages)
        self.last_counted = system + tool_tokens + conversation
        scale = self.ratio
        return Usage(
            system=round(system * scale),
            tools=round(tool_tokens * scale),
            messages=round(conversation * scale),
            window=self.limits.prompt_budget,
            message_count=len(messages),
        )

    def refused(self, counted: int | None, budget: int, reported: int | None = None) -> None:
        """The provider refused a request counted as ``counted`` (raw) as too long:
        it held more than ``budget`` (or ``reported`` tokens, if the provider said).
        Later counts are scaled so that it would have counted over the budget: the
        correction after a call only ever learns from requests that went through."""
        if not counted:
            return
        ratio = max(self.ratio * REFUSED_MARGIN, budget / counted * REFUSED_MARGIN)
        if reported:
            ratio = max(ratio, reported / counted)
        self.ratio = ratio
        self.calibrated = True

    def correct(self, reported_prompt_tokens: int | None, counted: int | None = None) -> None:
        """Scale later counts by what the provider said a request held; ``counted``:
        what it was counted as (default: the last request measured)."""
        counted = counted or self.last_counted
        if not reported_prompt_tokens or not counted:
            return
        ratio = reported_prompt_tokens / counted
        # A wild ratio is a provider counting something else (cached prompts, say).
        if 0.5 <= ratio <= 2.0:
            self.ratio = ratio
            self.calibrated = True
