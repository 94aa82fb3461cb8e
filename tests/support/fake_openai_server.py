"""FakeOpenAIServer: a real HTTP server that speaks OpenAI's chat completions, badly on cue.

It listens on 127.0.0.1 (a free port) in a background thread, so in-process clients
(litellm in the test's event loop) and subprocesses (``loopdeck -p``) reach it alike.
Each request to ``POST /v1/chat/completions`` takes the next :class:`Behaviour` from a
queue the test scripted (``server.script(status(503), status(503), text("ok"))`` fails
twice, then succeeds); once the queue is empty, ``default`` answers. Every request is
recorded with its headers and JSON body, so tests can check what the client sent.

Streaming replies are Server-Sent Events in chunked transfer encoding, so a stream that
is *dropped* (the connection closed mid-body) is distinguishable from one that is *cut*
(the body ends cleanly but without a finish_reason or ``[DONE]``). Behaviours that
block (``hang``, ``stall``) wait until the test calls :meth:`FakeOpenAIServer.release`
or the server closes, and never longer than ``max_block`` seconds, so nothing outlives
the test.

Synchronise on the server, never on sleeps: :meth:`FakeOpenAIServer.wait_for_requests`
returns once n requests arrived, and each :class:`RecordedRequest` has ``blocked`` (the
handler reached its hang/stall point) and ``done`` (the handler finished) events.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from tests.support.fake_openai_behaviours import (
    KEY_MARKER,
    MODEL,
    Behaviour,
    cut_stream,
    drop_mid_text,
    drop_mid_tool_call,
    empty_body,
    empty_choices,
    hang,
    huge_reply,
    invalid_request,
    length_cut,
    malformed_tool_call,
    stall,
    status,
    text,
    tool_call,
)

__all__ = [
    "Behaviour",
    "FakeOpenAIServer",
    "RecordedRequest",
    "cut_stream",
    "drop_mid_text",
    "drop_mid_tool_call",
    "empty_body",
    "empty_choices",
    "hang",
    "huge_reply",
    "invalid_request",
    "length_cut",
    "malformed_tool_call",
    "openai_server",
    "stall",
    "status",
    "text",
    "tool_call",
]


@dataclass
class RecordedRequest:
    """One request as the server saw it, and how far its answer got."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    behaviour: Behaviour
    received_at: float  # time.monotonic(), for intervals
    received_wall: float  # time.time(), to compare with event timestamps
    blocked: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def header(self, name: str) -> str | None:
        """A header by case-insensitive name."""
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: pytest shows stderr of failing tests, and this is noise

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fake = self.server.fake
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        problem = _invalid_request(body)
        # A request OpenAI would refuse is refused here too, without using the script.
        behaviour = invalid_request(problem) if problem else fake._next_behaviour()
        request = RecordedRequest(
            method="POST",
            path=self.path,
            headers=dict(self.headers.items()),
            body=body,
            behaviour=behaviour,
            received_at=time.monotonic(),
            received_wall=time.time(),
        )
        fake._record(request)
        try:
            self._answer(request)
        except OSError:
            pass  # the client went away (e.g. its timeout fired): nothing left to say
        finally:
            self.close_connection = True
            request.done.set()

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def _answer(self, request: RecordedRequest) -> None:
        behaviour = request.behaviour
        streaming = behaviour.kind != "status" and bool(request.json.get("stream"))
        match behaviour.kind:
            case "hang":
                self._block(request)
            case "status":
                payload = behaviour.body
                if behaviour.echo_key:
                    token = (request.header("authorization") or "").removeprefix("Bearer ")
                    payload = payload.replace(KEY_MARKER.encode(), token.encode())
                self.send_response(behaviour.status)
                for key, value in behaviour.headers:
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)
            case "empty":
                self.send_response(200)
                content_type = "text/event-stream" if streaming else "application/json"
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
            case "stream" if streaming:
                self._stream(request)
            case "stream":
                self._whole(request)

    def _stream(self, request: RecordedRequest) -> None:
        behaviour = request.behaviour
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        created = int(time.time())
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        for event in behaviour.events:
            payload = {"id": completion_id, "created": created, **event}
            self._write_chunk(f"data: {json.dumps(payload)}\n\n".encode())
        match behaviour.end:
            case "done":
                self._write_chunk(b"data: [DONE]\n\n")
                self._end_chunks()
            case "cut":
                self._end_chunks()
            case "drop":
                self._drop()
            case "stall":
                self._block(request)

    def _whole(self, request: RecordedRequest) -> None:
        """A non-streaming request: fold the events into one completion object."""
        behaviour = request.behaviour
        payload = json.dumps(_fold(behaviour.events)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        match behaviour.end:
            case "done" | "cut":
                self.wfile.write(payload)
            case "drop":
                self.wfile.write(payload[: len(payload) // 2])
                self._drop()
            case "stall":
                self.wfile.write(payload[: len(payload) // 2])
                self.wfile.flush()
                self._block(request)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.wfile.flush()
        # The chunked body is never terminated; linger 0 makes the close a reset, as
        # when the server process dies or a proxy gives up.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.shutdown(socket.SHUT_RDWR)

    def _block(self, request: RecordedRequest) -> None:
        self.wfile.flush()
        request.blocked.set()
        self.server.fake._released.wait(self.server.fake.max_block)

    def _send_json(self, code: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


def _invalid_request(body: bytes) -> str | None:
    """Why OpenAI would answer 400 to this body, for the mistakes a client can make
    with conversation history (tool results without their call, calls left unanswered)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return "We could not parse the JSON body of your request."
    messages = payload.get("messages") if isinstance(payload, dict) else None
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array."
    unanswered: list[str] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in unanswered:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (tool_call_id {call_id!r})."
                )
            unanswered.remove(call_id)
            continue
        if unanswered:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(unanswered)}"
            )
        if role == "assistant":
            unanswered = [call.get("id") for call in message.get("tool_calls") or []]
    if unanswered:
        return f"tool_call_ids without a response message: {', '.join(unanswered)}"
    return None


def _fold(events: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    for event in events:
        usage = event.get("usage") or usage
        for choice in event.get("choices", []):
            finish_reason = choice.get("finish_reason") or finish_reason
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    call["index"],
                    {
                        "id": call.get("id"),
                        "type": "function",
                        "function": {"name": "", "arguments": ""},
                    },
                )
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    has_choice = any(event.get("choices") for event in events)
    choices = (
        [{"index": 0, "message": message, "finish_reason": finish_reason}] if has_choice else []
    )
    result: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": choices,
    }
    if usage is not None:
        result["usage"] = usage
    return result


class _HTTPServer(HTTPServer):
    # Handler threads are joined on close, so no thread outlives the server.
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, fake: FakeOpenAIServer) -> None:
        self.fake = fake
        self._threads: list[threading.Thread] = []
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._connections.add(request)
            self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(
            target=self._work, args=(request, client_address), name="fake-openai-conn"
        )
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            with self._lock:
                self._connections.discard(request)
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-answer is part of the job here

    def close_all(self) -> None:
        with self._lock:
            connections = list(self._connections)
            threads = list(self._threads)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(timeout=10)


class FakeOpenAIServer:
    """An OpenAI-compatible chat completions server with a script of faults.

    Use as a context manager (``with FakeOpenAIServer() as server:``); ``server.base_url``
    is the ``--api-base`` (``http://127.0.0.1:PORT/v1``).
    """

    def __init__(self, default: Behaviour | None = None, *, max_block: float = 60.0) -> None:
        self.default = default or text("ok")
        self.max_block = max_block
        self._queue: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self._cond = threading.Condition()
        self._released = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> FakeOpenAIServer:
        self._released.clear()
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai"
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, unblock every hang/stall, and join all threads."""
        if self._httpd is None:
            return
        self._released.set()
        self._httpd.shutdown()
        self._httpd.close_all()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addresses --

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting --

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order (after any already queued)."""
        with self._cond:
            self._queue.extend(behaviours)

    def clear(self) -> int:
        """Drop the behaviours not yet used; how many there were."""
        with self._cond:
            unused = len(self._queue)
            self._queue.clear()
            return unused

    def release(self) -> None:
        """Let every hanging or stalled answer end (its connection is then closed)."""
        self._released.set()

    @property
    def pending(self) -> int:
        """Scripted behaviours not yet used."""
        with self._cond:
            return len(self._queue)

    def _next_behaviour(self) -> Behaviour:
        with self._cond:
            return self._queue.popleft() if self._queue else self.default

    # -- what was asked --

    def _record(self, request: RecordedRequest) -> None:
        with self._cond:
            self._requests.append(request)
            self._cond.notify_all()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._cond:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[RecordedRequest]:
        """Block until ``count`` requests arrived (AssertionError after ``timeout``)."""
        with self._cond:
            arrived = self._cond.wait_for(lambda: len(self._requests) >= count, timeout)
            assert arrived, f"expected {count} requests, got {len(self._requests)}"
            return list(self._requests)


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A running :class:`FakeOpenAIServer` (answers ``text("ok")`` when unscripted)."""
    with FakeOpenAIServer() as server:
        yield server
