"""One MCP server: started, listed, called and stopped through the official ``mcp`` SDK.

The SDK's transports are async context managers whose cancel scopes must be left by
the task that entered them, so each server lives in a task of its own
(:meth:`McpConnection.start`); the loop's calls reach it through the SDK session,
which any task may use. A server's stderr goes to a temporary file (never the
screen), whose last lines explain a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.events.mcp import McpServerStatus
from agent.extensions.mcp.config import McpServerConfig
from agent.sandbox.policy import Confinement

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

STOP_TIMEOUT = 10.0  # seconds: the SDK closes stdin, waits, then kills the process tree
_STDERR_TAIL = 600  # characters of a failed server's stderr quoted in its error
# Lines on stdout that are not JSON-RPC are dropped, as Copilot drops them (banners,
# stray prints); this many before the handshake is done: the program is no MCP server.
GARBAGE_LIMIT = 100
_SAMPLE = 120  # characters of such a line quoted in an error


class McpCallError(Exception):
    """A call that did not get a result: the server is down, or too slow."""


class _Exited(Exception):
    """A running server's process ended (or its output did) without being asked."""


class McpConnection:
    def __init__(
        self,
        config: McpServerConfig,
        on_change: Callable[[McpConnection], None],
        confinement: Confinement | None = None,
    ) -> None:
        self.config = config
        self.confinement = confinement  # a local server's OS sandbox; None: unconfined
        self.status: McpServerStatus = "pending"
        self.error: str | None = None
        self.tools: list[Tool] = []  # those the config's allow-list offers
        self.listed: list[Tool] = []  # every tool the server lists, offered or not
        self._on_change = on_change  # status or tools changed
        self._session: ClientSession | None = None
        self._stop = asyncio.Event()
        self._gone = asyncio.Event()  # a local server's output ended: it exited
        self._task: asyncio.Task[None] | None = None
        self._relisting: asyncio.Task[None] | None = None  # after tools/list_changed
        self.garbage = 0  # lines on stdout that were not JSON-RPC
        self._garbage_sample = ""
        # Lives as long as the server, closed by stop().
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp server {self.name}")

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        report: Callable[[str], None] = lambda _line: None,
    ) -> CallToolResult:
        """The server's result; McpCallError when there is none to read. The server's
        progress notifications are handed to ``report`` as lines."""
        session = self._session
        if session is None or self.status != "connected":
            why = f": {self.error}" if self.error else ""
            raise McpCallError(f"MCP server {self.name} is {self.status}{why}")
        from mcp import MCPError

        timeout = self.config.call_timeout

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            report(progress_line(progress, total, message))

        try:
            # The SDK's own deadline answers a slow server; ours, a stuck transport.
            async with asyncio.timeout(timeout + 5):
                result = await session.call_tool(
                    tool, arguments, read_timeout_seconds=timeout, progress_callback=on_progress
                )
            relisting = self._relisting
            if relisting is not None and not relisting.done():
                # The call changed the server's tools: the model's next call sees them.
                await asyncio.shield(relisting)
            return result
        except TimeoutError:
            raise McpCallError(
                f"MCP server {self.name} did not answer within {timeout:g}s"
            ) from None
        except MCPError as exc:
            message = str(exc)
            if "timed out" in message.lower() or "timeout" in message.lower():
                raise McpCallError(
                    f"MCP server {self.name} did not answer within {timeout:g}s"
                ) from None
            if _connection_gone(message):
                self._fail(f"connection lost: {message}{self._stderr_tail()}")
                raise McpCallError(f"MCP server {self.name} stopped: {self.error}") from None
            raise McpCallError(f"MCP server {self.name}: {message}") from None

    async def stop(self) -> None:
        """Stop the server (and its process); bounded by STOP_TIMEOUT."""
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                async with asyncio.timeout(STOP_TIMEOUT):
                    await asyncio.shield(task)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self.status in ("connected", "pending"):
            self._set("stopped")
        self._stderr.close()

    # --- the server's task -------------------------------------------------------

    async def _run(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                await self._connect(stack)
                await _first_of(self._stop, self._gone)
                if not self._stop.is_set():
                    raise _Exited("the server exited")
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # an ExceptionGroup from the SDK's task groups included
            if not self._stop.is_set() and self.status != "failed":  # a call may have said why
                self._fail(_describe(exc, self.config) + self._garbage_note() + self._stderr_tail())
        finally:
            self._session = None

    async def _connect(self, stack: contextlib.AsyncExitStack) -> None:
        from mcp import ClientSession

        streams = await stack.enter_async_context(self._transport())
        read, write = streams[0], streams[1]
        if self.config.transport == "stdio":
            read = await _watched(stack, read, self._gone)
        session = await stack.enter_async_context(
            ClientSession(read, write, message_handler=self._on_message)
        )
        try:
            async with asyncio.timeout(self.config.connect_timeout):
                await session.initialize()
                tools = await _all_tools(session)
        except TimeoutError:
            raise TimeoutError(
                f"no answer within {self.config.connect_timeout:g}s of starting"
            ) from None
        self._session = session
        self._keep(tools)
        self._set("connected")

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        config = self.config
        if config.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client

            command, args, env = config.command, list(config.args), dict(config.env)
            if self.confinement is not None:
                argv = self.confinement.wrap([_resolve(config), *args])
                command, args = argv[0], argv[1:]
                env = {**self.confinement.env(), **env}  # its own TMPDIR, unless set
            params = StdioServerParameters(
                command=command, args=args, env=env or None, cwd=config.cwd
            )
            logging.getLogger("mcp.client.stdio").addFilter(_QUIET)  # once: a set
            return stdio_client(params, errlog=self._stderr)
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=dict(config.headers) or None)
        return _streamable_http(config)

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, Exception):  # a line that is not JSON-RPC: dropped
            self._garbled(message)
            return
        if isinstance(message, ToolListChangedNotification) and self._session is not None:
            # Listed in a task of its own: the handler runs in the SDK's receive loop.
            self._relisting = asyncio.get_running_loop().create_task(self._relist())

    async def _relist(self) -> None:
        session = self._session
        if session is None:
            return
        try:
            async with asyncio.timeout(self.config.call_timeout):
                tools = await _all_tools(session)
        except Exception:  # the old list stays; the next call will tell if the server is gone
            return
        self._keep(tools)
        self._on_change(self)

    def _keep(self, tools: list[Tool]) -> None:
        self.listed = tools
        self.tools = [t for t in tools if self.config.offers(t.name)]

    def _garbled(self, exc: Exception) -> None:
        self.garbage += 1
        if not self._garbage_sample:
            self._garbage_sample = _bad_line(exc)
        task = self._task
        if self.status == "pending" and self.garbage >= GARBAGE_LIMIT and task is not None:
            self._fail(
                f"it writes text that is not JSON-RPC on stdout ({self.garbage} lines, "
                f"the first: {self._garbage_sample!r}); is it an MCP server speaking stdio?"
            )
            task.cancel()  # its process stops with the transport

    def _garbage_note(self) -> str:
        if not self.garbage:
            return ""
        return (
            f" (it wrote {self.garbage} lines that are not JSON-RPC on stdout, "
            f"the first: {self._garbage_sample!r})"
        )

    # --- status ---------------------------------------------------------------------

    def _set(self, status: McpServerStatus, error: str | None = None) -> None:
        self.status = status
        self.error = error
        self._on_change(self)

    def _fail(self, error: str) -> None:
        self._session = None
        self.tools = []
        self.listed = []
        self._set("failed", error)

    def _stderr_tail(self) -> str:
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read().strip()
        except (OSError, ValueError):
            return ""
        if not text:
            return ""
        if len(text) > _STDERR_TAIL:
            text = "…" + text[-_STDERR_TAIL:]
        return f" (stderr: {text})"


def progress_line(done: float, total: float | None, message: str | None) -> str:
    """``3/10 Reading files`` (or ``3``, ``3/10``, ``Reading files``)."""
    amount = f"{done:g}/{total:g}" if total else f"{done:g}"
    return f"{amount} {message}" if message else amount


def _resolve(config: McpServerConfig) -> str:
    """The command's full path, as the sandbox's wrapper execs it (no PATH search);
    FileNotFoundError when there is none."""
    from mcp.client.stdio import get_default_environment

    command = config.command
    if "/" in command:
        path = Path(config.cwd or ".") / command
        if path.is_file():
            return os.path.abspath(path)  # not resolved: a venv's python is a symlink
        raise FileNotFoundError(command)
    search = {**get_default_environment(), **config.env}.get("PATH")
    found = shutil.which(command, path=search)
    if found is None:
        raise FileNotFoundError(command)
    return found


def _streamable_http(config: McpServerConfig) -> contextlib.AbstractAsyncContextManager[Any]:
    @contextlib.asynccontextmanager
    async def open_it() -> Any:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = dict(config.headers) or None
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(config.url, http_client=client) as streams,
        ):
            yield streams

    return open_it()


async def _watched(stack: contextlib.AsyncExitStack, read: Any, gone: asyncio.Event) -> Any:
    """``read`` relayed through a stream of our own, so that its end (a local server
    that exited while idle) sets ``gone`` instead of passing unseen until the next call."""
    import anyio

    sink, relayed = anyio.create_memory_object_stream[Any](0)

    async def relay() -> None:
        try:
            async with read, sink:
                async for item in read:
                    await sink.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the session stopped reading: we are stopping
        finally:
            gone.set()

    task = asyncio.get_running_loop().create_task(relay())
    stack.push_async_callback(_cancelled, task)
    return relayed


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _first_of(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


async def _all_tools(session: ClientSession) -> list[Tool]:
    from mcp.types import PaginatedRequestParams

    result = await session.list_tools()
    tools = list(result.tools)
    while result.next_cursor:
        result = await session.list_tools(params=PaginatedRequestParams(cursor=result.next_cursor))
        tools.extend(result.tools)
    return tools


def _bad_line(exc: Exception) -> str:
    """The line a parse error was about (the SDK's error carries it), shortened."""
    errors = getattr(exc, "errors", None)
    line: Any = None
    if callable(errors):
        with contextlib.suppress(Exception):
            line = errors()[0].get("input")
    text = line if isinstance(line, str) else str(exc)
    return text if len(text) <= _SAMPLE else text[:_SAMPLE] + "…"


class _DropParseErrors(logging.Filter):
    """The SDK logs each line that is not JSON-RPC, with a traceback, where the
    terminal would show it: the connection counts them instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failed to parse JSONRPC" not in record.getMessage()


_QUIET = _DropParseErrors()


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException, config: McpServerConfig) -> str:
    exc = _leaf(exc)
    if isinstance(exc, FileNotFoundError) and config.transport == "stdio":
        return f"cannot start {config.command!r}: command not found"
    if isinstance(exc, OSError) and config.transport == "stdio":
        return f"cannot start {config.command!r}: {exc.strerror or exc}"
    message = str(exc) or type(exc).__name__
    if _connection_gone(message):
        return "the server exited before it answered"
    return message


def _connection_gone(message: str) -> bool:
    lowered = message.lower()
    return "connection closed" in lowered or ("closed" in lowered and "connection" in lowered)
