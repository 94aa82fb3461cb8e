"""The summary a compaction asks the model for (:mod:`agent.loop.compaction`): the
conversation as one text, held within a share of the window, and a request for what
an agent needs to go on — the task, decisions, files touched, open items, the todo
list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.events.schema import CompactionTokensUsed
from agent.loop.history import History
from agent.models.base import COMPACTION_CALL, ModelClient, ModelReply, ProviderError
from agent.models.context_window import TokenMeter, message_text

SUMMARY_SYSTEM = (
    "You write the checkpoint summary of a coding agent's session. The conversation "
    "will be replaced by your summary: the agent will continue from it alone, so keep "
    "everything it needs and nothing else."
)
SUMMARY_REQUEST = (
    "Summarise the conversation above for the agent that will continue it. Use these "
    "sections:\n"
    "<overview>the user's task and goal, in their words where it matters</overview>\n"
    "<history>what was asked and done, in order, briefly</history>\n"
    "<work_done>files created, changed or deleted (paths), commands run and their "
    "outcome, tests and their state</work_done>\n"
    "<technical_details>decisions made and why, constraints, errors met and how they "
    "were resolved</technical_details>\n"
    "<important_files>paths and what each is for</important_files>\n"
    "<next_steps>open items, the todo list if any (with what is done), what to do "
    "next</next_steps>\n"
    "Be specific (names, paths, numbers); do not invent anything."
)
TOOL_RESULT_CHARS = 2_000  # of each tool result shown to the summarizer
SUMMARY_INPUT_SHARE = 0.6  # of the window the summarizer's input may take
CHARS_PER_TOKEN = 4  # to turn token budgets into character budgets, roughly


def summary_request(
    messages: list[dict[str, Any]],
    window: int,
    focus: str | None = None,
    count: Callable[[str], int] | None = None,
    reply_tokens: int | None = None,
) -> list[dict[str, Any]]:
    """The summarizer's messages: the conversation as one text (tool results cut),
    held within :data:`SUMMARY_INPUT_SHARE` of the window (in ``count``'s tokens when
    given: four characters a token is far too few for some scripts), then the request;
    with ``reply_tokens``, the length the summary must keep within (it is cut there)."""
    budget = int(window * SUMMARY_INPUT_SHARE)
    whole = "\n\n".join(_render(m) for m in messages)
    chars = budget * CHARS_PER_TOKEN
    text = _within(whole, chars)
    if count is not None:
        for _ in range(6):  # converges in one or two rounds: each shrinks by the excess
            tokens = count(text)
            if tokens <= budget:
                break
            chars = int(min(chars, len(text)) * budget / tokens * 0.95)
            text = _within(whole, chars)
    ask = SUMMARY_REQUEST
    if reply_tokens:
        # Said in words, which a model can judge; about 0.75 of a word a token.
        ask += f" Keep the whole summary under {max(20, reply_tokens * 3 // 4):,} words."
    if focus:
        ask += f"\n\nThe user asks the summary to focus on: {focus}"
    return [
        {"role": "system", "content": SUMMARY_SYSTEM},
        {"role": "user", "content": f"<conversation>\n{text}\n</conversation>\n\n{ask}"},
    ]


def _within(text: str, chars: int) -> str:
    """``text`` in at most about ``chars`` characters: the start (the task) and as
    much of the recent end as fits."""
    if len(text) <= chars:
        return text
    head = chars // 5
    tail = chars - head
    left_out = len(text) - head - tail
    gap = f"\n\n[… {left_out} characters of the conversation left out …]\n\n"
    return text[:head] + gap + text[len(text) - tail :]


def _render(message: dict[str, Any]) -> str:
    role = message.get("role")
    if role == "tool":
        content = str(message.get("content") or "")
        if len(content) > TOOL_RESULT_CHARS:
            content = (
                content[:TOOL_RESULT_CHARS]
                + f" [… {len(content) - TOOL_RESULT_CHARS} more characters]"
            )
        return f"[tool result]\n{content}"
    if role == "assistant":
        calls = [
            f"[calls {c.get('function', {}).get('name')}({c.get('function', {}).get('arguments')})]"
            for c in message.get("tool_calls") or []
        ]
        body = str(message.get("content") or "")
        return "Assistant: " + "\n".join([body, *calls]).strip()
    return f"{str(role).capitalize()}: {message_text(message)}"


async def summarize(
    model: ModelClient, messages: list[dict[str, Any]]
) -> tuple[str, CompactionTokensUsed | None]:
    """The summary, and what its call took as the provider reported it."""
    reply: ModelReply | None = None
    async for item in model.stream(messages, [], call_index=COMPACTION_CALL):
        if isinstance(item, ModelReply):
            reply = item
    if reply is None or not reply.text.strip():
        raise ProviderError("empty_response", "the model sent back an empty summary")
    usage = reply.usage
    used = (
        CompactionTokensUsed(
            model=model.name,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            request_count=1,
            cost=usage.cost,
        )
        if usage is not None
        else None
    )
    return reply.text.strip(), used


# Of the window, what the newest exchange may take and still be kept word for word.
KEPT_SHARE = 0.25
# A summary may take at most this share of the conversation it replaces (a summary no
# smaller than it would grow the context), and at most SUMMARY_MAX_TOKENS.
SUMMARY_SHARE = 0.5
SUMMARY_MAX_TOKENS = 4_096


def summary_cut(history: History, meter: TokenMeter, window: int) -> int:
    """How many leading messages a summary replaces. The newest exchange stays
    word for word — from the last user message (the prompt being answered), or,
    when that is far back (a long autopilot run), from the last assistant message
    and its tool results — as long as it takes at most :data:`KEPT_SHARE` of the
    window."""
    messages = history.messages
    limit = history.compactable_prefix()
    first = history.summary_count()
    budget = window * KEPT_SHARE
    for role in ("user", "assistant"):
        start = next(
            (i for i in range(limit - 1, first - 1, -1) if messages[i].get("role") == role),
            None,
        )
        if start is None or start <= first:
            continue
        kept = sum(meter.message_tokens(m) for m in messages[start:limit])
        if kept * meter.ratio <= budget:
            return start
    if limit <= first or (limit - 1 == first and messages[first].get("role") == "user"):
        return 0  # the summary alone, or the prompt being answered alone: never those
    return limit


def summary_tokens(covered: int, reply_room: int) -> int:
    """The longest summary worth having of ``covered`` tokens: smaller than they are
    (:data:`SUMMARY_SHARE`), within the reply's room in the window (the output limit
    the user gave or the model map says; 0: none kept) and :data:`SUMMARY_MAX_TOKENS`."""
    tokens = min(max(1, int(covered * SUMMARY_SHARE)), SUMMARY_MAX_TOKENS)
    return min(tokens, reply_room) if reply_room > 0 else tokens
