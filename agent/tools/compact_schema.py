"""Tools' definitions made short, for the compact system prompt's small windows.

The full definitions of the built-in tools take more tokens than the full system
prompt. Their compact form keeps what a call needs (names, types, which parameters
are required, the enums) and says what the tool does in one line: parameter
descriptions and bounds go, and an optional parameter's ``anyOf [X, null]`` becomes ``X``.
Another tool's (an MCP server's, an SDK app's) keeps its parameter descriptions:
nothing else tells what they mean.
"""

from __future__ import annotations

from typing import Any

DESCRIPTIONS = {
    "view": "Read a file (lines numbered) or list a directory; view_range [start, end] "
    "for part of a file.",
    "grep": "Search file contents with a regex; returns file:line:text.",
    "glob": "Find files by pattern, like **/*.py.",
    "create": "Create a new file (not an existing one).",
    "edit": "Replace the one exact occurrence of old_str in a file with new_str.",
    "bash": "Run a shell command in the working directory (no input; timeout in seconds).",
    "ask_user": "Ask the user one question.",
    "update_todos": "Set the task's checklist (the whole list each time).",
    "task_complete": "Finish the task, with a summary of what was done.",
    "exit_plan_mode": "Show the finished plan to the user.",
}
# Keys of a parameter's schema that say nothing a call needs (the tool's own
# validation still applies them, and says what was wrong).
_DROPPED = (
    "description",
    "title",
    "default",
    "examples",
    "additionalProperties",
    "minLength",
    "minItems",
    "maxItems",
    "exclusiveMinimum",
)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The compact form of one OpenAI-style function definition."""
    function = schema.get("function")
    if not isinstance(function, dict):
        return schema
    name = function.get("name")
    params = function.get("parameters")
    built_in = name in DESCRIPTIONS
    short = DESCRIPTIONS.get(str(name)) or _first_sentence(str(function.get("description", "")))
    compact: dict[str, Any] = {"name": name, "description": short}
    if isinstance(params, dict):
        compact["parameters"] = _parameters(params, drop_descriptions=built_in)
    return {**schema, "function": compact}


def _parameters(node: dict[str, Any], *, drop_descriptions: bool) -> dict[str, Any]:
    options = node.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(kept) == 1 and isinstance(kept[0], dict):
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            node = {**rest, **kept[0]}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED and (key != "description" or drop_descriptions):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                prop: _parameters(rule, drop_descriptions=drop_descriptions)
                if isinstance(rule, dict)
                else rule
                for prop, rule in value.items()
            }
        elif key == "items" and isinstance(value, dict):
            out[key] = _parameters(value, drop_descriptions=drop_descriptions)
        else:
            out[key] = value
    return out


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]
