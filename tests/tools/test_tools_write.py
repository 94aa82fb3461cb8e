"""The tools that change things: create, edit and bash."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.tools.base import ToolContext, ToolError, ToolResult
from agent.tools.bash import (
    HEAD_LINES,
    MAX_TIMEOUT,
    TAIL_LINES,
    BashArgs,
    BashTool,
    Throttle,
    group_alive,
)
from agent.tools.create import CreateArgs, CreateTool
from agent.tools.edit import EditArgs, EditTool, count_lines, unified_diff
from agent.tools.registry import ToolRegistry, default_tools, execute


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    return other


@pytest.fixture
def progress() -> list[str]:
    return []


@pytest.fixture
def ctx(ws: Path, progress: list[str]) -> ToolContext:
    return ToolContext(cwd=ws, report_progress=progress.append)


REGISTRY = ToolRegistry(
    [CreateTool(), EditTool(), BashTool(kill_grace=0.5, drain_grace=0.2)],
)


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    return await execute(REGISTRY, name, json.dumps(arguments), ctx)


async def ok(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    result = await call(ctx, name, **arguments)
    assert result.success, result.content
    return result


async def fails(ctx: ToolContext, name: str, **arguments: Any) -> str:
    result = await call(ctx, name, **arguments)
    assert not result.success, result.content
    assert result.error == result.content
    return result.content


def alive(pid: int) -> bool:
    """Running, that is: a zombie nobody reaped (PID 1 in some containers) is dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state not in ("Z", "X")


async def gone(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def read_pid(path: Path, within: float = 5.0) -> int:
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        await asyncio.sleep(0.01)
    return int(path.read_text())


@pytest.fixture
def reap() -> Iterator[list[int]]:
    """PIDs a test leaves running on purpose; killed afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# --- registry ----------------------------------------------------------------------


def test_default_tools_include_write_tools() -> None:
    assert default_tools(autopilot=False).names() == [
        "view",
        "grep",
        "glob",
        "create",
        "edit",
        "bash",
        "ask_user",
        "update_todos",
    ]
    assert default_tools(autopilot=True).names()[-1] == "task_complete"
    schemas = {s["function"]["name"]: s["function"] for s in default_tools(False).schemas()}
    assert schemas["create"]["parameters"]["required"] == ["path", "file_text"]
    assert schemas["edit"]["parameters"]["required"] == ["path", "old_str", "new_str"]
    assert schemas["bash"]["parameters"]["required"] == ["command"]
    assert set(schemas["bash"]["parameters"]["properties"]) == {
        "command",
        "description",
        "timeout",
    }
    assert (CreateTool.kind, EditTool.kind, BashTool.kind) == ("write", "write", "shell")


def test_count_lines_and_diff_helpers() -> None:
    assert [count_lines(t) for t in ("", "a", "a\n", "a\nb", "a\nb\n", "\n")] == [0, 1, 1, 2, 2, 1]
    assert unified_diff("", "", "/dev/null", "b/x") == "--- /dev/null\n+++ b/x\n"
    assert unified_diff("a\n", "a", "a/x", "b/x") == (
        "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"
    )
    # A removed line that looks like a header is still a removed line.
    assert unified_diff("-- x", "y\n", "a/f", "b/f").splitlines()[3] == "--- x"


# --- create ------------------------------------------------------------------------


async def test_create_new_file_with_diff(ctx: ToolContext, ws: Path) -> None:
    result = await ok(ctx, "create", path="hello.py", file_text="import os\nprint(os.sep)\n")
    assert result.content == "Created file hello.py with 2 lines."
    assert result.detailed_content == (
        "--- /dev/null\n+++ b/hello.py\n@@ -0,0 +1,2 @@\n+import os\n+print(os.sep)\n"
    )
    assert (ws / "hello.py").read_bytes() == b"import os\nprint(os.sep)\n"


async def test_create_keeps_text_exactly(ctx: ToolContext, ws: Path) -> None:
    result = await ok(ctx, "create", path="w.txt", file_text="a\r\nné")
    assert result.content == "Created file w.txt with 2 lines."
    assert (ws / "w.txt").read_bytes() == "a\r\nné".encode()
    assert result.detailed_content is not None
    assert result.detailed_content.endswith("+a\n+né\n\\ No newline at end of file\n")
    empty = await ok(ctx, "create", path="empty.txt", file_text="")
    assert empty.content == "Created file empty.txt with 0 lines."
    assert empty.detailed_content == "--- /dev/null\n+++ b/empty.txt\n"
    assert (ws / "empty.txt").read_bytes() == b""


async def test_create_refuses_to_overwrite(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("keep me\n")
    message = await fails(ctx, "create", path="a.txt", file_text="new\n")
    assert "a.txt already exists" in message
    assert "Use edit to change an existing file" in message
    assert (ws / "a.txt").read_text() == "keep me\n"
    (ws / "d").mkdir()
    assert "d is an existing directory" in await fails(ctx, "create", path="d", file_text="x")


async def test_create_makes_parent_directories(ctx: ToolContext, ws: Path) -> None:
    result = await ok(ctx, "create", path="src/pkg/deep/mod.py", file_text="x = 1\n")
    assert result.content == "Created file src/pkg/deep/mod.py with 1 line."
    assert (ws / "src/pkg/deep/mod.py").read_text() == "x = 1\n"
    (ws / "file").write_text("")
    message = await fails(ctx, "create", path="file/child.txt", file_text="x")
    assert "a parent path is a file" in message


async def test_create_outside_workspace_refused(ctx: ToolContext, ws: Path, outside: Path) -> None:
    message = await fails(ctx, "create", path="../outside/x.txt", file_text="x")
    assert "outside the workspace" in message
    message = await fails(ctx, "create", path=str(outside / "y.txt"), file_text="x")
    assert "outside the workspace" in message
    (ws / "link").symlink_to(outside)
    assert "outside the workspace" in await fails(ctx, "create", path="link/z", file_text="x")
    assert list(outside.iterdir()) == []


async def test_create_extra_dir_allowed(ws: Path, outside: Path) -> None:
    ctx = ToolContext(cwd=ws, extra_dirs=[outside])
    result = await ok(ctx, "create", path=str(outside / "n.txt"), file_text="n\n")
    assert result.content == f"Created file {(outside / 'n.txt').resolve()} with 1 line."


def test_create_preview_does_not_write(ctx: ToolContext, ws: Path) -> None:
    tool = CreateTool()
    diff = tool.preview(CreateArgs(path="p/new.txt", file_text="one\n"), ctx)
    assert diff == "--- /dev/null\n+++ b/p/new.txt\n@@ -0,0 +1 @@\n+one\n"
    assert not (ws / "p").exists()
    (ws / "old.txt").write_text("")
    with pytest.raises(ToolError, match="already exists"):
        tool.preview(CreateArgs(path="old.txt", file_text="x"), ctx)


# --- edit --------------------------------------------------------------------------

TEN = "".join(f"line {n}\n" for n in range(1, 11))


async def test_edit_replaces_and_shows_diff(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text(TEN)
    result = await ok(ctx, "edit", path="a.txt", old_str="line 5\n", new_str="five\nFIVE\n")
    assert result.content == "Edited a.txt: replaced 1 line with 2 lines at line 5."
    assert (ws / "a.txt").read_text() == TEN.replace("line 5\n", "five\nFIVE\n")
    assert result.detailed_content == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -2,7 +2,8 @@\n line 2\n line 3\n line 4\n"
        "-line 5\n+five\n+FIVE\n line 6\n line 7\n line 8\n"
    )


async def test_edit_within_a_line_and_deleting(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.py").write_text("x = compute(1)\ny = 2\n")
    result = await ok(ctx, "edit", path="a.py", old_str="compute(1)", new_str="compute(2)")
    assert result.content == "Edited a.py: replaced 1 line with 1 line at line 1."
    result = await ok(ctx, "edit", path="a.py", old_str="y = 2\n", new_str="")
    assert result.content == "Edited a.py: replaced 1 line with 0 lines at line 2."
    assert (ws / "a.py").read_text() == "x = compute(2)\n"


async def test_edit_missing_file(ctx: ToolContext) -> None:
    message = await fails(ctx, "edit", path="nope.txt", old_str="a", new_str="b")
    assert message == "nope.txt does not exist; use create to make a new file"


async def test_edit_not_found(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text(TEN)
    message = await fails(ctx, "edit", path="a.txt", old_str="line 11", new_str="x")
    assert message.startswith("old_str was not found in a.txt.")
    assert "view the file" in message
    assert "whitespace exists" not in message
    assert (ws / "a.txt").read_text() == TEN


async def test_edit_not_found_hints_at_whitespace(ctx: ToolContext, ws: Path) -> None:
    (ws / "f.py").write_text("import os\n\ndef f():\n\treturn 1\n")
    message = await fails(ctx, "edit", path="f.py", old_str="def f():\n    return 1", new_str="")
    assert "differs only in whitespace exists at line 3" in message
    assert "tabs vs spaces" in message


async def test_edit_not_found_hints_at_view_line_numbers(ctx: ToolContext, ws: Path) -> None:
    (ws / "f.py").write_text("a = 1\nb = 2\n")
    message = await fails(ctx, "edit", path="f.py", old_str="1. a = 1\n2. b = 2", new_str="")
    assert "line numbers that view adds" in message


async def test_edit_not_unique(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\ny = 2\nx = 1\nx = 1\n")
    message = await fails(ctx, "edit", path="a.py", old_str="x = 1", new_str="x = 3")
    assert "old_str occurs 3 times in a.py (at lines 1, 3, 4)" in message
    assert "Include more surrounding context" in message
    # Overlapping occurrences are ambiguous too.
    (ws / "b.txt").write_text("aaa\n")
    assert "occurs 2 times" in await fails(ctx, "edit", path="b.txt", old_str="aa", new_str="b")


async def test_edit_same_strings_and_empty_old(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    message = await fails(ctx, "edit", path="a.txt", old_str="a", new_str="a")
    assert "old_str and new_str are the same" in message
    assert "old_str is empty" in await fails(ctx, "edit", path="a.txt", old_str="", new_str="b")


async def test_edit_preserves_crlf(ctx: ToolContext, ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await ok(ctx, "edit", path="w.txt", old_str="one\ntwo\n", new_str="one\n2\ntwo\n")
    assert (ws / "w.txt").read_bytes() == b"one\r\n2\r\ntwo\r\nthree\r\n"
    assert result.detailed_content is not None
    assert "\r" not in result.detailed_content
    await ok(ctx, "edit", path="w.txt", old_str="three", new_str="3\nthree")
    assert (ws / "w.txt").read_bytes() == b"one\r\n2\r\ntwo\r\n3\r\nthree\r\n"


async def test_edit_preserves_bom_and_missing_final_newline(ctx: ToolContext, ws: Path) -> None:
    (ws / "b.txt").write_bytes("\ufeffhé\nend".encode())
    result = await ok(ctx, "edit", path="b.txt", old_str="end", new_str="fin")
    assert (ws / "b.txt").read_bytes() == "\ufeffhé\nfin".encode()
    assert result.detailed_content is not None
    assert result.detailed_content.endswith(
        "-end\n\\ No newline at end of file\n+fin\n\\ No newline at end of file\n"
    )


async def test_edit_refuses_binary_and_non_utf8(ctx: ToolContext, ws: Path) -> None:
    (ws / "bin.dat").write_bytes(b"abc\0def")
    message = await fails(ctx, "edit", path="bin.dat", old_str="abc", new_str="x")
    assert "bin.dat is a binary file" in message
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    message = await fails(ctx, "edit", path="latin.txt", old_str="caf", new_str="x")
    assert "latin.txt is not valid UTF-8" in message
    assert (ws / "bin.dat").read_bytes() == b"abc\0def"


async def test_edit_keeps_mode_bits_and_leaves_no_temp_files(ctx: ToolContext, ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o751)
    await ok(ctx, "edit", path="run.sh", old_str="hi", new_str="hello")
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert script.read_text() == "#!/bin/sh\necho hello\n"
    assert sorted(p.name for p in ws.iterdir()) == ["run.sh"]


async def test_edit_through_symlink_edits_target(ctx: ToolContext, ws: Path) -> None:
    (ws / "real.txt").write_text("a\n")
    (ws / "link.txt").symlink_to("real.txt")
    result = await ok(ctx, "edit", path="link.txt", old_str="a", new_str="b")
    assert result.content.startswith("Edited real.txt:")
    assert (ws / "link.txt").is_symlink()
    assert (ws / "real.txt").read_text() == "b\n"


async def test_edit_outside_workspace_and_directories(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (outside / "s.txt").write_text("secret\n")
    message = await fails(ctx, "edit", path="../outside/s.txt", old_str="secret", new_str="x")
    assert "outside the workspace" in message
    assert (outside / "s.txt").read_text() == "secret\n"
    (ws / "d").mkdir()
    assert "is a directory" in await fails(ctx, "edit", path="d", old_str="a", new_str="b")


def test_edit_preview_does_not_write(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("old\n")
    tool = EditTool()
    diff = tool.preview(EditArgs(path="a.txt", old_str="old", new_str="new"), ctx)
    assert diff == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n"
    assert (ws / "a.txt").read_text() == "old\n"
    with pytest.raises(ToolError, match="not found"):
        tool.preview(EditArgs(path="a.txt", old_str="zzz", new_str="new"), ctx)


# --- bash --------------------------------------------------------------------------


async def test_bash_output_cwd_and_env(ctx: ToolContext, ws: Path) -> None:
    result = await ok(
        ctx,
        "bash",
        command="pwd; echo out; echo err >&2; echo $LOOPDECK $PAGER $GIT_PAGER; cat",
        description="look around",
    )
    assert result.content == f"{ws.resolve()}\nout\nerr\n1 cat cat\n<exited with exit code 0>"
    assert result.detailed_content == result.content


async def test_bash_no_output(ctx: ToolContext) -> None:
    result = await ok(ctx, "bash", command="true")
    assert result.content == "(no output)\n<exited with exit code 0>"


async def test_bash_non_zero_exit(ctx: ToolContext) -> None:
    message = await fails(ctx, "bash", command="echo oops; exit 3")
    assert message == "oops\n<exited with exit code 3>"


async def test_bash_empty_command_and_bad_timeout(ctx: ToolContext) -> None:
    assert await fails(ctx, "bash", command="  ") == "command is empty"
    assert "field 'timeout'" in await fails(ctx, "bash", command="true", timeout=0)


async def test_bash_timeout_is_capped(ctx: ToolContext) -> None:
    result = await ok(ctx, "bash", command="echo hi", timeout=MAX_TIMEOUT * 10)
    assert result.content == (
        f"hi\n<timeout capped at {MAX_TIMEOUT:g} s>\n<exited with exit code 0>"
    )


async def test_bash_timeout_kills_the_process_group(ctx: ToolContext, ws: Path) -> None:
    started = time.monotonic()
    message = await fails(
        ctx,
        "bash",
        command="echo before; sleep 30 & echo $! > child.pid; wait",
        timeout=0.5,
    )
    assert time.monotonic() - started < 3
    assert message.startswith("before\n")
    assert "<timed out after 0.5 s;" in message
    assert await gone(int((ws / "child.pid").read_text()))


async def test_bash_timeout_escalates_to_sigkill(ctx: ToolContext, ws: Path) -> None:
    command = "trap '' TERM; echo $$ > main.pid; while true; do sleep 0.05; done"
    started = time.monotonic()
    message = await fails(ctx, "bash", command=command, timeout=0.3)
    assert time.monotonic() - started < 3
    assert "timed out after 0.3 s" in message
    assert await gone(int((ws / "main.pid").read_text()))


async def test_bash_background_child_holding_output_does_not_hang(
    ctx: ToolContext, ws: Path
) -> None:
    started = time.monotonic()
    result = await ok(ctx, "bash", command="sleep 30 & echo $! > child.pid; echo started")
    assert time.monotonic() - started < 3
    assert result.content.startswith("started\n<background processes still holding the output")
    assert result.content.endswith("<exited with exit code 0>")
    assert await gone(int((ws / "child.pid").read_text()))


async def test_bash_output_held_outside_the_group_does_not_hang(
    ctx: ToolContext, ws: Path, reap: list[int]
) -> None:
    started = time.monotonic()
    result = await ok(ctx, "bash", command="setsid sleep 30 & echo $! > child.pid; echo hi")
    reap.append(int((ws / "child.pid").read_text()))
    assert time.monotonic() - started < 3
    assert result.content.startswith("hi\n<background processes still holding the output")


async def test_bash_detached_background_child_keeps_running(
    ctx: ToolContext, ws: Path, reap: list[int]
) -> None:
    result = await ok(ctx, "bash", command="sleep 30 > /dev/null 2>&1 & echo $! > child.pid")
    pid = int((ws / "child.pid").read_text())
    reap.append(pid)
    assert result.content == "(no output)\n<exited with exit code 0>"
    assert alive(pid)


async def test_bash_huge_output_is_capped(ctx: ToolContext) -> None:
    total = 20_000
    result = await ok(ctx, "bash", command=f"seq 1 {total}")
    lines = result.content.split("\n")
    cut = total - HEAD_LINES - TAIL_LINES
    assert lines[:3] == ["1", "2", "3"]
    assert lines[HEAD_LINES - 1] == str(HEAD_LINES)
    assert lines[HEAD_LINES] == f"[… {cut} lines cut …]"
    assert lines[HEAD_LINES + 1] == str(total - TAIL_LINES + 1)
    assert lines[-2:] == [str(total), "<exited with exit code 0>"]
    assert result.detailed_content is not None
    full = result.detailed_content.split("\n")
    assert full[:-1] == [str(n) for n in range(1, total + 1)]


async def test_bash_long_lines_are_cut(ctx: ToolContext) -> None:
    result = await ok(ctx, "bash", command="head -c 100000 /dev/zero | tr '\\0' x; echo; echo end")
    first, end, _status = result.content.split("\n")
    assert first == "x" * 2000 + "… [line truncated, 100000 chars]"
    assert end == "end"
    assert result.detailed_content is not None
    assert "[line truncated, 100000 chars]" in result.detailed_content
    many = await ok(ctx, "bash", command="for i in $(seq 1 50); do printf '%0999d\\n' $i; done")
    # 16 KB of head holds 16 of these lines, whatever the line count allows.
    assert "[… " in many.content
    assert len(many.content) < 30_000


async def test_bash_binary_output(ctx: ToolContext) -> None:
    result = await ok(
        ctx, "bash", command="printf 'a\\000b\\377\\376c\\n'; head -c 5000 /dev/urandom"
    )
    assert result.content.startswith("a\ufffdb\ufffd\ufffdc\n")
    assert "\0" not in result.content
    assert result.detailed_content is not None
    assert "\0" not in result.detailed_content


async def test_bash_reports_progress_lines(ctx: ToolContext, progress: list[str]) -> None:
    await ok(
        ctx, "bash", command="for i in 1 2 3; do echo line$i; sleep 0.1; done; echo; echo -n end"
    )
    assert progress == ["line1", "line2", "line3", "end"]


async def test_bash_progress_is_throttled_but_ends_on_the_last_line(
    ctx: ToolContext, progress: list[str]
) -> None:
    await ok(ctx, "bash", command="seq 1 20000")
    assert 1 <= len(progress) < 100
    assert progress[0] == "1"
    assert progress[-1] == "20000"


async def test_throttle_reports_latest_after_interval() -> None:
    seen: list[str] = []
    throttle = Throttle(seen.append, 0.05)
    for line in ("a", "b", "c"):
        throttle.push(line)
    assert seen == ["a"]
    # The timer sends the latest line (however late a busy loop runs it)...
    await asyncio.wait_for(_until(lambda: len(seen) > 1), 5)
    assert seen == ["a", "c"]
    await asyncio.sleep(0.06)  # ...then a whole interval passes after it
    throttle.push("d")
    throttle.push("e")
    throttle.flush()
    assert seen == ["a", "c", "d", "e"]


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.005)


async def test_bash_progress_carriage_returns(ctx: ToolContext, progress: list[str]) -> None:
    result = await ok(ctx, "bash", command="printf '10%%\\r50%%\\r100%%\\r\\n'")
    assert result.content == "100%\n<exited with exit code 0>"
    assert progress == ["100%"]


# Cancelled at once, the abort often lands while asyncio is still setting up the pipes.
@pytest.mark.parametrize("delay", [0.0, 0.0, 0.0, 0.3])
async def test_bash_cancellation_kills_the_process_group(
    ctx: ToolContext, ws: Path, delay: float
) -> None:
    command = "sleep 30 & echo $! > child.pid; echo $$ > main.pid; wait"
    task = asyncio.create_task(call(ctx, "bash", command=command))
    child = await read_pid(ws / "child.pid")
    main = await read_pid(ws / "main.pid")
    await asyncio.sleep(delay)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(child)
    assert await gone(main)


async def test_bash_missing_cwd(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path / "missing")
    message = await fails(ctx, "bash", command="true")
    assert message.startswith("could not start /bin/bash in")


async def test_bash_direct_run(ws: Path) -> None:
    result = await BashTool().run(BashArgs(command="echo direct"), ToolContext(cwd=ws))
    assert result.success
    assert result.content == "direct\n<exited with exit code 0>"


def test_group_alive_for_missing_group() -> None:
    # PID 2**22 + 1 is beyond Linux's default pid_max, so no such group exists.
    assert not group_alive(2**22 + 1)
