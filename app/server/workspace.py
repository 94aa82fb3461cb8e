"""A hosted session's workspace: the ``files/`` folder beside its ``events.jsonl``.

An SDK app keeps its own files there (``session.workspaces.*``): paths are relative
to the folder and may not leave it. A session without a folder (no store) has no
workspace, and says so. Every write is a ``session.workspace_file_changed`` event.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

from agent.events.session import SessionWorkspaceFileChangedData
from agent.session.session import Session
from app.server.rpc import INVALID_PARAMS, SERVER_ERROR, RpcError

FILES = "files"


def folder(session: Session) -> Path | None:
    """The session's own folder, or None when it keeps no log."""
    if session.store is None:
        return None
    return session.store.session_dir(session.id)


def files_dir(session: Session) -> Path:
    home = folder(session)
    if home is None:
        raise RpcError(SERVER_ERROR, "this session keeps no folder, so it has no workspace")
    return home / FILES


def _inside(session: Session, raw: Any) -> tuple[Path, str]:
    """The file ``raw`` names in the workspace, and its relative name."""
    if not isinstance(raw, str) or not raw.strip():
        raise RpcError(INVALID_PARAMS, "path must be a non-empty string")
    rel = PurePosixPath(raw.replace("\\", "/"))
    if rel.is_absolute() or ".." in rel.parts:
        raise RpcError(
            INVALID_PARAMS, f"path must stay inside the workspace files directory: {raw!r}"
        )
    base = files_dir(session)
    path = base / rel
    # A link inside the folder must not lead out of it (the write truncates).
    if not path.resolve().is_relative_to(base.resolve()):
        raise RpcError(
            INVALID_PARAMS, f"path leads outside the workspace files directory: {raw!r}"
        )
    return path, str(rel)


def list_files(session: Session) -> list[str]:
    root = folder(session)
    base = root / FILES if root else None
    if base is None or not base.is_dir():
        return []
    return sorted(str(p.relative_to(base).as_posix()) for p in base.rglob("*") if p.is_file())


def read_file(session: Session, raw: Any) -> str:
    path, rel = _inside(session, raw)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RpcError(INVALID_PARAMS, f"no such workspace file: {rel}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RpcError(SERVER_ERROR, f"cannot read workspace file {rel}: {exc}") from exc


def write_file(session: Session, raw: Any, content: Any) -> str:
    if not isinstance(content, str):
        raise RpcError(INVALID_PARAMS, "content must be a string")
    path, rel = _inside(session, raw)
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(content)
    except OSError as exc:
        raise RpcError(SERVER_ERROR, f"cannot write workspace file {rel}: {exc}") from exc
    session.emit(
        SessionWorkspaceFileChangedData(path=rel, operation="update" if existed else "create")
    )
    return rel


def save_paste(session: Session, content: Any) -> dict[str, Any]:
    """A large paste kept as a workspace file, so a prompt can point at it."""
    if not isinstance(content, str):
        raise RpcError(INVALID_PARAMS, "content must be a string")
    rel = write_file(session, f"paste-{uuid.uuid4().hex[:12]}.txt", content)
    return {
        "filename": rel,
        "filePath": str(files_dir(session) / rel),
        "sizeBytes": len(content.encode("utf-8")),
    }


def workspace_info(session: Session) -> dict[str, Any]:
    """``{path, workspace}`` for ``getWorkspace``: the folder and what it belongs to."""
    home = folder(session)
    if home is None:
        return {"workspace": None}
    info: dict[str, Any] = {"id": session.id, "cwd": str(session.cwd)}
    if session.title:
        info["name"] = session.title
        info["userNamed"] = True
    return {"path": str(home), "workspace": info}
