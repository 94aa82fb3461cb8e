"""The read-only tools (view, grep, glob, task_complete), workspace paths, and execute."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.glob import GlobTool, glob_to_regex
from agent.tools.grep import MAX_MATCHES, GrepTool
from agent.tools.paths import display_path, resolve_in_workspace
from agent.tools.registry import ToolRegistry, default_tools, execute
from agent.tools.task_complete import TaskCompleteTool
from agent.tools.view import MAX_LINES, ViewTool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("password=hunter2\n")
    return other


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(cwd=ws)


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


REGISTRY = ToolRegistry([ViewTool(), GrepTool(rg_path=None), GlobTool(), TaskCompleteTool()])


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    return await execute(REGISTRY, name, json.dumps(arguments), ctx)


async def ok(ctx: ToolContext, name: str, **arguments: Any) -> str:
    result = await call(ctx, name, **arguments)
    assert result.success, result.content
    return result.content


async def fails(ctx: ToolContext, name: str, **arguments: Any) -> str:
    result = await call(ctx, name, **arguments)
    assert not result.success, result.content
    assert result.error == result.content
    return result.content


# --- paths -----------------------------------------------------------------------


def test_relative_path_resolves_inside(ctx: ToolContext, ws: Path) -> None:
    write(ws, "src/a.py", "x")
    assert resolve_in_workspace(ctx, "src/a.py") == (ws / "src/a.py").resolve()
    assert resolve_in_workspace(ctx, "./src/../src/a.py") == (ws / "src/a.py").resolve()
    assert resolve_in_workspace(ctx, str(ws / "src/a.py")) == (ws / "src/a.py").resolve()
    assert resolve_in_workspace(ctx, "not/yet/there.txt") == (ws / "not/yet/there.txt").resolve()


@pytest.mark.parametrize("escape", ["..", "../outside/secret.txt", "src/../../outside", "/etc"])
def test_escapes_are_refused(ctx: ToolContext, ws: Path, outside: Path, escape: str) -> None:
    with pytest.raises(ToolError) as info:
        resolve_in_workspace(ctx, escape)
    assert str(info.value) == (
        f"path {escape} is outside the workspace {ws}; add it with --add-dir"
    )


def test_absolute_path_outside_is_refused(ctx: ToolContext, outside: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ctx, str(outside / "secret.txt"))


def test_sibling_with_common_prefix_is_outside(ctx: ToolContext, ws: Path) -> None:
    sibling = ws.parent / (ws.name + "2")
    sibling.mkdir()
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ctx, str(sibling))


def test_symlinks_leading_outside_are_refused(ctx: ToolContext, ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside)
    for path in ("link.txt", "linkdir", "linkdir/secret.txt"):
        with pytest.raises(ToolError, match="outside the workspace"):
            resolve_in_workspace(ctx, path)


def test_symlink_inside_is_fine(ctx: ToolContext, ws: Path) -> None:
    target = write(ws, "real/file.txt", "hi\n")
    (ws / "alias").symlink_to(ws / "real")
    assert resolve_in_workspace(ctx, "alias/file.txt") == target.resolve()


def test_extra_dirs_are_allowed(ws: Path, outside: Path) -> None:
    ctx = ToolContext(cwd=ws, extra_dirs=[outside])
    resolved = resolve_in_workspace(ctx, str(outside / "secret.txt"))
    assert resolved == (outside / "secret.txt").resolve()
    assert resolve_in_workspace(ctx, "../outside/secret.txt") == resolved
    assert display_path(ctx, resolved) == str(resolved)


def test_empty_and_nul_paths_are_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="path is empty"):
        resolve_in_workspace(ctx, "  ")
    with pytest.raises(ToolError, match="invalid path"):
        resolve_in_workspace(ctx, "a\0b")


async def test_every_tool_refuses_escapes(ctx: ToolContext, outside: Path) -> None:
    secret = str(outside / "secret.txt")
    assert "outside the workspace" in await fails(ctx, "view", path=secret)
    assert "outside the workspace" in await fails(ctx, "view", path="../outside")
    assert "outside the workspace" in await fails(ctx, "grep", pattern="password", path="..")
    assert "outside the workspace" in await fails(ctx, "glob", pattern="*", path="..")
    assert "outside the workspace" in await fails(ctx, "glob", pattern="../outside/*.txt")
    assert "outside the workspace" in await fails(ctx, "glob", pattern=f"{outside}/*.txt")


# --- view ------------------------------------------------------------------------


async def test_view_file_has_line_numbers(ctx: ToolContext, ws: Path) -> None:
    write(ws, "a.txt", "alpha\nbeta\r\n\ngamma")
    result = await call(ctx, "view", path="a.txt")
    assert result.success
    assert result.content == "1. alpha\n2. beta\n3. \n4. gamma"
    assert result.detailed_content is None


async def test_view_range(ctx: ToolContext, ws: Path) -> None:
    write(ws, "a.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    assert await ok(ctx, "view", path="a.txt", view_range=[3, 5]) == (
        "3. line 3\n4. line 4\n5. line 5"
    )
    assert await ok(ctx, "view", path="a.txt", view_range=[9, -1]) == "9. line 9\n10. line 10"
    assert await ok(ctx, "view", path="a.txt", view_range=[10, 10]) == "10. line 10"
    assert await ok(ctx, "view", path="a.txt", view_range=[9, 50]) == (
        "9. line 9\n10. line 10\n[view_range end 50 is past the end of the file (10 lines).]"
    )


@pytest.mark.parametrize(
    ("view_range", "message"),
    [
        ([11, 12], "view_range start 11 is past the end of a.txt (10 lines)"),
        ([0, 3], "view_range start must be 1 or more, got 0"),
        ([5, 2], "view_range end 2 is before start 5"),
        ([5, 0], "view_range end 0 is before start 5"),
    ],
)
async def test_view_bad_range(
    ctx: ToolContext, ws: Path, view_range: list[int], message: str
) -> None:
    write(ws, "a.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    assert message in await fails(ctx, "view", path="a.txt", view_range=view_range)


async def test_view_range_needs_two_integers(ctx: ToolContext, ws: Path) -> None:
    write(ws, "a.txt", "x\n")
    assert "view_range" in await fails(ctx, "view", path="a.txt", view_range=[1])
    assert "view_range" in await fails(ctx, "view", path="a.txt", view_range=[1, 2, 3])
    assert "view_range" in await fails(ctx, "view", path="a.txt", view_range="1-2")


async def test_view_missing_path(ctx: ToolContext) -> None:
    assert await fails(ctx, "view", path="nope.txt") == "path nope.txt does not exist"


async def test_view_binary_file(ctx: ToolContext, ws: Path) -> None:
    write(ws, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    message = await fails(ctx, "view", path="img.png")
    assert message == "img.png is a binary file; it cannot be shown as text"


async def test_view_empty_file(ctx: ToolContext, ws: Path) -> None:
    write(ws, "empty.txt", "")
    assert await ok(ctx, "view", path="empty.txt") == "(empty file)"
    assert "empty" in await fails(ctx, "view", path="empty.txt", view_range=[1, 1])


async def test_view_huge_file_is_capped(ctx: ToolContext, ws: Path) -> None:
    write(ws, "big.txt", "".join(f"row {n}\n" for n in range(1, 2501)))
    lines = (await ok(ctx, "view", path="big.txt")).split("\n")
    assert len(lines) == MAX_LINES + 1
    assert lines[0] == "1. row 1"
    assert lines[MAX_LINES - 1] == "2000. row 2000"
    assert lines[-1] == ("[Showing lines 1-2000 of 2500. Use view_range [2001, 2500] to see more.]")
    tail = await ok(ctx, "view", path="big.txt", view_range=[2001, -1])
    assert tail.split("\n")[-1] == "2500. row 2500"


async def test_view_long_line_is_truncated(ctx: ToolContext, ws: Path) -> None:
    write(ws, "min.js", "x" * 5000 + "\n")
    assert await ok(ctx, "view", path="min.js") == (
        "1. " + "x" * 2000 + "… [line truncated, 5000 chars]"
    )


async def test_view_directory(ctx: ToolContext, ws: Path) -> None:
    write(ws, "b.txt", "")
    write(ws, "a.txt", "")
    write(ws, "src/main.py", "")
    write(ws, ".git/HEAD", "")
    write(ws, ".env", "")
    assert await ok(ctx, "view", path=".") == ".env\na.txt\nb.txt\nsrc/"
    assert await ok(ctx, "view", path="src") == "main.py"
    (ws / "empty").mkdir()
    assert await ok(ctx, "view", path="empty") == "(empty directory)"
    assert "directory" in await fails(ctx, "view", path="src", view_range=[1, 2])


async def test_view_directory_is_capped(ctx: ToolContext, ws: Path) -> None:
    for n in range(1005):
        write(ws, f"many/f{n:04d}.txt", "")
    lines = (await ok(ctx, "view", path="many")).split("\n")
    assert len(lines) == 1001
    assert lines[0] == "f0000.txt"
    assert lines[-1].startswith("[5 more entries not shown")


# --- grep ------------------------------------------------------------------------


@pytest.fixture
def code(ws: Path) -> Path:
    write(ws, "src/app.py", "import os\n\ndef main():\n    return os.getcwd()\n")
    write(ws, "src/util/helpers.py", "def helper():\n    # TODO tidy\n    pass\n")
    write(ws, "README.md", "# Demo\nTODO: write docs\nMain entry is src/app.py\n")
    write(ws, "notes.txt", "todo lower\r\nTODO upper\r\n")
    write(ws, ".git/config", "TODO in git\n")
    write(ws, ".venv/lib.py", "TODO in venv\n")
    write(ws, "node_modules/x/index.js", "TODO in node_modules\n")
    write(ws, "data.bin", b"TODO\x00\x01\x02")
    return ws


async def test_grep_finds_sorted_matches(ctx: ToolContext, code: Path) -> None:
    assert await ok(ctx, "grep", pattern="TODO") == (
        "README.md:2:TODO: write docs\n"
        "notes.txt:2:TODO upper\n"
        "src/util/helpers.py:2:    # TODO tidy"
    )


async def test_grep_ignore_case(ctx: ToolContext, code: Path) -> None:
    assert await ok(ctx, "grep", pattern="todo", ignore_case=True) == (
        "README.md:2:TODO: write docs\n"
        "notes.txt:1:todo lower\n"
        "notes.txt:2:TODO upper\n"
        "src/util/helpers.py:2:    # TODO tidy"
    )
    assert await ok(ctx, "grep", pattern="todo", ignore_case=False) == "notes.txt:1:todo lower"


async def test_grep_glob_filter(ctx: ToolContext, code: Path) -> None:
    assert await ok(ctx, "grep", pattern="def ", glob="*.py") == (
        "src/app.py:3:def main():\nsrc/util/helpers.py:1:def helper():"
    )
    assert await ok(ctx, "grep", pattern="TODO", glob="*.{md,txt}") == (
        "README.md:2:TODO: write docs\nnotes.txt:2:TODO upper"
    )
    assert await ok(ctx, "grep", pattern="def ", glob="src/*.py") == "src/app.py:3:def main():"
    assert await ok(ctx, "grep", pattern="def ", glob="*.md") == "No matches found."


async def test_grep_path_and_regex_features(ctx: ToolContext, code: Path) -> None:
    assert await ok(ctx, "grep", pattern=r"^def \w+\(\):$", path="src/util") == (
        "src/util/helpers.py:1:def helper():"
    )
    assert await ok(ctx, "grep", pattern="upper$", path="notes.txt") == "notes.txt:2:TODO upper"


async def test_grep_no_matches(ctx: ToolContext, code: Path) -> None:
    result = await call(ctx, "grep", pattern="no such text anywhere")
    assert result.success
    assert result.content == "No matches found."


async def test_grep_invalid_regex(ctx: ToolContext, code: Path) -> None:
    message = await fails(ctx, "grep", pattern="main(")
    assert message.startswith("invalid regex 'main(': missing ), unterminated subpattern")


async def test_grep_missing_path_and_binary_path(ctx: ToolContext, code: Path) -> None:
    assert await fails(ctx, "grep", pattern="x", path="nope") == "path nope does not exist"
    assert "binary file" in await fails(ctx, "grep", pattern="TODO", path="data.bin")


async def test_grep_does_not_follow_symlinks_outside(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    (ws / "leakdir").symlink_to(outside)
    assert await ok(ctx, "grep", pattern="password") == "No matches found."


async def test_grep_caps_matches(ctx: ToolContext, ws: Path) -> None:
    write(ws, "many.txt", "hit\n" * (MAX_MATCHES + 50))
    lines = (await ok(ctx, "grep", pattern="hit")).split("\n")
    assert len(lines) == MAX_MATCHES + 1
    assert lines[0] == "many.txt:1:hit"
    assert lines[MAX_MATCHES - 1] == f"many.txt:{MAX_MATCHES}:hit"
    assert lines[-1] == "[50 more matches not shown; narrow the pattern, path or glob.]"


async def test_grep_sorts_numerically_by_line(ctx: ToolContext, ws: Path) -> None:
    write(ws, "f.txt", "".join("hit\n" if n in (2, 10) else "-\n" for n in range(1, 12)))
    assert await ok(ctx, "grep", pattern="hit") == "f.txt:2:hit\nf.txt:10:hit"


# A stand-in for ripgrep: notes its arguments, then counts per file ("path NUL
# count", CRLF as with --crlf) or lists as ripgrep does with --heading --null (per
# file "path NUL", then "N:text" lines, files apart by an empty line), in the order
# its threads finished, not path order.
FAKE_RG = """\
import json, sys
with open(sys.argv[0] + ".argv", "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
out = sys.stdout.buffer
if "--count" in sys.argv:
    out.write(b"./d.py\\x002\\r\\n./b.py\\x007\\r\\n./a.py\\x001\\r\\n")
    out.write(b"c.py\\x001\\r\\n./bin.py\\x001\\r\\n")
    sys.exit(0)
out.write(b"./b.py\\x007:b seven\\r\\n\\n")
out.write(b"./bin.py\\x001:x\\n./bin.py:WARNING: stopped searching binary file\\n\\n")
out.write(b"./a.py\\x003:a three\\n\\n")
out.write(b"./d.py\\x002:d two\\n5:d five\\n\\n")
out.write(b"c.py\\x001:\\xffhi\\n")
"""


def fake_rg(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-rg"
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(0o755)
    return script


async def test_grep_ripgrep_path_with_injected_executable(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    script = fake_rg(tmp_path, FAKE_RG)
    # Each listed line is checked against the file read beneath the workspace.
    write(ws, "a.py", "1\n2\na three\n")
    write(ws, "b.py", "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\nb seven\r\n")
    write(ws, "c.py", b"\xffhi\n")
    write(ws, "d.py", "1\nd two\n3\n4\nd five\n")
    write(ws, "bin.py", b"x\n\0")
    tool = GrepTool(rg_path=str(script))
    assert tool.ripgrep() == str(script)
    result = await tool.run(tool.Args(pattern="-x", glob="*.py", ignore_case=True), ctx)
    # In path order, whatever order they were listed in; the file found binary when
    # listed is left out. b.py's count says 7 lines but only one is listed (a fake),
    # and bin.py's one is not shown: 7 more.
    assert result.content == (
        "a.py:3:a three\nb.py:7:b seven\nc.py:1:\ufffdhi\nd.py:2:d two\nd.py:5:d five\n"
        "[7 more matches not shown; narrow the pattern, path or glob.]"
    )
    count_argv, lines_argv = (
        json.loads(line) for line in Path(f"{script}.argv").read_text().splitlines()
    )
    assert count_argv[:5] == ["--no-config", "--hidden", "--no-ignore", "--crlf", "--no-messages"]
    assert {"--ignore-case", "--count", "--with-filename", "--null"} <= set(count_argv)
    assert count_argv[count_argv.index("--glob") + 1] == "*.py"
    assert "!.git" in count_argv and "!node_modules" in count_argv
    assert count_argv[-4:] == ["--regexp", "-x", "--", "."]
    # The second run lists only the files that hold the shown lines, in path order.
    assert {"--heading", "--null", "--line-number", "--ignore-case"} <= set(lines_argv)
    assert lines_argv[lines_argv.index("--max-count") + 1] == str(MAX_MATCHES)
    assert "--glob" not in lines_argv
    assert lines_argv[-8:] == [
        "--regexp",
        "-x",
        "--",
        "./a.py",
        "./b.py",
        "./bin.py",
        "./d.py",
        "c.py",
    ]


async def test_grep_ripgrep_error_is_a_failure(ctx: ToolContext, tmp_path: Path) -> None:
    script = fake_rg(
        tmp_path, "import sys\nsys.stderr.write('regex parse error: boom')\nsys.exit(2)\n"
    )
    result = await execute(
        ToolRegistry([GrepTool(rg_path=str(script))]), "grep", '{"pattern": "("}', ctx
    )
    assert not result.success
    assert result.content == "grep failed for pattern '(': regex parse error: boom"


def test_grep_defaults_to_ripgrep_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/bin/rg" if name == "rg" else None)
    assert GrepTool().ripgrep() == "/opt/bin/rg"
    assert GrepTool(rg_path=None).ripgrep() is None


def test_grep_finds_the_ripgrep_installed_beside_the_interpreter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rg = tmp_path / "rg"
    rg.write_text("#!/bin/sh\n")
    rg.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert GrepTool().ripgrep() == str(rg)
    rg.chmod(0o644)
    assert GrepTool().ripgrep() is None


@pytest.mark.skipif(GrepTool().ripgrep() is None, reason="ripgrep (rg) is not installed")
async def test_grep_ripgrep_and_python_agree(ctx: ToolContext, code: Path) -> None:
    write(code, "many.txt", "hit\n" * (MAX_MATCHES + 5))
    # Matches spread over more files than fit in what is shown: the first files in
    # path order are read, whatever order ripgrep walked them in.
    for n in range(150):
        write(code, f"spread/f{n:03d}.txt", "wide\n-\nwide\n")
    write(code, ".hidden/h.txt", "TODO hidden\n")
    write(code, ".gitignore", "notes.txt\n")
    # A NUL byte past ripgrep's first read: it lists the lines before it, then a notice.
    write(code, "late.bin", b"TODO early\n" + b"-" * 200_000 + b"\nhit\n\0")
    write(code, "7days/late.bin", b"TODO early\n" + b"-" * 200_000 + b"\n\0")
    write(code, "7days/log.txt", "TODO this week\n")
    # A last line ending in CR without a newline: ripgrep adds its own CRLF to it.
    write(code, "cr.txt", "hit\r\nTODO cr\r")
    (code / "alias.md").symlink_to(code / "README.md")
    (code / "alias_dir").symlink_to(code / "src")
    rg, py = GrepTool(rg_path="auto"), GrepTool(rg_path=None)
    cases: list[dict[str, Any]] = [
        {"pattern": "TODO"},
        {"pattern": "todo", "ignore_case": True},
        {"pattern": "def ", "glob": "*.py"},
        {"pattern": "TODO", "glob": "*.{md,txt}"},
        {"pattern": "def ", "glob": "src/*.py"},
        {"pattern": r"^\s+return", "path": "src"},
        {"pattern": "upper$", "path": "notes.txt"},
        {"pattern": "TODO", "path": "7days"},
        {"pattern": "cr$", "path": "cr.txt"},
        {"pattern": "hit"},
        {"pattern": "wide"},
        {"pattern": "WIDE|hit", "ignore_case": True},
        {"pattern": "nothing matches this"},
    ]
    for case in cases:
        expected = await py.run(py.Args(**case), ctx)
        actual = await rg.run(rg.Args(**case), ctx)
        assert actual.content == expected.content, case
    with pytest.raises(ToolError):
        await rg.run(rg.Args(pattern="main("), ctx)


# --- glob ------------------------------------------------------------------------


async def test_glob_recursive_and_top_level(ctx: ToolContext, code: Path) -> None:
    assert await ok(ctx, "glob", pattern="**/*.py") == "src/app.py\nsrc/util/helpers.py"
    assert await ok(ctx, "glob", pattern="*.md") == "README.md"
    assert await ok(ctx, "glob", pattern="src/*.py") == "src/app.py"
    assert await ok(ctx, "glob", pattern="src/**") == "src/app.py\nsrc/util/helpers.py"
    assert await ok(ctx, "glob", pattern="*.{md,txt}") == "README.md\nnotes.txt"
    assert await ok(ctx, "glob", pattern="**/help?rs.py") == "src/util/helpers.py"


async def test_glob_path_argument(ctx: ToolContext, code: Path) -> None:
    assert await ok(ctx, "glob", pattern="*.py", path="src/util") == "src/util/helpers.py"
    assert await ok(ctx, "glob", pattern="**/*.py", path="src") == (
        "src/app.py\nsrc/util/helpers.py"
    )
    assert await ok(ctx, "glob", pattern=f"{code}/src/*.py") == "src/app.py"
    assert await fails(ctx, "glob", pattern="*", path="missing") == "path missing does not exist"
    assert "not a directory" in await fails(ctx, "glob", pattern="*", path="README.md")


async def test_glob_skips_vendored_dirs(ctx: ToolContext, code: Path) -> None:
    everything = (await ok(ctx, "glob", pattern="**/*")).split("\n")
    assert everything == [
        "README.md",
        "data.bin",
        "notes.txt",
        "src/app.py",
        "src/util/helpers.py",
    ]


async def test_glob_no_match_hints_at_double_star(ctx: ToolContext, code: Path) -> None:
    assert await ok(ctx, "glob", pattern="*.py") == (
        "No files matched. '*' does not cross directories; try '**/*.py' to search subdirectories."
    )
    assert await ok(ctx, "glob", pattern="**/*.rs") == "No files matched."


async def test_glob_is_capped(ctx: ToolContext, ws: Path) -> None:
    for n in range(510):
        write(ws, f"d/f{n:03d}.txt", "")
    lines = (await ok(ctx, "glob", pattern="**/*.txt")).split("\n")
    assert len(lines) == 501
    assert lines[0] == "d/f000.txt"
    assert lines[-1] == "[10 more files not shown; narrow the pattern or path.]"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("d/**/x", "d/x", True),
        ("d/**/x", "d/a/b/x", True),
        ("d/**", "d/a/b", True),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("*.{js,ts}", "a.ts", True),
        ("*.{js,ts}", "a.tsx", False),
        ("a+b(c).txt", "a+b(c).txt", True),
        ("[", "[", True),
    ],
)
def test_glob_to_regex(pattern: str, path: str, expected: bool) -> None:
    assert (glob_to_regex(pattern).fullmatch(path) is not None) is expected


# --- task_complete ---------------------------------------------------------------


async def test_task_complete(ctx: ToolContext) -> None:
    assert await ok(ctx, "task_complete", summary="Fixed the bug and ran the tests.") == (
        "Task marked complete."
    )
    assert "missing required field 'summary'" in await fails(ctx, "task_complete")
    description = TaskCompleteTool.description
    assert "only when the whole task is done" in description
    assert "summary should say what was done" in description


# --- registry and execute --------------------------------------------------------


def test_default_tools() -> None:
    everyday = ["view", "grep", "glob", "create", "edit", "bash", "ask_user", "update_todos"]
    assert default_tools(autopilot=False).names() == everyday
    registry = default_tools(autopilot=True)
    assert registry.names() == [*everyday, "task_complete"]
    assert registry.schemas() is registry.schemas()  # built once, not every turn
    assert registry.get("nope") is None
    assert isinstance(registry.get("view"), ViewTool)
    schemas = {s["function"]["name"]: s for s in registry.schemas()}
    view = schemas["view"]["function"]["parameters"]
    assert view["required"] == ["path"]
    assert view["additionalProperties"] is False
    assert set(schemas["grep"]["function"]["parameters"]["properties"]) == {
        "pattern",
        "path",
        "glob",
        "ignore_case",
    }
    assert set(schemas["glob"]["function"]["parameters"]["properties"]) == {"pattern", "path"}
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ViewTool())


async def test_execute_unknown_tool(ctx: ToolContext) -> None:
    result = await execute(default_tools(autopilot=False), "nope", "{}", ctx)
    assert not result.success
    assert result.content == (
        "unknown tool 'nope'; available tools: view, grep, glob, create, edit, bash, "
        "ask_user, update_todos"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"path": "a.txt"', "arguments for view are not valid JSON (Expecting"),
        ("path=a.txt", "arguments for view are not valid JSON (Expecting value at line 1"),
        (
            '["a.txt"]',
            "arguments for view must be a JSON object of the tool's parameters, got an array",
        ),
        ('"a.txt"', "must be a JSON object of the tool's parameters, got a string"),
        ("null", "got null"),
    ],
)
async def test_execute_malformed_json(ctx: ToolContext, raw: str, message: str) -> None:
    result = await execute(REGISTRY, "view", raw, ctx)
    assert not result.success
    assert message in result.content


async def test_execute_argument_validation(ctx: ToolContext, ws: Path) -> None:
    write(ws, "a.txt", "x\n")
    missing = await execute(REGISTRY, "view", None, ctx)
    assert missing.content == (
        "invalid arguments for view: missing required field 'path'. "
        "Parameters are: path, view_range"
    )
    assert (await execute(REGISTRY, "view", "", ctx)).content == missing.content
    wrong = await fails(ctx, "view", path=12)
    assert "field 'path': Input should be a valid string (got 12)" in wrong
    wrong_range = await fails(ctx, "view", path="a.txt", view_range=["a", 2])
    assert "field 'view_range.0': Input should be a valid integer" in wrong_range
    extra = await fails(ctx, "view", path="a.txt", file="a.txt")
    assert "unknown field 'file'" in extra
    assert "Parameters are: path, view_range" in extra
    flag = await fails(ctx, "grep", pattern="x", ignore_case="maybe")
    assert "field 'ignore_case'" in flag


async def test_execute_accepts_dict_arguments(ctx: ToolContext, ws: Path) -> None:
    write(ws, "a.txt", "x\n")
    result = await execute(REGISTRY, "view", {"path": "a.txt"}, ctx)
    assert result.content == "1. x"


class _Args(ToolArgs):
    how: str


class _Boom(Tool):
    name = "boom"
    description = "fails on purpose"
    Args: ClassVar[type[ToolArgs]] = _Args

    async def run(self, args: _Args, ctx: ToolContext) -> ToolResult:
        if args.how == "tool_error":
            raise ToolError("nothing to see")
        if args.how == "cancel":
            raise asyncio.CancelledError
        raise RuntimeError("kaboom")


async def test_execute_tool_errors_and_crashes(ctx: ToolContext) -> None:
    registry = ToolRegistry([_Boom()])
    failed = await execute(registry, "boom", '{"how": "tool_error"}', ctx)
    assert not failed.success
    assert failed.content == failed.error == "nothing to see"
    crashed = await execute(registry, "boom", '{"how": "crash"}', ctx)
    assert not crashed.success
    assert crashed.content == "tool boom crashed: RuntimeError: kaboom"
    with pytest.raises(asyncio.CancelledError):
        await execute(registry, "boom", '{"how": "cancel"}', ctx)


async def test_execute_cancellation_of_a_running_tool(ctx: ToolContext) -> None:
    started = asyncio.Event()

    class Slow(Tool):
        name = "slow"
        description = "waits"
        Args: ClassVar[type[ToolArgs]] = ToolArgs

        async def run(self, args: ToolArgs, ctx: ToolContext) -> ToolResult:
            started.set()
            await asyncio.sleep(60)
            return ToolResult(content="late")

    task = asyncio.create_task(execute(ToolRegistry([Slow()]), "slow", "{}", ctx))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_display_path(ctx: ToolContext, ws: Path) -> None:
    assert display_path(ctx, ws.resolve() / "src" / "a.py") == "src/a.py"
    assert display_path(ctx, ws.resolve()) == "."
    assert os.path.isabs(display_path(ctx, Path("/elsewhere/x")))
