"""File tools against a directory swapped for a symlink to outside while they run."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent.tools import beneath
from agent.tools.base import ToolContext
from agent.tools.create import CreateTool
from agent.tools.edit import EditTool
from agent.tools.glob import GlobTool
from agent.tools.grep import GrepTool
from agent.tools.registry import ToolRegistry, execute
from agent.tools.view import ViewTool

ROUNDS = 500
SECRET = "OUTSIDE-SECRET"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}.get(os.uname().machine)

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or _SYS_RENAMEAT2 is None, reason="needs Linux renameat2"
)


@pytest.fixture(params=["openat2", "walk"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    beneath.force_walk(request.param == "walk")
    yield request.param
    beneath.force_walk(False)


class Swapper(threading.Thread):
    """Exchanges two names atomically (renameat2 RENAME_EXCHANGE) until stopped."""

    def __init__(self, a: Path, b: Path) -> None:
        super().__init__(daemon=True)
        self.a, self.b = os.fsencode(a), os.fsencode(b)
        self.stop = threading.Event()
        self.swaps = 0
        self.libc = ctypes.CDLL(None, use_errno=True)

    def run(self) -> None:
        syscall = self.libc.syscall
        args = (
            ctypes.c_long(_SYS_RENAMEAT2),
            ctypes.c_int(_AT_FDCWD),
            ctypes.c_char_p(self.a),
            ctypes.c_int(_AT_FDCWD),
            ctypes.c_char_p(self.b),
            ctypes.c_uint(_RENAME_EXCHANGE),
        )
        while not self.stop.is_set():
            for _ in range(64):
                if syscall(*args) != 0:
                    raise OSError(ctypes.get_errno(), "renameat2 failed")
            self.swaps += 64
        # Leave the real directory in place.
        if Path(os.fsdecode(self.a)).is_symlink():
            syscall(*args)


@dataclass
class Tally:
    ok: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    leaks: list[str] = field(default_factory=list)

    def count(self, tool: str, success: bool) -> None:
        bucket = self.ok if success else self.failed
        bucket[tool] = bucket.get(tool, 0) + 1


def _snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_ino, p.read_bytes()) for p in sorted(directory.iterdir())}


async def test_swapped_directory_never_leads_outside(tmp_path: Path, backend: str) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (ws / "sub" / "f.txt").write_text("inside\ncounter\n")
    # Anything an escaped edit or create would change is here, matching what they ask for.
    (outside / "f.txt").write_text(f"{SECRET}\ncounter\ncounter \n")
    (outside / "only-outside.txt").write_text(f"{SECRET}\n")
    before = _snapshot(outside)
    # Relative for the walk (an escape by ".."), absolute for openat2.
    (ws / "alt").symlink_to("../outside" if backend == "walk" else str(outside))

    registry = ToolRegistry([ViewTool(), CreateTool(), EditTool(), GrepTool(None), GlobTool()])
    ctx = ToolContext(cwd=ws)
    tally = Tally()
    edited = False
    swapper = Swapper(ws / "sub", ws / "alt")
    swapper.start()
    try:
        for i in range(ROUNDS):
            view = await execute(registry, "view", {"path": "sub/f.txt"}, ctx)
            tally.count("view", view.success)
            listing = await execute(registry, "view", {"path": "sub"}, ctx)
            tally.count("view dir", listing.success)
            new = await execute(
                registry, "create", {"path": f"sub/new-{i}.txt", "file_text": "x\n"}, ctx
            )
            tally.count("create", new.success)
            old, repl = ("counter \n", "counter\n") if edited else ("counter\n", "counter \n")
            edit = await execute(
                registry, "edit", {"path": "sub/f.txt", "old_str": old, "new_str": repl}, ctx
            )
            tally.count("edit", edit.success)
            edited ^= edit.success
            if i % 5 == 0:
                grep = await execute(registry, "grep", {"pattern": SECRET, "path": "sub"}, ctx)
                found = await execute(registry, "glob", {"pattern": "sub/*"}, ctx)
                tally.count("grep", grep.success)
                tally.count("glob", found.success)
                results = [view, listing, grep, found]
            else:
                results = [view, listing]
            tally.leaks += [r.content for r in results if SECRET in r.content]
            tally.leaks += [r.content for r in results if "only-outside" in r.content]
    finally:
        swapper.stop.set()
        swapper.join()

    assert not (ws / "sub").is_symlink()
    assert tally.leaks == []
    assert _snapshot(outside) == before, "a file outside the workspace was written"
    # The race really ran, and the tools kept working through it.
    assert swapper.swaps > 1000
    assert tally.ok.get("view", 0) > 0 and tally.ok.get("create", 0) > 0
    assert tally.ok.get("edit", 0) > 0
    assert sum(tally.failed.values()) > 0, "no call ever met a swapped directory"


async def test_ripgrep_lines_not_in_the_file_beneath_the_workspace_are_dropped(
    tmp_path: Path,
) -> None:
    # ripgrep opens by name: if it was shown an outside file through a swapped
    # directory, what it reports is not what the workspace file holds.
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "f.txt").write_text("inside\nneedle here\n")
    listing = (
        f"sub/f.txt\x001:needle {SECRET}\n2:needle here\n\n"
        f"sub/only-outside.txt\x001:needle {SECRET}\n"
    ).encode()
    counts = b"sub/f.txt\x002\nsub/only-outside.txt\x001\n"
    script = tmp_path / "fake-rg"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"sys.stdout.buffer.write({counts!r} if '--count' in sys.argv else {listing!r})\n"
    )
    script.chmod(0o755)
    registry = ToolRegistry([GrepTool(rg_path=str(script))])
    result = await execute(registry, "grep", {"pattern": "needle"}, ToolContext(cwd=ws))
    assert result.success
    assert result.content == "sub/f.txt:2:needle here"


def test_open_beneath_follows_inner_symlinks_and_refuses_escapes(
    tmp_path: Path, backend: str
) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "f.txt").write_text("inner")
    (tmp_path / "secret.txt").write_text(SECRET)
    (ws / "inner").symlink_to("a/b")  # stays inside: followed
    (ws / "a" / "up").symlink_to("../a/b/f.txt")  # ".." that stays inside
    (ws / "out").symlink_to("../secret.txt")
    (ws / "abs").symlink_to(tmp_path / "secret.txt")
    (ws / "loop").symlink_to("loop")
    root = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for rel in ("inner/f.txt", "a/up", "a/b/../b/f.txt"):
            fd = beneath.open_beneath(root, rel, os.O_RDONLY)
            with os.fdopen(fd, "rb") as f:
                assert f.read() == b"inner", rel
        for rel, code in [
            ("out", errno.EXDEV),
            ("abs", errno.EXDEV),
            ("../secret.txt", errno.EXDEV),
            ("a/../../secret.txt", errno.EXDEV),
            ("loop", errno.ELOOP),
        ]:
            with pytest.raises(OSError) as caught:
                beneath.open_beneath(root, rel, os.O_RDONLY)
            assert caught.value.errno == code, rel
    finally:
        os.close(root)
