"""Whether a tool call's arguments fit the tool's JSON schema, told as short problems.

Only what a tool's parameters schema says at its top level and one level down:
required keys, unknown keys (``additionalProperties: false``), each value's JSON
type and enum. Enough to tell a call a model wrote in its text from JSON it only
quoted; the tool's own validation still runs when the call does.
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def schema_problems(arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """What is wrong with ``arguments`` for the parameters ``schema``; empty if nothing."""
    problems: list[str] = []
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for key in required if isinstance(required, list) else []:
        if key not in arguments:
            problems.append(f"missing required field '{key}'")
    if schema.get("additionalProperties") is False:
        for key in arguments:
            if key not in properties:
                problems.append(f"unknown field '{key}'")
    for key, value in arguments.items():
        if value is None and key not in (required or ()):
            continue  # an optional parameter left out, written as null
        rule = properties.get(key)
        if isinstance(rule, dict) and not _fits(value, rule):
            problems.append(f"field '{key}' should be {_expected(rule)}")
    return problems


def _fits(value: Any, rule: dict[str, Any]) -> bool:
    options = rule.get("anyOf") or rule.get("oneOf")
    if isinstance(options, list):
        return any(_fits(value, o) for o in options if isinstance(o, dict)) or not options
    enum = rule.get("enum")
    if isinstance(enum, list) and value not in enum:
        return False
    kind = rule.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if not kinds:
        return True  # a $ref or no type: the tool's own validation decides
    return any(_is(value, k) for k in kinds)


def _is(value: Any, kind: str) -> bool:
    types = _TYPES.get(kind)
    if types is None:
        return True
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False  # JSON's true is no number, though Python's bool is an int
    return isinstance(value, types)


def _expected(rule: dict[str, Any]) -> str:
    enum = rule.get("enum")
    if isinstance(enum, list):
        return "one of " + ", ".join(repr(e) for e in enum)
    options = rule.get("anyOf") or rule.get("oneOf")
    if isinstance(options, list):
        return " or ".join(_expected(o) for o in options if isinstance(o, dict))
    kind = rule.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    return f"a{'n' if str(kind)[:1] in 'aeiou' else ''} {kind}" if kind else "another value"
