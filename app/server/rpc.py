"""One JSON-RPC 2.0 connection: requests both ways, notifications, errors.

Each incoming request runs as its own task, so a long one (``session.sendAndWait``)
never holds up the answers it is waiting for (a permission decision, a tool
result). Outgoing frames are written in the order they are produced: a session's
events and the response that follows them arrive in that order.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from app.server.framing import FramingError, encode_frame, read_frame

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000  # an application error (the session failed, the id is unknown…)
REQUEST_CANCELLED = -32800
ANSWER_GRACE = 2.0  # seconds to finish answering after the peer's stream ends


class RpcError(Exception):
    """An error response: raise it from a handler, or get it back from a request."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ConnectionClosed(Exception):
    """The peer went away before answering."""


Handler = Callable[["Connection", str, dict[str, Any]], Awaitable[Any]]


class Writer(Protocol):
    """What a connection writes to (an :class:`asyncio.StreamWriter` fits)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def is_closing(self) -> bool: ...

    def close(self) -> None: ...


class Connection:
    """Reads frames from ``reader``, writes them to ``writer``; ``handler`` answers requests."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Writer,
        handler: Handler,
        *,
        name: str = "connection",
    ) -> None:
        self.name = name
        self._reader = reader
        self._writer = writer
        self._handler = handler
        self._ids = itertools.count(1)
        self._outgoing: dict[int, asyncio.Future[Any]] = {}
        self._incoming: dict[Any, asyncio.Task[None]] = {}
        self._closed = False
        self.on_close: list[Callable[[Connection], None]] = []
        # Set by the ``connect`` handshake; the runtime may refuse other methods before.
        self.connected = False

    @property
    def closed(self) -> bool:
        return self._closed

    # --- writing -------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Queue one frame. Never blocks; a closed connection drops it."""
        if self._closed or self._writer.is_closing():
            return
        try:
            self._writer.write(encode_frame(message))
        except (ConnectionError, RuntimeError) as exc:
            log.info("%s: write failed: %s", self.name, exc)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Call a method the peer serves (``hooks.invoke``) and wait for its result."""
        if self._closed:
            raise ConnectionClosed(f"{self.name} is closed")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing[request_id] = future
        try:
            self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return await future
        finally:
            self._outgoing.pop(request_id, None)

    async def drain(self) -> None:
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()

    # --- reading -------------------------------------------------------------

    async def serve(self) -> None:
        """Answer until the peer closes the stream (or breaks the framing)."""
        try:
            while True:
                try:
                    body = await read_frame(self._reader)
                except FramingError as exc:
                    log.warning("%s: %s; closing", self.name, exc)
                    break
                except ConnectionError:
                    break
                if body is None:
                    break
                self._receive(body)
            if self._incoming:
                # The peer stopped sending; what it already asked still gets answered.
                await asyncio.wait(list(self._incoming.values()), timeout=ANSWER_GRACE)
        finally:
            await self.close()

    def _receive(self, body: bytes) -> None:
        try:
            message = json.loads(body)
        except ValueError as exc:
            self._error(None, RpcError(PARSE_ERROR, f"parse error: {exc}"))
            return
        if not isinstance(message, dict):
            self._error(None, RpcError(INVALID_REQUEST, "a message must be a JSON object"))
            return
        method = message.get("method")
        if method is None:
            self._settle(message)
            return
        params = message.get("params")
        if params is None:
            params = {}
        has_id = "id" in message
        if not isinstance(method, str) or not isinstance(params, dict):
            if has_id:
                self._error(
                    message["id"],
                    RpcError(INVALID_REQUEST, "method must be a string, params an object"),
                )
            return
        if not has_id:
            self._notification(method, params)
            return
        request_id = message["id"]
        task = asyncio.create_task(self._answer(request_id, method, params), name=method)
        self._incoming[request_id] = task
        task.add_done_callback(functools.partial(self._forget, request_id))

    def _forget(self, request_id: Any, _task: asyncio.Task[None]) -> None:
        self._incoming.pop(request_id, None)

    async def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        try:
            result = await self._handler(self, method, params)
        except RpcError as exc:
            self._error(request_id, exc)
        except asyncio.CancelledError:
            self._error(request_id, RpcError(REQUEST_CANCELLED, "request cancelled"))
        except Exception as exc:
            log.exception("%s: %s failed", self.name, method)
            self._error(request_id, RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        else:
            self.send({"jsonrpc": "2.0", "id": request_id, "result": result})
        await self.drain()

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "$/cancelRequest":
            task = self._incoming.get(params.get("id"))
            if task is not None:
                task.cancel()
            return
        log.debug("%s: ignoring notification %s", self.name, method)

    def _settle(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        future = self._outgoing.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            log.debug("%s: response to no pending request: %s", self.name, message.get("id"))
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RpcError(
                    int(error.get("code", INTERNAL_ERROR)),
                    str(error.get("message", "error")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

    def _error(self, request_id: Any, error: RpcError) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error.wire()})

    # --- closing -------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for future in self._outgoing.values():
            if not future.done():
                future.set_exception(ConnectionClosed(f"{self.name} closed"))
        for task in list(self._incoming.values()):
            task.cancel()
        for callback in list(self.on_close):
            try:
                callback(self)
            except Exception:
                log.exception("%s: close callback failed", self.name)
        with contextlib.suppress(ConnectionError, RuntimeError):
            self._writer.close()
