"""The fault-injecting fake OpenAI server does what each behaviour says, over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_openai_server import (
    FakeOpenAIServer,
    cut_stream,
    drop_mid_text,
    drop_mid_tool_call,
    empty_body,
    empty_choices,
    hang,
    huge_reply,
    length_cut,
    malformed_tool_call,
    openai_server,
    stall,
    status,
    text,
    tool_call,
)

__all__ = ["openai_server"]  # the fixture, used below by name

KEY = "sk-fake-selftest-0123456789"
BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(headers={"Authorization": f"Bearer {KEY}"}, timeout=10) as c:
        yield c


def sse_events(response: httpx.Response) -> tuple[list[dict[str, Any]], bool]:
    """(data objects, whether [DONE] came) from an SSE response read to its end."""
    events: list[dict[str, Any]] = []
    done = False
    for line in response.iter_lines():
        if not line.startswith("data: "):
            continue
        data = line.removeprefix("data: ")
        if data == "[DONE]":
            done = True
        else:
            events.append(json.loads(data))
    return events, done


def post_stream(
    client: httpx.Client, server: FakeOpenAIServer
) -> tuple[httpx.Response, list[dict[str, Any]], bool]:
    with client.stream("POST", f"{server.base_url}/chat/completions", json=BODY) as response:
        events, done = sse_events(response)
    return response, events, done


def content_of(events: list[dict[str, Any]]) -> str:
    return "".join(
        c["delta"].get("content") or "" for e in events for c in e["choices"] if c.get("delta")
    )


def finish_reasons(events: list[dict[str, Any]]) -> list[str]:
    return [c["finish_reason"] for e in events for c in e["choices"] if c.get("finish_reason")]


def test_text_stream_with_usage_and_done(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(text("Hello there, friend.", usage=(11, 5)))
    response, events, done = post_stream(client, openai_server)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert content_of(events) == "Hello there, friend."
    assert finish_reasons(events) == ["stop"]
    assert events[-1]["usage"] == {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
    assert done
    [request] = openai_server.requests
    assert request.header("authorization") == f"Bearer {KEY}"
    assert request.json["messages"] == BODY["messages"]
    assert request.behaviour.name == "text"
    assert request.done.is_set()


def test_tool_call_arrives_in_fragments(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(tool_call("view", {"path": "notes.txt"}, call_id="call_1", fragments=4))
    _, events, done = post_stream(client, openai_server)
    deltas = [
        c["delta"]["tool_calls"][0]
        for e in events
        for c in e["choices"]
        if c["delta"].get("tool_calls")
    ]
    assert deltas[0]["id"] == "call_1" and deltas[0]["function"]["name"] == "view"
    fragments = [d["function"]["arguments"] for d in deltas if d["function"]["arguments"]]
    assert len(fragments) == 4
    assert json.loads("".join(fragments)) == {"path": "notes.txt"}
    assert finish_reasons(events) == ["tool_calls"] and done


def test_malformed_tool_call_json_is_sent_as_is(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(malformed_tool_call())
    _, events, _ = post_stream(client, openai_server)
    arguments = "".join(
        tc["function"].get("arguments") or ""
        for e in events
        for c in e["choices"]
        for tc in c["delta"].get("tool_calls") or []
    )
    with pytest.raises(ValueError):
        json.loads(arguments)


def test_queue_runs_in_order_then_the_default(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(status(503), status(502), text("third"))
    codes = [
        client.post(f"{openai_server.base_url}/chat/completions", json=BODY).status_code
        for _ in range(4)
    ]
    assert codes == [503, 502, 200, 200]
    assert [r.behaviour.name for r in openai_server.requests] == [
        "status_503",
        "status_502",
        "text",
        "text",
    ]
    assert openai_server.pending == 0


@pytest.mark.parametrize("code", [401, 429, 500, 502, 503])
def test_status_errors_have_an_openai_error_body(
    openai_server: FakeOpenAIServer, client: httpx.Client, code: int
) -> None:
    openai_server.script(status(code))
    response = client.post(f"{openai_server.base_url}/chat/completions", json=BODY)
    assert response.status_code == code
    assert "retry-after" not in response.headers
    assert response.json()["error"]["message"] == f"fake server says {code}"


def test_rate_limit_with_retry_after(openai_server: FakeOpenAIServer, client: httpx.Client) -> None:
    openai_server.script(status(429, retry_after="2"))
    response = client.post(f"{openai_server.base_url}/chat/completions", json=BODY)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"


@pytest.mark.parametrize("behaviour", [drop_mid_text(), drop_mid_tool_call()])
def test_dropped_stream_breaks_the_body(
    openai_server: FakeOpenAIServer, client: httpx.Client, behaviour: Any
) -> None:
    openai_server.script(behaviour)
    seen: list[str] = []
    with (
        pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)),
        client.stream("POST", f"{openai_server.base_url}/chat/completions", json=BODY) as response,
    ):
        for line in response.iter_lines():
            seen.append(line)
    assert any(line.startswith("data: ") for line in seen)
    assert "data: [DONE]" not in seen


def test_cut_stream_ends_cleanly_without_finish_or_done(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(cut_stream("Half an answ"))
    response, events, done = post_stream(client, openai_server)
    assert response.status_code == 200
    assert content_of(events) == "Half an answ"
    assert finish_reasons(events) == [] and not done


def test_empty_choices(openai_server: FakeOpenAIServer, client: httpx.Client) -> None:
    openai_server.script(empty_choices())
    _, events, done = post_stream(client, openai_server)
    assert events and all(e["choices"] == [] for e in events) and done


def test_empty_body(openai_server: FakeOpenAIServer, client: httpx.Client) -> None:
    openai_server.script(empty_body())
    response = client.post(f"{openai_server.base_url}/chat/completions", json=BODY)
    assert response.status_code == 200 and response.content == b""


def test_huge_reply(openai_server: FakeOpenAIServer, client: httpx.Client) -> None:
    openai_server.script(huge_reply(2 * 1024 * 1024))
    _, events, done = post_stream(client, openai_server)
    assert len(content_of(events)) == 2 * 1024 * 1024 and done


def test_length_finish_reason(openai_server: FakeOpenAIServer, client: httpx.Client) -> None:
    openai_server.script(length_cut())
    _, events, done = post_stream(client, openai_server)
    assert finish_reasons(events) == ["length"] and done


def test_hang_sends_nothing_until_released(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(hang())
    with (
        httpx.Client(timeout=httpx.Timeout(10, read=0.2)) as short,
        pytest.raises(httpx.ReadTimeout),
    ):
        short.post(f"{openai_server.base_url}/chat/completions", json=BODY)
    [request] = openai_server.requests
    assert request.blocked.wait(10)
    assert not request.done.is_set()
    openai_server.release()
    assert request.done.wait(10)


def test_stall_sends_some_chunks_then_nothing(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(stall("Thinking about"))
    with client.stream("POST", f"{openai_server.base_url}/chat/completions", json=BODY) as response:
        [request] = openai_server.wait_for_requests(1)
        assert request.blocked.wait(10)  # every chunk before the stall is written
        lines = response.iter_lines()
        received: list[dict[str, Any]] = []
        while content_of(received) != "Thinking about":
            line = next(lines)
            if line.startswith("data: "):
                received.append(json.loads(line.removeprefix("data: ")))
        assert not request.done.is_set()
        openai_server.release()
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            list(lines)
    assert request.done.wait(10)


def test_non_streaming_request_gets_one_completion(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(text("whole reply"), tool_call("grep", {"pattern": "x"}, call_id="c9"))
    body = {**BODY, "stream": False}
    first = client.post(f"{openai_server.base_url}/chat/completions", json=body).json()
    assert first["choices"][0]["message"]["content"] == "whole reply"
    assert first["choices"][0]["finish_reason"] == "stop"
    assert first["usage"]["prompt_tokens"] == 12
    second = client.post(f"{openai_server.base_url}/chat/completions", json=body).json()
    [call] = second["choices"][0]["message"]["tool_calls"]
    assert call["id"] == "c9" and json.loads(call["function"]["arguments"]) == {"pattern": "x"}


def test_wait_for_requests_wakes_on_arrival(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(hang())
    outcome: list[BaseException] = []

    def call(c: httpx.Client) -> None:
        try:
            c.post(f"{openai_server.base_url}/chat/completions", json=BODY)
        except httpx.HTTPError as exc:
            outcome.append(exc)

    with httpx.Client(timeout=10) as c:
        worker = threading.Thread(target=call, args=(c,))
        worker.start()
        [request] = openai_server.wait_for_requests(1)
        assert request.json["model"] == "fake-model"
        openai_server.release()
        worker.join(10)
        assert not worker.is_alive()
    # Released without an answer: the client sees the connection close.
    assert [type(e) for e in outcome] == [httpx.RemoteProtocolError]


def test_close_unblocks_and_joins_every_thread() -> None:
    before = set(threading.enumerate())
    server = FakeOpenAIServer().start()
    server.script(hang(), stall())
    clients = [httpx.Client(timeout=10) for _ in range(2)]
    errors: list[BaseException] = []

    def call(c: httpx.Client) -> None:
        try:
            with c.stream("POST", f"{server.base_url}/chat/completions", json=BODY) as r:
                list(r.iter_lines())
        except httpx.HTTPError as exc:
            errors.append(exc)

    workers = [threading.Thread(target=call, args=(c,)) for c in clients]
    for w in workers:
        w.start()
    for request in server.wait_for_requests(2):
        assert request.blocked.wait(10)
    server.close()
    for w in workers:
        w.join(10)
    for c in clients:
        c.close()
    assert set(threading.enumerate()) <= before
    assert len(errors) == 2  # both answers were cut off by the close


def test_unknown_route_is_404(openai_server: FakeOpenAIServer, client: httpx.Client) -> None:
    assert client.post(f"{openai_server.base_url}/embeddings", json={}).status_code == 404
    assert client.get(f"{openai_server.base_url}/models").json()["data"][0]["id"] == "fake-model"


def test_401_can_echo_the_key_it_was_sent(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(status(401, echo_key=True))
    response = client.post(f"{openai_server.base_url}/chat/completions", json=BODY)
    assert response.status_code == 401
    assert f"Incorrect API key provided: {KEY}." in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        (None, "could not parse"),
        ([], "non-empty"),
        ([{"role": "tool", "tool_call_id": "c1", "content": "x"}], "must be a response"),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function"}]},
                {"role": "user", "content": "and?"},
            ],
            "did not have response messages: c1",
        ),
    ],
)
def test_history_openai_would_refuse_gets_a_400_without_using_the_script(
    openai_server: FakeOpenAIServer, client: httpx.Client, messages: Any, problem: str
) -> None:
    openai_server.script(text("scripted"))
    url = f"{openai_server.base_url}/chat/completions"
    if messages is None:
        response = client.post(url, content=b"{not json")
    else:
        response = client.post(url, json={**BODY, "messages": messages})
    assert response.status_code == 400
    assert problem in response.json()["error"]["message"]
    assert openai_server.requests[-1].behaviour.name == "invalid_request"
    assert openai_server.pending == 1


def test_answered_tool_calls_are_accepted(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
        {"role": "user", "content": "thanks"},
    ]
    response = client.post(
        f"{openai_server.base_url}/chat/completions",
        json={**BODY, "messages": messages, "stream": False},
    )
    assert response.status_code == 200


def test_clear_drops_what_is_left_of_the_script(
    openai_server: FakeOpenAIServer, client: httpx.Client
) -> None:
    openai_server.script(status(500), status(502))
    assert client.post(f"{openai_server.base_url}/chat/completions", json=BODY).status_code == 500
    assert openai_server.clear() == 1
    assert client.post(f"{openai_server.base_url}/chat/completions", json=BODY).status_code == 200
