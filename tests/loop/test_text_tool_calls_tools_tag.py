"""Qwen2.5-Coder-1.5B, asked to use a tool, often writes the call inside the tag its
chat template lists the tools in, ``<tools>…</tools>``, in OpenAI's own shape: read as
a call like ``<tool_call>`` (seen in the local_coder benchmark's logs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.loop.call_holdback import CallHoldback
from agent.loop.text_tool_calls import TextCall, parse_text_calls
from agent.tools.registry import default_tools

TOOLS: list[dict[str, Any]] = default_tools(autopilot=True).schemas()
GREP = {"name": "grep", "arguments": {"pattern": "parse_duration"}}
# As the model wrote it: the OpenAI shape, wrapped in <tools>.
OPENAI_SHAPE = json.dumps({"type": "function", "function": GREP})


def test_a_call_in_tools_tags() -> None:
    found = parse_text_calls(f"<tools>\n{OPENAI_SHAPE}\n</tools>", TOOLS)
    assert found is not None
    assert found.calls == [TextCall("grep", {"pattern": "parse_duration"})]
    assert found.problems == []


def test_several_tools_tags_and_one_left_open() -> None:
    view = json.dumps({"name": "view", "arguments": {"path": "app.py"}})
    text = f"<tools>\n{OPENAI_SHAPE}\n</tools>\n<tools>\n{view}\n"
    found = parse_text_calls(text, TOOLS)
    assert found is not None
    assert [c.name for c in found.calls] == ["grep", "view"]


def test_a_tool_definition_in_tools_tags_is_a_problem_not_prose() -> None:
    # The model echoing a made-up tool's definition: told so, nothing runs.
    made_up = json.dumps(
        {"type": "function", "function": {"name": "parse_duration", "parameters": {}}}
    )
    found = parse_text_calls(f"<tools>\n{made_up}\n</tools>", TOOLS)
    assert found is not None
    assert found.calls == []
    assert "parse_duration" in found.problems[0]


@pytest.mark.parametrize("size", [1, 3, 50])
def test_a_tools_tag_split_across_chunks_is_never_shown(size: int) -> None:
    prose = "Searching.\n"
    call = f"<tools>\n{OPENAI_SHAPE}\n</tools>"
    holdback = CallHoldback()
    text = prose + call
    shown = [holdback.feed(text[i : i + size]) for i in range(0, len(text), size)]
    assert "".join(shown) == prose
    assert holdback.held == call


def test_a_call_missing_its_last_brace_is_repaired() -> None:
    # As the model wrote it: the outer object's closing brace left off.
    text = (
        '<tools>\n{"type": "function", "function": {"name": "view", '
        '"arguments": {"path": "config.ini"}}\n</tools>'
    )
    found = parse_text_calls(text, TOOLS)
    assert found is not None
    assert found.calls == [TextCall("view", {"path": "config.ini"})]


def test_brackets_that_do_not_match_stay_a_problem() -> None:
    text = '<tool_call>{"name": "view", "arguments": {"path": "a.py"]}</tool_call>'
    found = parse_text_calls(text, TOOLS)
    assert found is not None
    assert found.calls == []
    assert "could not be read" in found.problems[0]


def test_a_stray_closing_fence_after_the_last_tag() -> None:
    view = json.dumps({"name": "view", "arguments": {"path": "app.py"}})
    found = parse_text_calls(f"<tools>\n{view}\n</tools>\n```", TOOLS)
    assert found is not None
    assert [c.name for c in found.calls] == ["view"]


def test_a_fence_after_a_bare_json_object_is_still_prose() -> None:
    text = 'For example:\n{"name": "view", "arguments": {"path": "a.py"}}\n```'
    assert parse_text_calls(text, TOOLS) is None
