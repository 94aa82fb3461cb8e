"""Real GitHub Copilot CLI logs folded as they happened (tests/fixtures/copilot-real).

Each test reads a log Copilot wrote. Where no recorded log shows a shape the schema
allows (a ``custom`` tool request, every abort reason, a shell-mode user message),
the test changes or adds that one line in a real log, and checks with the official
parser that the line is valid.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import json
import re
import shutil
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from copilot.generated import session_events as sdk
from rich.console import Console, RenderableType

from agent.events import schema as ours
from agent.events.schema import AssistantMessageData, event_from_dict
from agent.log.session_row import SessionSummary
from agent.log.store import SessionStore
from agent.log.summary import summarize_events
from agent.transcript.blocks import (
    AbortBlock,
    RawBlock,
    ShellBlock,
    ToolCallBlock,
    TurnBlock,
    UserBlock,
)
from agent.transcript.fold import Transcript, fold
from app.cli import main
from app.export import export_session, to_html, to_markdown
from tests.support.paths import FIXTURES
from widgets.format import abort_reason
from widgets.message_blocks import AbortView, NudgeView
from widgets.shell_view import shell_renderable
from widgets.tool_card import card_renderable
from widgets.turn_view import header_text

REAL = FIXTURES / "copilot-real"
PERMISSION = REAL / "irrlicht-tool-gate-permission-prompt" / "events.jsonl"
SHELL = REAL / "irrlicht-shell-escape-command" / "events.jsonl"
AUTOPILOT = REAL / "irrlicht-autonomous-loop" / "events.jsonl"
AUTO_MODEL = REAL / "irrlicht-model-switch-midsession" / "events.jsonl"
NUDGE_START = "You have not yet marked the task as complete using the task_complete tool."


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def fold_lines(lines: list[dict[str, Any]], *, finished: bool = False) -> Transcript:
    for line in lines:
        sdk.session_event_from_dict(line)  # every line is one Copilot could write
    return fold((event_from_dict(line) for line in lines), replay=True, finished=finished)


def plain(renderable: RenderableType) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def turns(t: Transcript) -> list[TurnBlock]:
    return [item for item in t.items if isinstance(item, TurnBlock)]


def tools(t: Transcript) -> Iterator[ToolCallBlock]:
    for item in t.items:
        if isinstance(item, TurnBlock):
            yield from item.tools
        elif isinstance(item, ToolCallBlock):
            yield item


def raw_types(t: Transcript) -> set[str]:
    return {item.type for item in t.items if isinstance(item, RawBlock)}


def without(lines: list[dict[str, Any]], etype: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] != etype]


# --- 1. every shape the schema accepts ----------------------------------------------------


def _literal_values(annotation: object) -> set[object]:
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    values: set[object] = set()
    for arg in typing.get_args(annotation):
        values |= _literal_values(arg)
    return values


def _enum_values(annotation: object) -> set[object]:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {member.value for member in annotation}
    values: set[object] = set()
    for arg in typing.get_args(annotation):
        values |= _enum_values(arg)
    return values


def _sdk_data_classes() -> dict[str, type]:
    """Event type -> the official parser's data class (read from its dispatch)."""
    source = Path(sdk.__file__).read_text("utf-8")
    dispatch = re.findall(r"case SessionEventType\.(\w+): data = (\w+)\.from_dict", source)
    return {sdk.SessionEventType[name].value: getattr(sdk, cls) for name, cls in dispatch}


MODEL_PAIRS: list[tuple[str, type[ours.EventData], type]] = [
    *((etype, model, _sdk_data_classes()[etype]) for etype, model in ours.DATA_TYPES.items()),
    ("toolRequests[]", ours.ToolRequest, sdk.AssistantMessageToolRequest),
]


@pytest.mark.parametrize(("where", "model", "official"), MODEL_PAIRS, ids=lambda v: str(v))
def test_no_field_is_narrower_than_the_schema(where: str, model: Any, official: type) -> None:
    """Every value the schema allows for an enum field is one our model accepts, and
    no field is required that the schema leaves optional."""
    hints = typing.get_type_hints(official)
    optional_there = {
        f.name
        for f in dataclasses.fields(official)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }
    for name, field in model.model_fields.items():
        if name not in hints:
            continue
        allowed = _enum_values(hints[name])
        accepted = _literal_values(field.annotation)
        if allowed and accepted:
            assert allowed <= accepted, f"{where}.{name} refuses {allowed - accepted}"
        if name in optional_there:
            assert not field.is_required(), f"{where}.{name} is optional in the schema"


def test_a_custom_tool_request_folds_with_its_text_and_call() -> None:
    lines = lines_of(AUTOPILOT)
    first = next(line for line in lines if line["type"] == "assistant.message")
    # gpt-5's apply_patch is a grammar-based ("custom") tool: the schema's other type.
    first["data"]["toolRequests"][0]["type"] = "custom"
    event = event_from_dict(first)
    assert isinstance(event.data, AssistantMessageData)
    assert event.data.tool_requests is not None
    assert event.data.tool_requests[0].type == "custom"

    t = fold_lines(lines)
    assert "assistant.message" not in raw_types(t)
    turn = turns(t)[0]
    assert turn.text == first["data"]["content"]
    assert [tool.name for tool in turn.tools] == ["bash"]
    assert turn.tools[0].status == "success"


# --- 2. shut down mid-turn ------------------------------------------------------------------


def _assert_closed(t: Transcript) -> None:
    (turn,) = turns(t)
    (tool,) = tools(t)
    assert turn.status == "aborted"
    assert tool.status == "interrupted"
    assert tool.permission == "unanswered"
    card = plain(card_renderable(tool, expanded=False))
    assert "waiting for your approval" not in card
    assert "■ bash" in card and "permission never answered" in card
    assert "working…" not in plain(header_text(turn, show_model=True))
    assert t.busy is False


def test_a_shutdown_mid_turn_closes_the_turn_the_card_and_the_permission_request() -> None:
    t = fold_lines(lines_of(PERMISSION))
    _assert_closed(t)
    assert t.current_turn is None


def test_a_later_session_start_closes_what_the_one_before_left_open() -> None:
    # Two recordings back to back, the first cut off before its shutdown was written.
    first = without(lines_of(PERMISSION), "session.shutdown")
    t = fold_lines([*first, *lines_of(AUTO_MODEL)])
    closed, *later = turns(t)
    assert closed.status == "aborted"
    assert next(tools(t)).status == "interrupted"
    assert [turn.status for turn in later] == ["done", "done"]


def test_a_later_resume_closes_what_the_process_before_left_open() -> None:
    lines = without(lines_of(PERMISSION), "session.shutdown")
    last = lines[-1]
    # Copilot's own resume line (as irrlicht's session-resume recording has it).
    resume = {"resumeTime": last["timestamp"], "eventCount": len(lines), "selectedModel": "auto"}
    lines.append(
        {
            "type": "session.resume",
            "data": resume,
            "id": "5c1e9b7a-2f4d-4e8b-a6c3-9d0e1f2a3b4c",
            "timestamp": last["timestamp"],
            "parentId": last["id"],
        }
    )
    t = fold_lines(lines)
    (tool,) = tools(t)
    assert (turns(t)[0].status, tool.status, tool.permission) == (
        "aborted",
        "interrupted",
        "unanswered",
    )


def test_the_end_of_a_finished_file_closes_what_is_open() -> None:
    cut = without(lines_of(PERMISSION), "session.shutdown")
    assert fold_lines(cut).busy is True  # a file still being written: it may go on
    _assert_closed(fold_lines(cut, finished=True))


def test_exports_of_a_cut_off_log_show_nothing_running(tmp_path: Path) -> None:
    cut = without(lines_of(PERMISSION), "session.shutdown")
    log = tmp_path / "36c83a2f" / "events.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps(line) + "\n" for line in cut), "utf-8")
    markdown = export_session(log, "md")
    assert "- ■ **bash**" in markdown  # interrupted, not "…" (running)
    assert "aborted" in markdown


def test_sessions_copilot_does_not_list_a_shut_down_session_as_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "session-state" / "36c83a2f-a9d2-4e51-a566-babdfac76e07"
    folder.mkdir(parents=True)
    shutil.copy(PERMISSION, folder / "events.jsonl")
    (summary,) = SessionStore(tmp_path).list_sessions()
    assert summary.outcome == "interrupted"

    monkeypatch.setenv("COPILOT_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    capsys.readouterr()
    assert main(["sessions", "--copilot"]) == 0
    _header, row = capsys.readouterr().out.splitlines()[:2]
    assert row.startswith("36c83a2f")
    assert " interrupted " in row and "in progress" not in row


def test_the_sessions_listing_does_not_count_a_users_command_as_a_tool_call() -> None:
    summary = summarize_events(lines_of(SHELL), SessionSummary(id="x", path=SHELL))
    assert (summary.turns, summary.tool_calls) == (2, 0)

    summary = summarize_events(lines_of(PERMISSION), SessionSummary(id="x", path=PERMISSION))
    assert summary.outcome == "interrupted"


# --- 4. the model that answered ---------------------------------------------------------


def test_turn_headers_name_the_model_that_answered_and_keep_the_alias() -> None:
    t = fold_lines(lines_of(AUTO_MODEL))
    assert [turn.model_label for turn in turns(t)] == ["gpt-5-mini (auto)"] * 2
    assert "gpt-5-mini (auto)" in plain(header_text(turns(t)[0], show_model=True))
    assert t.model_label == "gpt-5-mini (auto)"
    markdown = to_markdown(t)
    assert "### Turn 1 · gpt-5-mini (auto)" in markdown
    assert "Turn 1 · gpt-5-mini (auto)" in to_html(t)


# --- 5. a !command and its output ---------------------------------------------------------


def test_a_users_shell_command_is_drawn_with_its_output() -> None:
    t = fold_lines(lines_of(SHELL))
    (shell,) = [item for item in t.items if isinstance(item, ShellBlock)]
    assert (shell.command, shell.status, shell.output) == ("echo hello", "success", "hello")
    assert shell.tool_name == "local_shell"
    assert not raw_types(t) & {"tool.user_requested", "tool.execution_complete"}
    assert list(tools(t)) == []  # the user's command is no tool call of the model's
    assert t.tool_calls == 0
    drawn = plain(shell_renderable(shell))
    assert "$ echo hello  ✓" in drawn
    assert "  hello" in drawn
    markdown = to_markdown(t)
    assert "**Shell** ` $ echo hello ` · ✓" in markdown
    assert "```\nhello\n```" in markdown
    assert "<code>$ echo hello</code>" in to_html(t)
    assert "<pre>hello</pre>" in to_html(t)


def test_a_shell_command_is_escaped_in_both_exports() -> None:
    lines = lines_of(SHELL)
    (call,) = [line for line in lines if line["type"] == "tool.user_requested"]
    call["data"]["arguments"]["command"] = "echo '`<b>x</b>`'"
    t = fold_lines(lines)
    markdown = to_markdown(t)
    assert "**Shell** `` $ echo '`<b>x</b>`' `` · ✓" in markdown
    assert "<code>$ echo &#x27;`&lt;b&gt;x&lt;/b&gt;`&#x27;</code>" in to_html(t)


def test_a_shell_mode_user_message_and_its_call_are_one_row() -> None:
    lines = lines_of(SHELL)
    at = next(i for i, line in enumerate(lines) if line["type"] == "tool.user_requested")
    announced = dict(lines[at], type="user.message", id="7d5f7a51-53a1-4a43-9d2f-7d61f0b3a001")
    announced["data"] = {"content": "!echo hello", "agentMode": "shell"}
    lines.insert(at, announced)
    t = fold_lines(lines)
    assert "user.message" not in raw_types(t)
    (shell,) = [item for item in t.items if isinstance(item, ShellBlock)]
    assert (shell.command, shell.output, shell.tool_call_id) == (
        "echo hello",
        "hello",
        lines[at + 1]["data"]["toolCallId"],
    )
    # Not a prompt: the user messages drawn are the two the model answered.
    assert [b.content for b in t.items if isinstance(b, UserBlock)] == [
        "Reply with exactly the word: ready",
        "Reply with exactly the word: alive",
    ]
    assert t.mode != "shell"


def test_a_shell_command_cut_off_by_shutdown_is_interrupted() -> None:
    lines = [line for line in lines_of(SHELL) if not line["data"].get("isUserRequested")]
    t = fold_lines(lines)
    (shell,) = [item for item in t.items if isinstance(item, ShellBlock)]
    assert shell.status == "interrupted"
    assert "interrupted" in plain(shell_renderable(shell))


def test_a_shell_command_still_running_keeps_a_live_file_busy() -> None:
    lines = lines_of(SHELL)
    at = next(i for i, line in enumerate(lines) if line["type"] == "tool.user_requested")
    running = lines[: at + 1]  # the file as a live writer left it: the command runs
    (shell,) = [item for item in fold_lines(running).items if isinstance(item, ShellBlock)]
    assert shell.status == "running"
    assert fold_lines(running).busy is True
    assert fold_lines(running, finished=True).busy is False


# --- 6. every abort reason --------------------------------------------------------------


@pytest.mark.parametrize("reason", [member.value for member in sdk.AbortReason])
def test_an_abort_with_any_reason_closes_the_turn(reason: str) -> None:
    lines = without(lines_of(PERMISSION), "session.shutdown")
    last = lines[-1]
    lines.append(
        {
            "type": "abort",
            "data": {"reason": reason},
            "id": "0b7f2c4e-5d1a-4c8e-9f3a-6e2d1c0b9a87",
            "timestamp": last["timestamp"],
            "parentId": last["id"],
        }
    )
    t = fold_lines(lines)
    assert "abort" not in raw_types(t)
    (abort,) = [item for item in t.items if isinstance(item, AbortBlock)]
    assert abort.reason == reason
    assert turns(t)[0].status == "aborted"
    assert t.current_turn is None
    assert next(tools(t)).status == "interrupted"
    said = abort_reason(reason)
    assert said in str(AbortView(abort).render())
    assert said in to_markdown(t)


# --- 8. autopilot continuations with empty content ------------------------------------------


def test_copilots_empty_continuations_show_the_nudge_it_sent() -> None:
    t = fold_lines(lines_of(AUTOPILOT))
    nudges = [item for item in t.items if isinstance(item, UserBlock) and item.is_nudge]
    assert len(nudges) == 2
    for number, nudge in enumerate(nudges, 1):
        assert nudge.content.startswith(NUDGE_START)
        assert "current_datetime" not in nudge.content
        drawn = str(NudgeView(nudge, None).render())
        assert drawn == f"↻ autopilot nudge {number}  {NUDGE_START}"
    markdown = to_markdown(t)
    assert f"**↻ Autopilot nudge 1** — {NUDGE_START}" in markdown
    assert f"↻ Autopilot nudge 2</b> — {NUDGE_START}" in to_html(t)
