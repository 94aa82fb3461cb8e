"""Attachments on a user message: ``@file`` mentions and the SDK's ``attachments``.

They are recorded on ``user.message`` in the Copilot SDK's shapes (``file``,
``directory``, ``selection``); the model receives their text after the message,
each file cut at :data:`MAX_FILE_BYTES` with a note saying so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 64 * 1024
MAX_DIR_ENTRIES = 200
MENTION = re.compile(r"(?<!\S)@(\S+)")


def mentioned(text: str) -> list[str]:
    """The ``@path`` tokens of ``text``, in order, without repeats."""
    seen: dict[str, None] = {}
    for match in MENTION.finditer(text):
        seen.setdefault(match.group(1).rstrip(".,;:!?)"), None)
    return list(seen)


def from_mentions(text: str, cwd: Path) -> list[dict[str, Any]]:
    """Attachments for the mentions in ``text`` that name an existing file or folder
    (relative to ``cwd``); other ``@words`` (an e-mail, a decorator) stay plain text."""
    out: list[dict[str, Any]] = []
    for name in mentioned(text):
        path = (cwd / name).resolve()
        if path.is_dir():
            out.append({"type": "directory", "path": str(path), "displayName": name})
        elif path.is_file():
            out.append({"type": "file", "path": str(path), "displayName": name})
    return out


class AttachmentError(ValueError):
    """An attachment a client sent that cannot be recorded; the message says why."""


def normalize(raw: object, cwd: Path) -> list[dict[str, Any]]:
    """Attachments as a client sent them (the SDK's ``session.send(attachments=…)``)
    made whole for the record: paths absolute (relative ones are taken from ``cwd``)
    and a ``displayName`` on each, as the schema requires."""
    if not isinstance(raw, list):
        raise AttachmentError("attachments must be a list")
    out: list[dict[str, Any]] = []
    for item in raw:
        if not isinstance(item, dict):
            raise AttachmentError("each attachment must be an object")
        kind = item.get("type")
        match kind:
            case "file" | "directory":
                given = item.get("path")
                if not isinstance(given, str) or not given:
                    raise AttachmentError(f"a {kind} attachment needs a path")
                path = (cwd / Path(given).expanduser()).resolve()
                name = item.get("displayName")
                out.append(
                    {
                        **item,
                        "path": str(path),
                        "displayName": name if isinstance(name, str) and name else given,
                    }
                )
            case "selection":
                file_path, text = item.get("filePath"), item.get("text")
                selection = item.get("selection")
                if not isinstance(file_path, str) or not isinstance(text, str):
                    raise AttachmentError("a selection attachment needs filePath and text")
                if not _valid_range(selection):
                    raise AttachmentError(
                        "a selection attachment needs selection.start/end {line, character}"
                    )
                name = item.get("displayName")
                out.append(
                    {**item, "displayName": name if isinstance(name, str) and name else file_path}
                )
            case _:
                raise AttachmentError(
                    f"attachment type {kind!r} is not supported here (file, directory, selection)"
                )
    return out


def _valid_range(selection: object) -> bool:
    if not isinstance(selection, dict):
        return False
    for end in ("start", "end"):
        point = selection.get(end)
        if not isinstance(point, dict):
            return False
        if not all(isinstance(point.get(k), int) for k in ("line", "character")):
            return False
    return True


def describe(attachment: dict[str, Any]) -> str:
    """A short label for a chip: the display name, or the path."""
    name = attachment.get("displayName") or attachment.get("path") or attachment.get("filePath")
    return str(name or attachment.get("type", "attachment"))


def expand(content: str, attachments: list[dict[str, Any]]) -> str:
    """``content`` followed by what the model should read of each attachment."""
    parts = [content]
    for attachment in attachments:
        parts.append(_render(attachment))
    return "\n\n".join(parts)


def _render(attachment: dict[str, Any]) -> str:
    kind = attachment.get("type")
    name = describe(attachment)
    match kind:
        case "file":
            body = _file_text(Path(str(attachment.get("path", ""))))
            return f'<attached_file path="{name}">\n{body}\n</attached_file>'
        case "directory":
            body = _dir_listing(Path(str(attachment.get("path", ""))))
            return f'<attached_directory path="{name}">\n{body}\n</attached_directory>'
        case "selection":
            where = attachment.get("filePath", name)
            text = str(attachment.get("text", ""))
            return f'<attached_selection path="{where}">\n{text}\n</attached_selection>'
        case _:
            return f"<attachment type={kind!r} name={name!r}> (not readable here)"


def _file_text(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return f"(could not read: {exc.strerror or exc})"
    if b"\0" in data[:8192]:
        return "(binary file, not shown)"
    cut = len(data) > MAX_FILE_BYTES
    text = data[:MAX_FILE_BYTES].decode("utf-8", errors="replace")
    if cut:
        size = path.stat().st_size
        text += (
            f"\n[cut: only the first {MAX_FILE_BYTES:,} of {size:,} bytes are attached; "
            "use the view tool to read the rest]"
        )
    return text


def _dir_listing(path: Path) -> str:
    try:
        entries = sorted(path.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        return f"(could not list: {exc.strerror or exc})"
    names = [e.name + ("/" if e.is_dir() else "") for e in entries[:MAX_DIR_ENTRIES]]
    if len(entries) > MAX_DIR_ENTRIES:
        names.append(f"[cut: {len(entries) - MAX_DIR_ENTRIES} more entries not listed]")
    return "\n".join(names) or "(empty)"
