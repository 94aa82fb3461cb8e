"""``loopdeck --headless --stdio`` / ``--headless [--port N]``: serve until told to stop.

stdout belongs to the protocol. In stdio mode the frames go out on a private copy
of the original stdout, and file descriptor 1 is pointed at stderr, so a stray
``print`` (ours or a library's) can never corrupt a frame. In TCP mode stdout
carries the one line ``listening on port N`` and nothing else. Logs go to
``$LOOPDECK_HOME/logs/``; in TCP mode, where nobody reads our stderr, stray
output goes there too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO

from agent.log.places import loopdeck_home, make_private_dirs
from agent.log.store import SessionStore
from app.server.methods import Runtime
from app.server.rpc import Connection

log = logging.getLogger("loopdeck.server")

# The SDK's --log-level values.
_LEVELS = {
    "none": logging.CRITICAL + 10,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "all": logging.DEBUG,
}
_EXIT_GRACE = 2.0  # after runtime.shutdown, how long stdio waits for the client to hang up
_KEEP_LOGS = 20


def run_server(args: argparse.Namespace, cwd: Path) -> int:
    stdio = bool(args.stdio)
    protocol_fd = _take_stdout() if stdio else None
    log_path = _setup_logging(args.log_level)
    token = None if stdio else os.environ.get("COPILOT_CONNECTION_TOKEN") or None
    runtime = Runtime(cwd=cwd, store=SessionStore(loopdeck_home()), flags=args, token=token)
    log.info("loopdeck runtime starting (%s) in %s", "stdio" if stdio else "tcp", cwd)
    if getattr(args, "ignored_flags", None):
        log.info("flags loopdeck does not know, ignored: %s", " ".join(args.ignored_flags))
    try:
        if protocol_fd is not None:
            asyncio.run(_serve_stdio(runtime, protocol_fd))
        else:
            asyncio.run(_serve_tcp(runtime, args.port or 0, log_path))
    except OSError as exc:
        sys.stderr.write(f"loopdeck: {exc}\n")
        return 1
    log.info("loopdeck runtime stopped")
    return 0


def _take_stdout() -> int:
    """A private fd for frames; fd 1 (and sys.stdout) now lead to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def _setup_logging(level_name: str | None) -> Path | None:
    """One log file per run in ``$LOOPDECK_HOME/logs`` (the newest few are kept)."""
    level = _LEVELS.get((level_name or "info").lower(), logging.INFO)
    root = logging.getLogger()
    root.setLevel(level)
    if level > logging.CRITICAL:
        return None
    home = loopdeck_home()
    folder = home / "logs"
    try:
        # Private like the sessions (0700 / 0600): logs name paths and prompts.
        make_private_dirs(folder)
        for old in sorted(folder.glob("headless-*.log"))[:-_KEEP_LOGS]:
            old.unlink(missing_ok=True)
        path = folder / f"headless-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        path = None
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(max(level, logging.WARNING))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    return path


def _stop_on_signals(runtime: Runtime) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, runtime.stopping.set)


async def _serve_stdio(runtime: Runtime, protocol_fd: int) -> None:
    _stop_on_signals(runtime)
    reader = await _stdin_reader()
    writer = await _pipe_writer(protocol_fd)
    conn = Connection(reader, writer, runtime.handle, name="stdio")
    runtime.attach(conn)
    serving = asyncio.create_task(conn.serve(), name="stdio")
    stopping = asyncio.create_task(runtime.stopping.wait())
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not serving.done():
        # Told to stop: let the client read the last answers and hang up first.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(serving), _EXIT_GRACE)
    stopping.cancel()
    await conn.close()
    await runtime.close_all()
    serving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await serving


async def _serve_tcp(runtime: Runtime, port: int, log_path: Path | None) -> None:
    _stop_on_signals(runtime)
    connections: set[Connection] = set()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        conn = Connection(reader, writer, runtime.handle, name=f"tcp:{peer}")
        runtime.attach(conn)
        connections.add(conn)
        log.info("client connected: %s", peer)
        try:
            await conn.serve()
        finally:
            connections.discard(conn)
            log.info("client gone: %s", peer)

    server = await asyncio.start_server(on_client, host="127.0.0.1", port=port)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"listening on port {bound}\n")
    sys.stdout.flush()
    _quiet_std_streams(log_path)
    async with server:
        await runtime.stopping.wait()
        await asyncio.sleep(0.05)  # let the shutdown answer leave
        server.close()
        for conn in list(connections):
            await conn.close()
        await runtime.close_all()


def _quiet_std_streams(log_path: Path | None) -> None:
    """Nobody reads a TCP runtime's stdout/stderr pipes after the port line: send
    anything written there to the log (or nowhere), so a full pipe never blocks us."""
    target = os.open(log_path, os.O_WRONLY | os.O_APPEND) if log_path else None
    if target is None:
        target = os.open(os.devnull, os.O_WRONLY)
    os.dup2(target, 1)
    os.dup2(target, 2)
    os.close(target)


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # a regular file, not a pipe: read it in a thread
        threading.Thread(target=_pump, args=(stdin, reader, loop), daemon=True).start()
    return reader


def _pump(source: IO[bytes], reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    while chunk := source.read(65536):
        loop.call_soon_threadsafe(reader.feed_data, chunk)
    loop.call_soon_threadsafe(reader.feed_eof)


async def _pipe_writer(fd: int) -> asyncio.StreamWriter:
    loop = asyncio.get_running_loop()
    pipe = os.fdopen(fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
    return asyncio.StreamWriter(transport, protocol, None, loop)
