"""The user's own command in the timeline: its output's preview, all of it on a click,
and the sandbox's note to the user said whole."""

from __future__ import annotations

from rich.console import Console

from agent.transcript.blocks import ShellBlock
from widgets.shell_view import PREVIEW_LINES, shell_renderable

NOTE = (
    "sandbox: this may have been refused by loopdeck's sandbox: commands may write only "
    "inside /home/someone/projects/a-rather-long-workspace-name/and/deeper/still, "
    "/tmp/loopdeck-sandbox-123 (workspace-write). To let commands write in another "
    "folder, use /add-dir PATH (or start loopdeck with --add-dir PATH); to run commands "
    "without the sandbox, start loopdeck with --sandbox off."
)


def drawn(block: ShellBlock, *, expanded: bool = False) -> str:
    console = Console(width=80, record=True, color_system=None)
    console.print(shell_renderable(block, expanded=expanded))
    return " ".join(console.export_text().split())  # the note wraps; compare its words


def test_the_sandbox_note_is_shown_whole_after_the_preview() -> None:
    output = "\n".join(f"line {n}" for n in range(30))
    block = ShellBlock(1, "touch ../x || true", status="success", output=f"{output}\n{NOTE}")
    text = drawn(block)
    assert " ".join(NOTE.split()) in text
    assert f"line {PREVIEW_LINES}" not in text.split("…")[0]  # the preview is cut...
    assert "more lines (click to show)" in text


def test_a_click_shows_all_of_the_output() -> None:
    output = "\n".join(f"line {n}" for n in range(30))
    block = ShellBlock(1, "seq 30", status="success", output=output)
    text = drawn(block, expanded=True)
    assert "line 29" in text and "more lines" not in text


def test_a_failed_command_shows_its_error_and_the_note() -> None:
    block = ShellBlock(
        1,
        "touch ../x",
        status="failure",
        output="touch: cannot touch '../x': Permission denied",
        error=f"touch: cannot touch '../x': Permission denied\n{NOTE}",
    )
    text = drawn(block)
    assert "Permission denied" in text and "--sandbox off." in text
