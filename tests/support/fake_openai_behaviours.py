"""Scripted behaviours for :class:`tests.support.fake_openai_server.FakeOpenAIServer`.

Each builder returns a :class:`Behaviour`: what the server does with one request, from a
healthy streamed reply to each fault a real provider has been seen to commit.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Literal

End = Literal["done", "cut", "drop", "stall"]
MODEL = "fake-model"


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request.

    ``kind``: ``stream`` (SSE events, then ``end``), ``status`` (an HTTP error with a
    JSON body), ``empty`` (200 with an empty body) or ``hang`` (read the request, never
    answer). For a non-streaming request a ``stream`` behaviour is folded into one JSON
    completion (``drop``/``stall`` still apply: the body is cut or never finished).
    """

    name: str
    kind: Literal["stream", "status", "empty", "hang"] = "stream"
    events: tuple[dict[str, Any], ...] = ()
    end: End = "done"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    # The server puts the bearer token it received where this marker is, as real
    # servers do in "Incorrect API key provided: …"; the client must redact it.
    echo_key: bool = False


KEY_MARKER = "@@BEARER@@"


# --- building blocks -----------------------------------------------------------


def _chunk(delta: dict[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    )
    return {"object": "chat.completion.chunk", "model": MODEL, "choices": choices}


def _usage_chunk(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "model": MODEL,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _text_events(text: str, pieces: int) -> list[dict[str, Any]]:
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": part}) for part in _split(text, pieces)]
    return events


def _tool_call_events(
    name: str, arguments: str, call_id: str, fragments: int
) -> list[dict[str, Any]]:
    first = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    events = [_chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    for part in _split(arguments, fragments):
        events.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
    return events


# --- behaviours ------------------------------------------------------------------


def text(
    content: str = "Hello from the fake server.",
    *,
    pieces: int = 4,
    usage: tuple[int, int] | None = (12, 7),
    finish_reason: str = "stop",
    name: str = "text",
) -> Behaviour:
    """A normal streamed text reply, a finish_reason, a usage chunk and ``[DONE]``."""
    events = [*_text_events(content, pieces), _chunk({}, finish_reason)]
    if usage is not None:
        events.append(_usage_chunk(*usage))
    return Behaviour(name, events=tuple(events))


def tool_call(
    name: str,
    arguments: str | dict[str, Any],
    *,
    call_id: str | None = None,
    fragments: int = 5,
    usage: tuple[int, int] | None = (20, 9),
    behaviour_name: str = "tool_call",
) -> Behaviour:
    """One tool call whose arguments arrive in ``fragments`` pieces (raw text is sent as is)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    events = _tool_call_events(name, raw, call_id or f"call_{uuid.uuid4().hex[:12]}", fragments)
    events.append(_chunk({}, "tool_calls"))
    if usage is not None:
        events.append(_usage_chunk(*usage))
    return Behaviour(behaviour_name, events=tuple(events))


def malformed_tool_call(name: str = "view") -> Behaviour:
    """A tool call whose arguments are not valid JSON."""
    return tool_call(name, '{"path": "notes.txt", ', behaviour_name="malformed_tool_call")


def status(
    code: int,
    *,
    retry_after: str | None = None,
    message: str | None = None,
    echo_key: bool = False,
) -> Behaviour:
    """An HTTP error with an OpenAI-shaped JSON error body (and optionally Retry-After).

    ``echo_key``: the message quotes the API key the request carried, as OpenAI's 401 does.
    """
    kinds = {401: "invalid_request_error", 429: "rate_limit_exceeded"}
    if echo_key:
        message = f"Incorrect API key provided: {KEY_MARKER}. You can find your API key at …"
    error = {
        "message": message or f"fake server says {code}",
        "type": kinds.get(code, "server_error"),
        "code": None,
    }
    headers = (("Retry-After", retry_after),) if retry_after is not None else ()
    suffix = f"_retry_after_{retry_after}" if retry_after is not None else ""
    return Behaviour(
        f"status_{code}{suffix}",
        kind="status",
        status=code,
        headers=headers,
        body=json.dumps({"error": error}).encode(),
        echo_key=echo_key,
    )


def drop_mid_text(before: str = "The answer is") -> Behaviour:
    """Some text streams, then the connection closes mid-body."""
    return Behaviour("drop_mid_text", events=tuple(_text_events(before, 3)), end="drop")


def drop_mid_tool_call() -> Behaviour:
    """A tool call's first fragments stream, then the connection closes mid-body."""
    events = _tool_call_events("view", '{"path": "no', "call_dropped", 2)
    return Behaviour("drop_mid_tool_call", events=tuple(events), end="drop")


def cut_stream(before: str = "Half an answ") -> Behaviour:
    """The body ends cleanly, but with no finish_reason and no ``[DONE]``."""
    return Behaviour("cut_stream", events=tuple(_text_events(before, 3)), end="cut")


def empty_choices() -> Behaviour:
    """A stream whose every chunk has ``choices: []`` (then ``[DONE]``)."""
    return Behaviour("empty_choices", events=(_chunk(None), _chunk(None)))


def empty_body() -> Behaviour:
    """HTTP 200 with an empty body (and an event-stream content type)."""
    return Behaviour("empty_body", kind="empty")


def huge_reply(size: int = 2 * 1024 * 1024, piece: int = 16 * 1024) -> Behaviour:
    """A text reply of ``size`` characters in ``piece``-sized chunks."""
    line = "All work and no play makes a long reply. "
    content = (line * (size // len(line) + 1))[:size]
    return text(content, pieces=-(-size // piece), usage=(15, size // 4), name="huge_reply")


def hang() -> Behaviour:
    """Accept and read the request, never send a byte back."""
    return Behaviour("hang", kind="hang")


def stall(before: str = "Thinking about") -> Behaviour:
    """Headers and a few chunks, then nothing (the connection stays open)."""
    return Behaviour("stall", events=tuple(_text_events(before, 3)), end="stall")


def length_cut(content: str = "This reply was cut by the token cap") -> Behaviour:
    """A complete stream whose finish_reason is ``length``."""
    return text(content, finish_reason="length", name="length_cut")


def invalid_request(reason: str) -> Behaviour:
    """OpenAI's 400 for a request it will not take (the server picks this itself)."""
    body = {"error": {"message": reason, "type": "invalid_request_error", "code": None}}
    return Behaviour("invalid_request", kind="status", status=400, body=json.dumps(body).encode())
