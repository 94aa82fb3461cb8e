"""``session.create | resume | detach | destroy | delete | list | getLastId |
getMetadata``: a session's lifecycle, and the recorded ones.

Create and resume host a loopdeck session for the app (its tools, system message,
context settings, and whether it answers the model's questions and plans); a
session already hosted is attached to, its options updated in place. Detaching the
last connection closes it; delete removes its folder unless another process writes
it. The listing reads the session store.
"""

from __future__ import annotations

import uuid
from typing import Any

from agent.log.lock import SessionInUse, delete_session
from agent.log.session_row import SessionSummary
from agent.log.store import ForeignSession
from agent.loop.compaction_settings import settings_from
from agent.tools.external import ExternalToolSpec
from app.server.bridge import HostedSession, SdkSession, ToolChoice
from app.server.params import check_id, env_value_mode, mcp_config, optional_str, required_str
from app.server.rpc import INVALID_PARAMS, SERVER_ERROR, Connection, RpcError
from app.server.runtime_base import RuntimeBase
from app.server.user_input import user_input_asker


class SessionMethods(RuntimeBase):
    """A session's lifecycle (create, resume, detach, delete) and the recorded ones."""

    async def session_create(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = optional_str(params, "sessionId") or str(uuid.uuid4())
        check_id(session_id)
        if session_id in self.sessions or self.store.events_path(session_id).exists():
            raise RpcError(INVALID_PARAMS, f"session {session_id} already exists")
        model = self._model(params, recorded=None)
        choice = _tool_choice(params)
        policy, extra_dirs = self._permissions(params)
        sandbox, env_filter = self._sandbox()
        mcp = mcp_config(params)
        try:
            created = await SdkSession.create(
                session_id=session_id,
                model=model,
                cwd=self._cwd(params),
                store=self.store,
                max_autopilot_continues=self._max_continues(params),
                extra_dirs=extra_dirs,
                registry_factory=choice.registry,
                policy=policy,
                sandbox=sandbox,
                env_filter=env_filter,
            )
        except SessionInUse as exc:  # another process is creating this very id
            raise RpcError(SERVER_ERROR, str(exc)) from exc
        assert isinstance(created, SdkSession)
        hosted = HostedSession(created, choice)
        hosted.mcp_env_mode = env_value_mode(params.get("envValueMode"))
        self.sessions[session_id] = hosted
        hosted.on_event = self.lifecycle.on_event
        _take_questions(hosted, params)
        _apply_system_message(created, params.get("systemMessage"))
        _apply_infinite_sessions(created, params.get("infiniteSessions"))
        created.start_mcp(mcp)  # in the background: its events follow session.start
        self._attach(hosted, conn, params)
        hosted.replay_to(conn, created.backlog)  # session.start
        await hosted.hooks.session_start("new")
        self.lifecycle.announce("session.created", session_id, created)
        return {"sessionId": session_id, "workspacePath": str(self.store.session_dir(session_id))}

    async def session_resume(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = required_str(params, "sessionId")
        check_id(session_id)
        hosted = self.sessions.get(session_id)
        if hosted is None:
            hosted = await self._resume_from_log(session_id, params, conn)
        else:
            self._update_live(hosted, params)
            self._attach(hosted, conn, params)
        await hosted.hooks.session_start("resume")
        return {"sessionId": session_id, "workspacePath": str(self.store.session_dir(session_id))}

    async def _resume_from_log(
        self, session_id: str, params: dict[str, Any], conn: Connection
    ) -> HostedSession:
        if not self.store.events_path(session_id).is_file():
            raise RpcError(SERVER_ERROR, f"Session not found: {session_id}")
        recorded = self.store.read_meta(session_id).get("model")
        model = self._model(params, recorded=recorded if isinstance(recorded, str) else None)
        choice = _tool_choice(params)
        policy, extra_dirs = self._permissions(params)
        sandbox, env_filter = self._sandbox()
        mcp = mcp_config(params)
        cwd = optional_str(params, "workingDirectory")
        try:
            resumed = await SdkSession.resume(
                store=self.store,
                session_id=session_id,
                model=model,
                cwd=self._cwd(params) if cwd else None,
                max_autopilot_continues=self._max_continues(params),
                extra_dirs=extra_dirs,
                registry_factory=choice.registry,
                policy=policy,
                sandbox=sandbox,
                env_filter=env_filter,
            )
        except (SessionInUse, ForeignSession) as exc:
            # Another process (the app, a -p run, another runtime) writes it, or its
            # folder leads out of the store (loopdeck writes nowhere else).
            raise RpcError(SERVER_ERROR, str(exc)) from exc
        assert isinstance(resumed, SdkSession)
        hosted = HostedSession(resumed, choice)
        hosted.mcp_env_mode = env_value_mode(params.get("envValueMode"))
        self.sessions[session_id] = hosted
        hosted.on_event = self.lifecycle.on_event
        _take_questions(hosted, params)
        _apply_system_message(resumed, params.get("systemMessage"))
        _apply_infinite_sessions(resumed, params.get("infiniteSessions"))
        resumed.start_mcp(mcp)
        self._attach(hosted, conn, params)
        # What resuming added to the log (repairs, interrupted calls, session.resume).
        backlog = resumed.backlog
        read = resumed.restored  # the events read back from the log come first
        hosted.replay_to(conn, backlog[read:])
        return hosted

    def _update_live(self, hosted: HostedSession, params: dict[str, Any]) -> None:
        session = hosted.session
        if optional_str(params, "model"):
            model = self._model(params, recorded=None)
            if model.name != session.model.name:
                session.set_model(model)
        if "tools" in params or "availableTools" in params or "excludedTools" in params:
            choice = _tool_choice(params)
            choice.calls = hosted.calls
            hosted.tools = choice
            session.use_tools(choice.registry)
        if "systemMessage" in params:
            session.system_append, session.system_replace = "", None
            _apply_system_message(session, params.get("systemMessage"))
        session.refresh()

    def _attach(self, hosted: HostedSession, conn: Connection, params: dict[str, Any]) -> None:
        hosted.attach(conn, hooks=bool(params.get("hooks")))
        hosted.answers_plans = bool(params.get("requestExitPlanMode"))
        if "requestUserInput" in params:  # a live resume may take or drop the handler
            _take_questions(hosted, params)

    async def session_detach(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = required_str(params, "sessionId")
        hosted = self.sessions.get(session_id)
        if hosted is None:
            return {"success": True}
        await hosted.hooks.session_end("complete")
        if hosted.detach(conn) and self.sessions.get(session_id) is hosted:
            del self.sessions[session_id]
            await hosted.close()
        return {"success": True}

    async def session_delete(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = required_str(params, "sessionId")
        check_id(session_id)
        hosted = self.sessions.pop(session_id, None)
        if hosted is not None:
            await hosted.hooks.session_end("user_exit")
            await hosted.close()  # a session never sent anything is discarded here
        if not self.store.session_dir(session_id).is_dir():
            if hosted is not None:
                return {"success": True}
            return {"success": False, "error": f"Session not found: {session_id}"}
        try:
            delete_session(self.store, session_id)
        except (SessionInUse, OSError) as exc:  # in use: another process writes it
            return {"success": False, "error": str(exc)}
        self.lifecycle.announce("session.deleted", session_id)
        return {"success": True}

    async def session_list(self, conn: Connection, params: dict[str, Any]) -> Any:
        wanted = params.get("filter") if isinstance(params.get("filter"), dict) else {}
        cwd = wanted.get("cwd") if isinstance(wanted, dict) else None
        sessions = [
            _metadata(summary)
            for summary in self.store.list_sessions()
            if (cwd is None or summary.cwd == cwd) and (summary.started or summary.updated)
        ]
        return {"sessions": sessions}

    async def session_get_last_id(self, conn: Connection, params: dict[str, Any]) -> Any:
        sessions = self.store.list_sessions()
        return {"sessionId": sessions[0].id if sessions else None}

    async def session_get_metadata(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = required_str(params, "sessionId")
        check_id(session_id)
        if not self.store.events_path(session_id).is_file():
            return {"session": None}
        return {"session": _metadata(self.store.summary(session_id))}


def _take_questions(hosted: HostedSession, params: dict[str, Any]) -> None:
    """The model's questions go to the app when it has ``on_user_input_request``."""
    questions = hosted.session.questions
    if params.get("requestUserInput") is True:
        questions.asker = user_input_asker(hosted.id, lambda: hosted.owner)
        questions.ask_in_every_mode = True  # the app decides, in every mode
    else:
        questions.asker = None


def _tool_choice(params: dict[str, Any]) -> ToolChoice:
    specs: list[ExternalToolSpec] = []
    for raw in params.get("tools") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            raise RpcError(INVALID_PARAMS, "every tool needs a name")
        parameters = raw.get("parameters")
        specs.append(
            ExternalToolSpec(
                name=raw["name"],
                description=str(raw.get("description") or ""),
                parameters=parameters if isinstance(parameters, dict) else None,
                skip_permission=bool(raw.get("skipPermission")),
                overrides_built_in_tool=bool(raw.get("overridesBuiltInTool")),
            )
        )
    choice = ToolChoice(
        specs=specs,
        available=_names(params.get("availableTools")),
        excluded=_names(params.get("excludedTools")),
    )
    choice.check()
    return choice


def _names(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RpcError(INVALID_PARAMS, "tool filters must be lists of names")
    return list(value)


def _apply_infinite_sessions(session: SdkSession, config: Any) -> None:
    """The SDK's ``infinite_sessions``: compaction on or off, and its thresholds."""
    if config is None:
        return
    if not isinstance(config, dict):
        raise RpcError(INVALID_PARAMS, "infiniteSessions must be an object")
    try:
        session.configure_context(settings=settings_from(config))
    except (ValueError, TypeError) as exc:
        raise RpcError(INVALID_PARAMS, f"infiniteSessions: {exc}") from exc


def _apply_system_message(session: SdkSession, config: Any) -> None:
    """``append`` (the default) adds to loopdeck's prompt, ``replace`` replaces it;
    ``customize`` is treated as append of its content (sections are not supported)."""
    if not isinstance(config, dict):
        return
    content = config.get("content")
    if not isinstance(content, str) or not content:
        return
    if config.get("mode") == "replace":
        session.system_replace = content
    else:
        session.system_append = content


def _metadata(summary: SessionSummary) -> dict[str, Any]:
    started = summary.started or summary.updated
    out: dict[str, Any] = {
        "sessionId": summary.id,
        "startTime": started,
        "modifiedTime": summary.updated or started,
        "isRemote": False,
    }
    if summary.first_prompt:
        out["summary"] = summary.first_prompt[:200]
    if summary.cwd:
        out["context"] = {"cwd": summary.cwd}
    return out
