"""``session.workspaces.* | name.* | metadata.snapshot | instructions.getSources``:
what a hosted session is, where it keeps its files, and what it is called.

The workspace is the session's folder (:mod:`app.server.workspace`); the name is its
title (``session.title_changed``), set by the app (``name.set``, which wins) or
suggested from a summary (``name.setAuto``, kept only while nobody named it).
"""

from __future__ import annotations

import time
from typing import Any

from agent.loop.system_prompt import instruction_files
from app.server import workspace
from app.server.params import required_str
from app.server.rpc import INVALID_PARAMS, Connection, RpcError
from app.server.runtime_base import RuntimeBase


class WorkspaceMethods(RuntimeBase):
    """A hosted session's workspace files, name and metadata."""

    async def workspaces_get(self, conn: Connection, params: dict[str, Any]) -> Any:
        return workspace.workspace_info(self._hosted(params).session)

    async def workspaces_list_files(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"files": workspace.list_files(self._hosted(params).session)}

    async def workspaces_read_file(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"content": workspace.read_file(self._hosted(params).session, params.get("path"))}

    async def workspaces_create_file(self, conn: Connection, params: dict[str, Any]) -> Any:
        session = self._hosted(params).session
        workspace.write_file(session, params.get("path"), params.get("content"))
        return None

    async def workspaces_save_large_paste(self, conn: Connection, params: dict[str, Any]) -> Any:
        session = self._hosted(params).session
        if workspace.folder(session) is None:
            return {"saved": None}
        return {"saved": workspace.save_paste(session, params.get("content"))}

    async def workspaces_list_checkpoints(self, conn: Connection, params: dict[str, Any]) -> Any:
        # loopdeck keeps no workspace checkpoints (its log is the history).
        self._hosted(params)
        return {"checkpoints": []}

    async def workspaces_read_checkpoint(self, conn: Connection, params: dict[str, Any]) -> Any:
        self._hosted(params)
        return {"content": None}

    async def name_get(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"name": self._hosted(params).session.title or None}

    async def name_set(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        name = required_str(params, "name").strip()
        if not name:
            raise RpcError(INVALID_PARAMS, "name must not be blank")
        hosted.session.rename(name)
        hosted.user_named = True
        return None

    async def name_set_auto(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        summary = params.get("summary")
        name = summary.strip() if isinstance(summary, str) else ""
        if not name or hosted.user_named or workspace.folder(hosted.session) is None:
            return {"applied": False}
        hosted.session.rename(name)
        return {"applied": True}

    async def metadata_snapshot(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        session = hosted.session
        home = workspace.folder(session)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        started = session.started_at
        summary: dict[str, Any] = {"id": session.id, "cwd": str(session.cwd), "createdAt": started}
        if session.title:
            summary |= {"name": session.title, "userNamed": hosted.user_named}
        snapshot: dict[str, Any] = {
            "sessionId": session.id,
            "alreadyInUse": False,
            "currentMode": session.mode,
            "isRemote": False,
            "startTime": started,
            "modifiedTime": now,
            "workingDirectory": str(session.cwd),
            "selectedModel": session.model.name,
            "workspace": summary if home else None,
        }
        if home is not None:
            snapshot["workspacePath"] = str(home)
        if session.title:
            snapshot["summary"] = session.title
        return snapshot

    async def instructions_get_sources(self, conn: Connection, params: dict[str, Any]) -> Any:
        session = self._hosted(params).session
        sources = []
        for path in instruction_files(session.cwd):
            try:
                content = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            sources.append(
                {
                    "id": str(path),
                    "label": path.name,
                    "sourcePath": str(path),
                    "content": content,
                    "location": "repository",  # AGENTS.md, .github/copilot-instructions.md
                    "type": "repo",
                }
            )
        return {"sources": sources}
