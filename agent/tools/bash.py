"""``bash``: run a shell command in the workspace, streaming its output as progress.

The command runs in its own process group (a new session), so a timeout or a user
abort stops it and everything it started. Output (stdout and stderr merged) is
decoded leniently, so binary output never breaks the tool; the model gets the head
and tail of long output, the timeline gets (nearly) all of it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import math
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from agent.sandbox.policy import Confinement
from agent.sandbox.secrets import EnvFilter
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult

SHELL = "/bin/bash"
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
# After SIGTERM, how long the process group gets before SIGKILL.
KILL_GRACE = 2.0
# After the command exits, how long to wait for the output pipe to close; longer means a
# background child still holds it, and the group is stopped so the tool cannot hang.
DRAIN_GRACE = 0.5

# What the model sees: the first lines and the last lines, with a note between.
HEAD_LINES, HEAD_CHARS = 200, 16_000
TAIL_LINES, TAIL_CHARS = 100, 8_000
MAX_LINE_CHARS = 2_000
# What the timeline keeps (detailed_content): a few MB, head and tail.
FULL_HEAD_CHARS = FULL_TAIL_CHARS = 2_000_000
# Longest single line kept at all; the rest of it is counted, not stored.
MAX_KEPT_LINE_CHARS = 64_000

# Progress: at most one report per interval (~20/s); the latest line is always reported.
PROGRESS_INTERVAL = 0.05
MAX_PROGRESS_CHARS = 1_000

_READ_CHUNK = 1 << 16
_POLL_MIN, _POLL_MAX = 0.005, 0.05


class BashArgs(ToolArgs):
    command: str = Field(description="The bash command to run.")
    description: str | None = Field(
        default=None,
        description="A short description of what the command does, shown to the user.",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description=(
            f"Seconds before the command is stopped; default {DEFAULT_TIMEOUT:g}, "
            f"at most {MAX_TIMEOUT:g}."
        ),
    )


class BashTool(Tool):
    name = "bash"
    description = (
        "Run a bash command in the working directory. stdout and stderr are merged; stdin "
        "is empty, so commands must not wait for input. Long output is cut to its first and "
        "last lines; redirect to a file and use view or grep to read all of it. Commands are "
        f"stopped after timeout seconds (default {DEFAULT_TIMEOUT:g}). Background processes "
        "must redirect their output (e.g. `cmd > log 2>&1 &`) or they are stopped when "
        "the command exits."
    )
    kind = "shell"
    Args = BashArgs

    def __init__(
        self,
        *,
        shell: str = SHELL,
        kill_grace: float = KILL_GRACE,
        drain_grace: float = DRAIN_GRACE,
    ) -> None:
        self._shell = shell
        self._kill_grace = kill_grace
        self._drain_grace = drain_grace

    async def run(self, args: BashArgs, ctx: ToolContext) -> ToolResult:
        if not args.command.strip():
            raise ToolError("command is empty")
        requested = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT
        timeout = min(requested, MAX_TIMEOUT)
        try:
            proc = await _start(
                self._shell,
                args.command,
                ctx.cwd,
                child_env(ctx.env_filter, ctx.sandbox),
                ctx.sandbox,
            )
        except OSError as exc:
            raise ToolError(f"could not start {self._shell} in {ctx.cwd}: {exc}") from exc
        assert proc.stdout is not None
        output = Output(ctx.report_progress)
        reader = asyncio.create_task(_pump(proc.stdout, output))
        timed_out = stopped_background = False
        try:
            if not await _wait_exit(proc, timeout):
                timed_out = True
                await _stop_group(proc, self._kill_grace)
            if not await _finished(reader, self._drain_grace):
                # The command exited but something it started still holds the pipe.
                stopped_background = not timed_out
                await _stop_group(proc, self._kill_grace)
                if not await _finished(reader, self._drain_grace):
                    # A holder that left the group (setsid): stop listening to it.
                    reader.cancel()
                    await asyncio.wait({reader})
                    _close_pipes(proc)
            await _wait_exit(proc, self._kill_grace)
        except asyncio.CancelledError:
            reader.cancel()
            output.abandon()
            try:
                await _stop_group(proc, self._kill_grace)
            finally:
                _close_pipes(proc)
            raise
        if not reader.cancelled():
            reader.result()  # re-raise what went wrong while reading, if anything
        output.finish()
        result = _result(output, proc.returncode, timed_out, timeout, requested, stopped_background)
        return _with_sandbox_note(result, ctx.sandbox, output, for_user=ctx.for_user)


def child_env(
    env_filter: EnvFilter | None = None, sandbox: Confinement | None = None
) -> dict[str, str]:
    """loopdeck's environment without its secrets, plus the sandbox's temp directory."""
    env = (env_filter or EnvFilter()).child_env(os.environ)
    env.update({"LOOPDECK": "1", "PAGER": "cat", "GIT_PAGER": "cat"})
    if sandbox is not None:
        env.update(sandbox.env())
    return env


def _with_sandbox_note(
    result: ToolResult, sandbox: Confinement | None, output: Output, *, for_user: bool = False
) -> ToolResult:
    """A failure that looks like the sandbox's refusal says so, after the command's own
    words. The user's own command is told even when it exited 0 (``touch x || true``
    still did not write x), in words for the user."""
    if sandbox is None or (result.success and not for_user):
        return result
    note = sandbox.refusal_note(output.for_model(), for_user=for_user)
    if note is None:
        return result
    content = f"{result.content}\n{note}"
    detailed = f"{result.detailed_content}\n{note}" if result.detailed_content else content
    return ToolResult(
        content=content,
        success=result.success,
        detailed_content=detailed,
        error=None if result.success else content,
    )


def _result(
    output: Output,
    returncode: int | None,
    timed_out: bool,
    timeout: float,
    requested: float,
    stopped_background: bool,
) -> ToolResult:
    notes: list[str] = []
    if requested > timeout:
        notes.append(f"<timeout capped at {timeout:g} s>")
    if stopped_background:
        notes.append(
            "<background processes still holding the output were stopped when the command "
            "exited; redirect their output (e.g. `cmd > log 2>&1 &`) to keep them running>"
        )
    if timed_out:
        status = f"<timed out after {timeout:g} s; the command and its processes were stopped>"
    elif returncode is not None and returncode < 0:
        status = f"<killed by signal {_signal_name(-returncode)}>"
    else:
        status = f"<exited with exit code {returncode}>"
    trailer = "\n".join([*notes, status])
    content = _join(output.for_model(), trailer)
    detailed = _join(output.full(), trailer)
    if not timed_out and returncode == 0:
        return ToolResult(content=content, detailed_content=detailed)
    return ToolResult(content=content, success=False, detailed_content=detailed, error=content)


def _join(text: str, trailer: str) -> str:
    return f"{text}\n{trailer}" if text else f"(no output)\n{trailer}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


# --- the process -------------------------------------------------------------------


async def _start(
    shell: str,
    command: str,
    cwd: Path,
    env: dict[str, str],
    sandbox: Confinement | None = None,
) -> asyncio.subprocess.Process:
    argv = [shell, "-c", command]
    if sandbox is not None:
        # The wrapper confines itself, then execs the shell: the rules hold in the
        # child and everything it starts, never in loopdeck.
        argv = sandbox.wrap(argv)
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    )
    try:
        # Shielded: cancelled mid-spawn, asyncio would kill only the main process and
        # leave whatever the command already started running.
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        spawn.add_done_callback(_kill_spawned)
        raise


def _kill_spawned(spawn: asyncio.Future[asyncio.subprocess.Process]) -> None:
    if spawn.cancelled() or spawn.exception() is not None:
        return
    proc = spawn.result()
    _signal_group(proc.pid, signal.SIGKILL)
    _close_pipes(proc)


async def _pump(stream: asyncio.StreamReader, output: Output) -> None:
    while chunk := await stream.read(_READ_CHUNK):
        output.feed(chunk)


async def _wait_exit(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Whether the main process exited within ``timeout``.

    Polls ``returncode``: ``proc.wait()`` also waits for the pipes to close, which a
    background child can put off forever.
    """
    deadline = time.monotonic() + timeout
    step = _POLL_MIN
    while proc.returncode is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(step, remaining))
        step = min(step * 2, _POLL_MAX)
    return True


async def _finished(task: asyncio.Task[None], timeout: float) -> bool:
    done, _ = await asyncio.wait({task}, timeout=timeout)
    return bool(done)


async def _stop_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after ``grace``.

    Cancelled meanwhile, it SIGKILLs at once and re-raises.
    """
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    try:
        while proc.returncode is None or group_alive(pgid):
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.02)
        else:
            return
    except asyncio.CancelledError:
        _signal_group(pgid, signal.SIGKILL)
        raise
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process in group ``pgid`` is still running (zombies do not count).

    Zombies matter where PID 1 does not reap orphans (some containers): the group then
    never empties although nothing in it runs.
    """
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return True
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    # asyncio.subprocess.Process has no public close; the transport owns the pipe.
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


# --- the output --------------------------------------------------------------------


class Clip:
    """Keeps the first and last lines within line and size budgets, counting those cut."""

    def __init__(
        self,
        head_lines: float,
        head_chars: int,
        tail_lines: float,
        tail_chars: int,
        line_chars: int | None = None,
    ) -> None:
        self._head_lines, self._head_chars = head_lines, head_chars
        self._tail_lines, self._tail_chars = tail_lines, tail_chars
        self._line_chars = line_chars
        self._head: list[str] = []
        self._head_size = 0
        self._head_full = False
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self.cut = 0

    def add(self, line: str, length: int | None = None) -> None:
        """Add ``line``; ``length`` is its length before the caller cut it, if it did."""
        length = len(line) if length is None else length
        if self._line_chars is not None and length > self._line_chars:
            line = line[: self._line_chars] + f"… [line truncated, {length} chars]"
        size = len(line) + 1
        if not self._head_full:
            if len(self._head) < self._head_lines and self._head_size + size <= self._head_chars:
                self._head.append(line)
                self._head_size += size
                return
            self._head_full = True
        self._tail.append(line)
        self._tail_size += size
        while self._tail and (
            len(self._tail) > self._tail_lines or self._tail_size > self._tail_chars
        ):
            self._tail_size -= len(self._tail.popleft()) + 1
            self.cut += 1

    def render(self) -> str:
        middle = [f"[… {self.cut} lines cut …]"] if self.cut else []
        return "\n".join([*self._head, *middle, *self._tail])


class Output:
    """Turns output bytes into lines for the model, the timeline, and progress reports."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # The line being read: the pieces kept (at most MAX_KEPT_LINE_CHARS) and its length.
        self._partial: list[str] = []
        self._partial_kept = 0
        self._partial_len = 0
        self._model = Clip(HEAD_LINES, HEAD_CHARS, TAIL_LINES, TAIL_CHARS, MAX_LINE_CHARS)
        self._full = Clip(math.inf, FULL_HEAD_CHARS, math.inf, FULL_TAIL_CHARS, MAX_KEPT_LINE_CHARS)
        self._progress = Throttle(report, PROGRESS_INTERVAL)
        self.lines = 0

    def feed(self, data: bytes) -> None:
        text = self._decoder.decode(data)
        if text:
            self._split(text)

    def finish(self) -> None:
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._split(tail)
        if self._partial_len:
            self._emit_line()
        self._progress.flush()

    def abandon(self) -> None:
        self._progress.cancel()

    def for_model(self) -> str:
        return self._model.render()

    def full(self) -> str:
        return self._full.render()

    def _split(self, text: str) -> None:
        pieces = text.replace("\0", "\ufffd").split("\n")
        for piece in pieces[:-1]:
            self._append(piece)
            self._emit_line()
        self._append(pieces[-1])

    def _append(self, piece: str) -> None:
        room = MAX_KEPT_LINE_CHARS - self._partial_kept
        if piece and room > 0:
            kept = piece[:room]
            self._partial.append(kept)
            self._partial_kept += len(kept)
        self._partial_len += len(piece)

    def _emit_line(self) -> None:
        line = "".join(self._partial)
        length = self._partial_len if self._partial_len > self._partial_kept else None
        self._partial = []
        self._partial_kept = self._partial_len = 0
        line = line.removesuffix("\r")
        if "\r" in line:
            # Progress bars redraw with \r; keep what a terminal would end up showing.
            line = line.rsplit("\r", 1)[1]
        self.lines += 1
        self._model.add(line, length)
        self._full.add(line, length)
        if line.strip():
            self._progress.push(line[:MAX_PROGRESS_CHARS])


class Throttle:
    """Calls ``report`` at most once per ``interval``; the latest value is never dropped."""

    def __init__(self, report: Callable[[str], None], interval: float) -> None:
        self._report = report
        self._interval = interval
        self._last = -math.inf
        self._pending: str | None = None
        self._timer: asyncio.TimerHandle | None = None

    def push(self, line: str) -> None:
        now = time.monotonic()
        if self._timer is None and now - self._last >= self._interval:
            self._send(line)
            return
        self._pending = line
        if self._timer is None:
            delay = self._last + self._interval - now
            self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._fire()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = None

    def _fire(self) -> None:
        self._timer = None
        if self._pending is not None:
            line, self._pending = self._pending, None
            self._send(line)

    def _send(self, line: str) -> None:
        self._last = time.monotonic()
        self._report(line)
