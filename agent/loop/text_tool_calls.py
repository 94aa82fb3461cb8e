"""Tool calls a model wrote in its reply's text instead of as structured calls.

Small local models often answer a request for a tool with the call as text: Hermes
tags (``<tool_call>{"name": …, "arguments": …}</tool_call>``), a fenced JSON block,
or a bare JSON object with ``name`` and ``arguments`` (or ``parameters``); a server
that does not recognise the format returns no tool calls at all.
:func:`parse_text_calls` finds such calls, under rules that keep quoted JSON from
running:

* the calls are the whole reply or its last block(s), nothing but white space after
  them (JSON in the middle of an explanation is never a call);
* each names an offered tool, with arguments that fit its JSON schema.

A block shaped like a call that breaks a rule (an unknown tool, arguments that do not
fit, broken JSON inside ``<tool_call>`` tags) is a *problem*: nothing runs, and the
model is told what was wrong (:func:`correction`). An unknown tool in a fenced or
bare block after some prose is taken for an example the model quoted, not a call.

The block grammar (:func:`blocks_from`) also reads a reply still streaming, so the
stream can hold back what may become a call (:mod:`agent.loop.call_holdback`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.loop.schema_check import schema_problems

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
# Qwen2.5-Coder (1.5B) often wraps its call in the tag its chat template lists the
# tools in, ``<tools>…</tools>``: read like ``<tool_call>``.
TAGS = ((OPEN_TAG, CLOSE_TAG), ("<tools>", "</tools>"))
FENCE = "```"
# A fence's language that may hold a call: none, json, or the tag's name.
CALL_FENCES = ("", "json", "tool_call")

BlockKind = Literal["tag", "fence", "json"]
PARTIAL = -1  # a block that has started but not ended (a reply still streaming)


@dataclass(frozen=True, slots=True)
class Block:
    kind: BlockKind
    start: int
    end: int  # PARTIAL while it has not ended
    body: str  # what the tags or the fence enclose; the JSON itself for a bare block


@dataclass(frozen=True, slots=True)
class TextCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TextCalls:
    """What a reply's text holds: the prose before the calls, and the calls, or the
    problems that keep them from running (then ``calls`` is empty)."""

    prose: str
    calls: list[TextCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def correction(problems: list[str]) -> str:
    """The short message that tells the model why its call did not run."""
    return (
        "Your reply wrote a tool call as text that could not be run: "
        + "; ".join(problems)
        + '. Write each call as <tool_call>{"name": "<tool>", "arguments": {…}}'
        "</tool_call> with an offered tool and its parameters, or answer in plain text."
    )


def parse_text_calls(text: str, tools: list[dict[str, Any]]) -> TextCalls | None:
    """The calls ``text`` ends with, or None when it holds none (it is all prose).

    ``tools`` are the offered tools' schemas, OpenAI's shape."""
    params = _parameters(tools)
    for start in candidate_starts(text, 0):
        blocks = blocks_from(text, start, final=True)
        if blocks:
            found = _classify(text, start, blocks, params)
            if found is not None:
                return found
    return None


# --- the block grammar ----------------------------------------------------------


def candidate_starts(text: str, origin: int, *, at_line_start: bool = True) -> Iterator[int]:
    """Where a call block may start, from ``origin`` on: a ``<`` anywhere (tags
    follow prose on the same line), or ``{``, ``[`` or a fence first on a line. A
    fenced block is passed over whole once it is closed: its closing fence starts
    nothing. ``at_line_start``: whether ``text`` itself begins a line."""
    line_start = at_line_start if origin == 0 else text[origin - 1] == "\n"
    i = origin
    while i < len(text):
        char = text[i]
        if char == "<" or (line_start and char in "{["):
            yield i
        elif line_start and char == "`":
            yield i
            after = _fence_after(text, i)
            if after is not None:
                i, line_start = after, True
                continue
        if char == "\n":
            line_start = True
        elif char not in " \t":
            line_start = False
        i += 1


def _fence_after(text: str, pos: int) -> int | None:
    """Just past the line that closes the fence opened at ``pos``, if it is closed."""
    if not text.startswith(FENCE, pos):
        return None
    newline = text.find("\n", pos)
    if newline < 0:
        return None
    close = text.find("\n" + FENCE, newline)
    if close < 0:
        return None
    line_end = text.find("\n", close + 1)
    return len(text) if line_end < 0 else line_end + 1


def blocks_from(text: str, start: int, *, final: bool) -> list[Block] | None:
    """The call blocks ``text[start:]`` consists of (white space between them), or
    None when it is something else. Unless ``final``, the last block may be
    :data:`PARTIAL` (its end not written yet)."""
    blocks: list[Block] = []
    pos = start
    while True:
        block = _block_at(text, pos, final)
        if block is None:
            return None
        blocks.append(block)
        if block.end == PARTIAL:
            return blocks
        pos = block.end
        while pos < len(text) and text[pos].isspace():
            pos += 1
        # A stray closing fence after the last tag (the model opened none) ends it too.
        if pos == len(text) or (block.kind == "tag" and text[pos:].rstrip() == FENCE):
            return blocks


def _block_at(text: str, pos: int, final: bool) -> Block | None:
    rest = len(text) - pos
    for open_tag, close_tag in TAGS:
        if text.startswith(open_tag, pos):
            return _closed(text, pos, pos + len(open_tag), close_tag, "tag", final)
    for open_tag, _ in TAGS:
        if not final and rest < len(open_tag) and open_tag.startswith(text[pos:]):
            return Block("tag", pos, PARTIAL, "")
    if text.startswith(FENCE, pos):
        newline = text.find("\n", pos)
        language = text[pos + 3 : newline if newline >= 0 else len(text)].strip().lower()
        if newline < 0:  # the language is still being written
            if final or not any(f.startswith(language) for f in CALL_FENCES):
                return None
            return Block("fence", pos, PARTIAL, "")
        if language not in CALL_FENCES:
            return None
        return _closed(text, pos, newline + 1, "\n" + FENCE, "fence", final, closing_from=newline)
    if not final and rest < len(FENCE) and FENCE.startswith(text[pos:]):
        return Block("fence", pos, PARTIAL, "")
    if pos < len(text) and text[pos] in "{[":
        end = json_end(text, pos)
        if end is None:
            return None if final else Block("json", pos, PARTIAL, "")
        return Block("json", pos, end, text[pos:end])
    return None


def _closed(
    text: str,
    pos: int,
    body_start: int,
    closing: str,
    kind: BlockKind,
    final: bool,
    closing_from: int | None = None,
) -> Block:
    """A tag or fence: its body runs to ``closing``. A model often stops before it
    writes the closing mark, so a finished reply's last block may lack it."""
    close = text.find(closing, body_start if closing_from is None else closing_from)
    if close < 0:
        return Block(kind, pos, len(text) if final else PARTIAL, text[body_start:])
    body = text[body_start : max(close, body_start)]
    return Block(kind, pos, close + len(closing), body)


def json_end(text: str, start: int) -> int | None:
    """Where the JSON object or array at ``start`` ends (just after its closing
    bracket), or None if it does not end in ``text``."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


# --- blocks to calls -------------------------------------------------------------


def _parameters(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function", tool)
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            params = function.get("parameters")
            found[function["name"]] = params if isinstance(params, dict) else {}
    return found


def _classify(
    text: str, start: int, blocks: list[Block], params: dict[str, dict[str, Any]]
) -> TextCalls | None:
    calls: list[TextCall] = []
    problems: list[str] = []
    unknown = False
    for block in blocks:
        shapes = _call_shapes(block)
        if shapes is None:
            return None  # not a call: the reply is prose (a code block, quoted JSON)
        for shape in shapes:
            if isinstance(shape, str):
                problems.append(shape)
                continue
            name, arguments = shape
            call, problem = _check(name, arguments, params)
            if call is not None:
                calls.append(call)
            else:
                problems.append(problem)
                unknown = unknown or name not in params
    prose = text[:start].rstrip()
    tagged = any(b.kind == "tag" for b in blocks)
    if unknown and prose and not tagged:
        return None  # an example after an explanation, not a call of this session
    if problems:
        return TextCalls(prose=prose, problems=problems)
    return TextCalls(prose=prose, calls=calls)


Shape = tuple[str, Any] | str  # (name, raw arguments), or what is wrong with it


def _call_shapes(block: Block) -> list[Shape] | None:
    """The calls a block is shaped as; None if it is not a call at all."""
    tagged = block.kind == "tag"
    try:
        value = json.loads(block.body)
    except ValueError as exc:
        repaired = _closed_brackets(block.body) if tagged else None
        try:
            value = json.loads(repaired) if repaired is not None else None
        except ValueError:
            value = None
        if value is None:
            if tagged:
                return [f"the JSON inside <tool_call> tags could not be read ({_reason(exc)})"]
            return None
    items = value if isinstance(value, list) and value else [value]
    shapes: list[Shape] = []
    for item in items:
        shape = _call_shape(item, tagged)
        if shape is None:
            return None
        shapes.append(shape)
    return shapes


def _closed_brackets(body: str) -> str | None:
    """``body`` with the closing brackets a model left off its end (Qwen2.5-Coder-1.5B
    drops the last ``}`` of ``{"type": "function", "function": {…}}``), or None when
    something else is wrong with it."""
    closers: list[str] = []
    in_string = escaped = False
    for char in body:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and (not closers or closers.pop() != char):
            return None
    if in_string or not closers:
        return None
    return body.rstrip() + "".join(reversed(closers))


def _call_shape(item: Any, tagged: bool) -> Shape | None:
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        item = item["function"]  # OpenAI's own shape: {"type": "function", "function": …}
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return 'a call is a JSON object with "name" and "arguments"' if tagged else None
    for key in ("arguments", "parameters"):
        if key in item:
            return item["name"], item[key]
    return (item["name"], {}) if tagged else None


def _check(name: str, raw: Any, params: dict[str, dict[str, Any]]) -> tuple[TextCall | None, str]:
    if name not in params:
        offered = ", ".join(params) or "none"
        return None, f"there is no tool {name!r} (the tools are: {offered})"
    arguments = raw
    if isinstance(raw, str):  # arguments as a JSON string, as the API itself sends them
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except ValueError:
            arguments = raw
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return None, f"the arguments of {name} must be a JSON object of its parameters"
    problems = schema_problems(arguments, params[name])
    if problems:
        fields = ", ".join(params[name].get("properties", {})) or "none"
        return None, f"invalid arguments for {name}: {', '.join(problems)} (parameters: {fields})"
    return TextCall(name, arguments), ""


def _reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc)
