"""A Markdown file's YAML front matter, as Copilot's ``*.agent.md`` and ``SKILL.md`` have it.

The file opens with a ``---`` line, the YAML mapping follows, and a second ``---``
line closes it; everything after is the body. Only YAML's safe subset is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILE_LIMIT = 1_000_000  # bytes; an agent or skill file larger than this is a mistake


class FrontMatterError(ValueError):
    """What is wrong with a file's front matter, in words a user can act on."""


@dataclass(frozen=True, slots=True)
class MarkdownDoc:
    fields: dict[str, Any]  # empty when the file has no front matter
    body: str
    has_front_matter: bool


def read_markdown(path: Path) -> MarkdownDoc:
    """The file's front matter and body; FrontMatterError when either cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FrontMatterError(f"cannot read it ({exc.strerror or exc})") from exc
    if len(data) > FILE_LIMIT:
        size, limit = len(data) // 1000, FILE_LIMIT // 1000
        raise FrontMatterError(f"it is {size} KB; the limit is {limit} KB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FrontMatterError("it is not UTF-8 text") from exc
    return split_front_matter(text)


def split_front_matter(text: str) -> MarkdownDoc:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return MarkdownDoc({}, text.strip(), has_front_matter=False)
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            head = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            return MarkdownDoc(_parse_yaml(head), body.strip(), has_front_matter=True)
    raise FrontMatterError("the front matter has no closing '---' line")


def _parse_yaml(text: str) -> dict[str, Any]:
    import yaml  # only when a file is read: not on the way to the first frame

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""  # +1 for the '---'
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise FrontMatterError(f"the front matter is not valid YAML{where}: {problem}") from exc
    except (RecursionError, MemoryError, ValueError, TypeError) as exc:
        # PyYAML's composer recurses: deeply nested brackets end here, not in YAMLError.
        raise FrontMatterError(f"the front matter cannot be read: {type(exc).__name__}") from exc
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontMatterError("the front matter must be a mapping of fields")
    return {str(key): item for key, item in value.items()}
