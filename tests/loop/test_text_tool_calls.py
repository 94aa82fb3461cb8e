"""The parser of tool calls written as text, and the stream's hold-back of them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.loop.call_holdback import CallHoldback
from agent.loop.schema_check import schema_problems
from agent.loop.text_tool_calls import TextCall, correction, parse_text_calls
from agent.tools.registry import default_tools

TOOLS: list[dict[str, Any]] = default_tools(autopilot=True).schemas()

VIEW = '{"name": "view", "arguments": {"path": "src/app.py"}}'
BASH = '{"name": "bash", "arguments": {"command": "pytest -q"}}'


def calls_of(text: str) -> list[TextCall]:
    found = parse_text_calls(text, TOOLS)
    assert found is not None, text
    assert found.problems == []
    return found.calls


def test_hermes_tags() -> None:
    found = parse_text_calls(f"Let me look.\n<tool_call>\n{VIEW}\n</tool_call>", TOOLS)
    assert found is not None
    assert found.calls == [TextCall("view", {"path": "src/app.py"})]
    assert found.prose == "Let me look."


def test_hermes_tag_without_its_closing_tag() -> None:
    # A model often stops at its end-of-turn token before writing the closing tag.
    assert calls_of(f"<tool_call>{VIEW}") == [TextCall("view", {"path": "src/app.py"})]


def test_fenced_json_block() -> None:
    found = parse_text_calls(f"I'll read it.\n\n```json\n{VIEW}\n```\n", TOOLS)
    assert found is not None
    assert found.calls == [TextCall("view", {"path": "src/app.py"})]
    assert found.prose == "I'll read it."


def test_fence_without_a_language() -> None:
    assert calls_of(f"```\n{BASH}\n```") == [TextCall("bash", {"command": "pytest -q"})]


def test_bare_json_object_as_the_whole_reply() -> None:
    found = parse_text_calls(f"  {BASH}  \n", TOOLS)
    assert found is not None
    assert found.calls == [TextCall("bash", {"command": "pytest -q"})]
    assert found.prose == ""


@pytest.mark.parametrize(
    "call",
    [
        '{"name": "view", "parameters": {"path": "a.py"}}',
        '{"name": "view", "arguments": "{\\"path\\": \\"a.py\\"}"}',  # arguments as a string
        '{"type": "function", "function": {"name": "view", "arguments": {"path": "a.py"}}}',
    ],
)
def test_other_spellings_of_the_arguments(call: str) -> None:
    assert calls_of(call) == [TextCall("view", {"path": "a.py"})]


def test_several_tool_call_tags() -> None:
    text = f"Two things.\n<tool_call>\n{VIEW}\n</tool_call>\n<tool_call>\n{BASH}\n</tool_call>"
    assert calls_of(text) == [
        TextCall("view", {"path": "src/app.py"}),
        TextCall("bash", {"command": "pytest -q"}),
    ]


def test_a_json_array_of_calls() -> None:
    assert [c.name for c in calls_of(f"[{VIEW}, {BASH}]")] == ["view", "bash"]


@pytest.mark.parametrize(
    "text",
    [
        # JSON in the middle of an explanation.
        f"A call looks like this:\n{VIEW}\nand the server runs it for you.",
        f"For example:\n```json\n{VIEW}\n```\nThat is the format.",
        # Inline, not a block of its own.
        f"Send {VIEW} to read a file.",
        # JSON that is not shaped as a call.
        '```json\n{"path": "src/app.py", "line": 3}\n```',
        '{"name": "view"}',  # no arguments: not a call outside tags
        # A code block that is not JSON.
        "Here:\n```python\nprint({'name': 'view', 'arguments': {}})\n```",
        "Plain prose only.",
        "",
    ],
)
def test_text_that_merely_holds_json_is_not_a_call(text: str) -> None:
    assert parse_text_calls(text, TOOLS) is None


def test_an_unknown_tool_quoted_after_an_explanation_is_prose() -> None:
    text = 'With OpenAI you would write:\n```json\n{"name": "get_weather", "arguments": {}}\n```'
    assert parse_text_calls(text, TOOLS) is None


def test_a_call_of_an_unknown_tool_is_a_problem() -> None:
    found = parse_text_calls('{"name": "read_file", "arguments": {"path": "a.py"}}', TOOLS)
    assert found is not None
    assert found.calls == []
    assert "no tool 'read_file'" in found.problems[0]
    assert "view" in found.problems[0]  # the tools it could have named
    tagged = parse_text_calls(
        'Reading.<tool_call>{"name": "read_file", "arguments": {}}</tool_call>', TOOLS
    )
    assert tagged is not None and tagged.calls == [] and tagged.problems


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "missing required field 'path'"),
        ({"path": 3}, "field 'path' should be a string"),
        ({"path": "a.py", "colour": "red"}, "unknown field 'colour'"),
        ("not json", "must be a JSON object"),
    ],
)
def test_invalid_arguments_are_a_problem(arguments: Any, words: str) -> None:
    text = "```json\n" + json.dumps({"name": "view", "arguments": arguments}) + "\n```"
    found = parse_text_calls(text, TOOLS)
    assert found is not None
    assert found.calls == []
    assert words in found.problems[0]


def test_broken_json_in_a_tool_call_tag_is_a_problem() -> None:
    found = parse_text_calls(
        '<tool_call>{"name": "view", "arguments": {"path": </tool_call>', TOOLS
    )
    assert found is not None
    assert found.calls == []
    assert "could not be read" in found.problems[0]
    message = correction(found.problems)
    assert "could not be read" in message and "<tool_call>" in message


def test_one_bad_call_among_several_runs_none() -> None:
    bad = '{"name": "view", "arguments": {}}'
    found = parse_text_calls(f"<tool_call>{VIEW}</tool_call><tool_call>{bad}</tool_call>", TOOLS)
    assert found is not None
    assert found.calls == [] and len(found.problems) == 1


def test_schema_check_of_optional_and_enum_fields() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "mode": {"enum": ["a", "b"]},
        },
        "required": [],
    }
    assert schema_problems({"n": None, "mode": "a"}, schema) == []
    assert schema_problems({"n": True}, schema) == ["field 'n' should be an integer or a null"]
    assert schema_problems({"mode": "c"}, schema) == ["field 'mode' should be one of 'a', 'b'"]


# --- the stream's hold-back ---------------------------------------------------------


def stream(text: str, size: int) -> tuple[list[str], str]:
    """``text`` fed in pieces of ``size``: what each piece released, and what stayed."""
    holdback = CallHoldback()
    shown = [holdback.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return shown, holdback.held


@pytest.mark.parametrize("size", [1, 3, 7, 50])
@pytest.mark.parametrize(
    "call",
    [
        f"<tool_call>\n{VIEW}\n</tool_call>",
        f"```json\n{VIEW}\n```",
        VIEW,
    ],
)
def test_a_call_split_across_chunks_is_never_shown(call: str, size: int) -> None:
    prose = "I will read the file first.\n"
    shown, held = stream(prose + call, size)
    assert "".join(shown) == prose
    assert held == call
    assert calls_of(prose + call) == [TextCall("view", {"path": "src/app.py"})]


@pytest.mark.parametrize("size", [1, 4, 50])
def test_prose_and_code_blocks_are_not_held_back(size: int) -> None:
    text = (
        "Use a < b here.\n```python\nx = {'a': 1}\n```\nAnd JSON:\n"
        '{"name": "x"}\nexplained after it, so it is shown.\n'
    )
    shown, held = stream(text, size)
    assert "".join(shown) + held == text
    assert held == ""  # nothing waits once the text after a block says it is prose


def test_what_was_held_comes_out_at_the_end() -> None:
    holdback = CallHoldback()
    assert holdback.feed("Result:\n") == "Result:\n"
    assert holdback.feed('{"a": 1}') == ""
    assert holdback.flush() == '{"a": 1}'
    assert holdback.released == len('Result:\n{"a": 1}')
