"""Running a child process for its output (agent.tools.piped), both ways of reading it."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.tools import piped
from agent.tools.piped import run_piped

# Writes in small pieces to both pipes, more than a pipe holds, then exits with 3.
CHATTY = """\
import os
for n in range(3000):
    os.write(1, b"%05d" % n + b"o" * 1019)
    if n % 10 == 0:
        os.write(2, b"e" * 1024)
raise SystemExit(3)
"""


@pytest.fixture(params=["gathered", "as written"])
def reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "as written":
        monkeypatch.setattr(piped, "_exit_fd", lambda _proc, _fd: None)
    yield request.param


async def test_everything_written_is_read(reading: str, tmp_path: Path) -> None:
    result = await run_piped([sys.executable, "-c", CHATTY], tmp_path)
    assert result.stdout == b"".join(b"%05d" % n + b"o" * 1019 for n in range(3000))
    assert result.stderr == b"e" * 1024 * 300
    assert result.returncode == 3


async def test_cancelling_kills_the_process(reading: str, tmp_path: Path) -> None:
    # The child holds a FIFO open for writing while it lives: its end is the child's end.
    fifo = tmp_path / "alive"
    os.mkfifo(fifo)
    child = (
        f"import time\nf = open({str(fifo)!r}, 'wb')\nf.write(b'up')\nf.flush()\ntime.sleep(600)\n"
    )
    task = asyncio.ensure_future(run_piped([sys.executable, "-c", child], tmp_path))
    # Opening blocks until the child has opened its end, so not on the event loop.
    with await asyncio.to_thread(open, fifo, "rb") as alive:
        assert await asyncio.to_thread(alive.read, 2) == b"up"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(alive.read) == b""
