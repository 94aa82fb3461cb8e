"""The methods of Copilot SDK protocol version 3 that loopdeck serves.

``Runtime.handle`` answers one request; anything not in its table is JSON-RPC
-32601. Sessions live here, shared by every connection (a TCP runtime can have
several clients); each is a :class:`~app.server.bridge.HostedSession`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent import __version__
from agent.events.attachments import AttachmentError, normalize
from agent.events.schema import (
    EventData,
    Mode,
    SessionErrorData,
    SessionInfoData,
    SessionWarningData,
)
from agent.events.todos import sdk_rows
from agent.extensions.mcp.config import McpConfig, from_sdk
from agent.log.lock import SessionInUse, delete_session
from agent.log.session_row import SessionSummary
from agent.log.store import ForeignSession, SessionStore, read_events
from agent.loop.compaction import settings_from
from agent.loop.turn_loop import DEFAULT_MAX_CONTINUES, LoopOutcome
from agent.models.base import ModelClient
from agent.models.scripted import SCRIPTED_PREFIX, ScriptError, shipped_script_names
from agent.models.select import NO_MODEL_HELP
from agent.models.settings import ApiBaseError, check_api_base
from agent.permissions.rules import PermissionPolicy, RuleError
from agent.sandbox.policy import Sandbox
from agent.sandbox.secrets import EnvFilter
from agent.tools.external import ExternalToolSpec
from agent.tools.registry import rule_tool_names
from app.model_setup import SetupError, make_model, pick_model, provider_settings
from app.sandbox_setup import SandboxSetupError, sandbox_setup
from app.server.bridge import (
    HostedSession,
    RequestTracker,
    SdkSession,
    ToolChoice,
    tool_answer,
)
from app.server.plan import plan_delete, plan_read, plan_update
from app.server.rpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    SERVER_ERROR,
    Connection,
    RpcError,
)
from app.server.user_input import user_input_asker

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 3
_MODES: tuple[Mode, ...] = ("interactive", "autopilot", "plan")
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

Method = Callable[[Connection, dict[str, Any]], Awaitable[Any]]


class Runtime:
    """Everything the server knows: its sessions and how to make new ones."""

    def __init__(
        self,
        *,
        cwd: Path,
        store: SessionStore,
        flags: argparse.Namespace | None = None,
        token: str | None = None,
    ) -> None:
        self.cwd = cwd
        self.store = store
        self.flags = flags
        self.token = token
        self.sessions: dict[str, HostedSession] = {}
        self.stopping = asyncio.Event()
        self._closing: set[asyncio.Task[None]] = set()
        self._methods: dict[str, Method] = {
            "connect": self.connect,
            "ping": self.ping,
            "status.get": self.status_get,
            "auth.getStatus": self.auth_get_status,
            "models.list": self.models_list,
            "runtime.shutdown": self.runtime_shutdown,
            "session.create": self.session_create,
            "session.resume": self.session_resume,
            "session.send": self.session_send,
            "session.sendAndWait": self.session_send_and_wait,
            "session.abort": self.session_abort,
            "session.getMessages": self.session_get_messages,
            "session.detach": self.session_detach,
            "session.destroy": self.session_detach,
            "session.delete": self.session_delete,
            "session.list": self.session_list,
            "session.getLastId": self.session_get_last_id,
            "session.getMetadata": self.session_get_metadata,
            "session.mode.get": self.session_mode_get,
            "session.mode.set": self.session_mode_set,
            "session.plan.read": self.session_plan_read,
            "session.plan.update": self.session_plan_update,
            "session.plan.delete": self.session_plan_delete,
            "session.model.getCurrent": self.session_model_get_current,
            "session.model.switchTo": self.session_model_switch_to,
            "session.options.update": self.session_options_update,
            "session.log": self.session_log,
            "session.history.compact": self.session_history_compact,
            "session.permissions.handlePendingPermissionRequest": self.permission_answer,
            "session.tools.handlePendingToolCall": self.tool_answer,
            # The todo list (session.todos_changed is only a signal): its rows.
            "session.plan.readSqlTodos": self.todos_read,
            "session.plan.readSqlTodosWithDependencies": self.todos_read_with_dependencies,
        }

    # --- dispatch --------------------------------------------------------------

    def methods(self) -> list[str]:
        return sorted(self._methods)

    def attach(self, conn: Connection) -> None:
        conn.on_close.append(self._connection_closed)

    async def handle(self, conn: Connection, method: str, params: dict[str, Any]) -> Any:
        handler = self._methods.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if self.token is not None and not conn.connected and method != "connect":
            raise RpcError(SERVER_ERROR, "connect with the connection token first")
        return await handler(conn, params)

    def _connection_closed(self, conn: Connection) -> None:
        for session_id, hosted in list(self.sessions.items()):
            if conn in hosted.connections and hosted.detach(conn):
                del self.sessions[session_id]
                self._close_later(hosted)

    def _close_later(self, hosted: HostedSession) -> None:
        task = asyncio.create_task(hosted.close(), name=f"close:{hosted.id[:8]}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close_all(self) -> None:
        hosted_all = list(self.sessions.values())
        self.sessions.clear()
        for hosted in hosted_all:
            await hosted.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    # --- connection ----------------------------------------------------------

    async def connect(self, conn: Connection, params: dict[str, Any]) -> Any:
        if self.token is not None and params.get("token") != self.token:
            raise RpcError(SERVER_ERROR, "invalid connection token")
        conn.connected = True
        return {"ok": True, "protocolVersion": PROTOCOL_VERSION, "version": __version__}

    async def ping(self, conn: Connection, params: dict[str, Any]) -> Any:
        message = params.get("message")
        return {
            "message": f"pong: {message}" if message else "pong",
            "timestamp": int(time.time() * 1000),
            "protocolVersion": PROTOCOL_VERSION,
        }

    async def status_get(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"version": __version__, "protocolVersion": PROTOCOL_VERSION}

    async def auth_get_status(self, conn: Connection, params: dict[str, Any]) -> Any:
        # Nothing to sign in to: models are reached through litellm with the
        # provider keys in the environment (or are scripted).
        return {
            "isAuthenticated": True,
            "authType": "api-key",
            "statusMessage": "loopdeck needs no sign-in; models use provider keys from the "
            "environment (see loopdeck --help)",
        }

    async def models_list(self, conn: Connection, params: dict[str, Any]) -> Any:
        ids: list[str] = []
        try:
            picked = pick_model(self._default_model())
        except SetupError:
            picked = None
        if picked is not None:
            ids.append(picked[0])
        ids += [f"{SCRIPTED_PREFIX}{name}" for name in shipped_script_names()]
        return {"models": [_model_info(model_id) for model_id in dict.fromkeys(ids)]}

    async def runtime_shutdown(self, conn: Connection, params: dict[str, Any]) -> Any:
        await self.close_all()
        self.stopping.set()
        return None

    # --- sessions: lifecycle ---------------------------------------------------

    async def session_create(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = _opt_str(params, "sessionId") or str(uuid.uuid4())
        _check_id(session_id)
        if session_id in self.sessions or self.store.events_path(session_id).exists():
            raise RpcError(INVALID_PARAMS, f"session {session_id} already exists")
        model = self._model(params, recorded=None)
        choice = _tool_choice(params)
        policy, extra_dirs = self._permissions(params)
        sandbox, env_filter = self._sandbox()
        mcp = _mcp_config(params)
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
        self.sessions[session_id] = hosted
        _take_questions(hosted, params)
        _apply_system_message(created, params.get("systemMessage"))
        _apply_infinite_sessions(created, params.get("infiniteSessions"))
        created.start_mcp(mcp)  # in the background: its events follow session.start
        self._attach(hosted, conn, params)
        hosted.replay_to(conn, created.backlog)  # session.start
        await hosted.hooks.session_start("new")
        return {"sessionId": session_id, "workspacePath": str(self.store.session_dir(session_id))}

    async def session_resume(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = _str(params, "sessionId")
        _check_id(session_id)
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
        mcp = _mcp_config(params)
        cwd = _opt_str(params, "workingDirectory")
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
        self.sessions[session_id] = hosted
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
        if _opt_str(params, "model"):
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
        session_id = _str(params, "sessionId")
        hosted = self.sessions.get(session_id)
        if hosted is None:
            return {"success": True}
        await hosted.hooks.session_end("complete")
        if hosted.detach(conn) and self.sessions.get(session_id) is hosted:
            del self.sessions[session_id]
            await hosted.close()
        return {"success": True}

    async def session_delete(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = _str(params, "sessionId")
        _check_id(session_id)
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
        return {"success": True}

    # --- sessions: messages ------------------------------------------------------

    async def session_send(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        message_id = str(uuid.uuid4())
        self._submit(hosted, params, message_id)
        return {"messageId": message_id}

    async def session_send_and_wait(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Send, and answer once that message's run is idle (or failed, or was aborted).

        A cancelled request (``$/cancelRequest``, the SDK's timeout) stops waiting;
        the run goes on.
        """
        hosted = self._hosted(params)
        message_id = str(uuid.uuid4())
        tracker = RequestTracker(message_id)
        unsubscribe = hosted.session.subscribe(tracker)
        try:
            outcome: LoopOutcome = await asyncio.shield(self._submit(hosted, params, message_id))
        finally:
            unsubscribe()
        if outcome.error is not None:
            raise RpcError(
                SERVER_ERROR,
                f"Session error: {outcome.error.message}",
                {"completionEventId": tracker.idle_id, "messageId": message_id},
            )
        result: dict[str, Any] = {
            "messageId": message_id,
            "aborted": outcome.aborted,
            "completionEventId": tracker.idle_id,
        }
        if tracker.response is not None:
            result["response"] = tracker.response.wire()
        return result

    def _submit(
        self, hosted: HostedSession, params: dict[str, Any], message_id: str
    ) -> asyncio.Future[LoopOutcome]:
        prompt = _str(params, "prompt")
        delivery = params.get("mode")
        if delivery not in (None, "enqueue", "immediate"):
            raise RpcError(INVALID_PARAMS, "mode must be 'enqueue' or 'immediate'")
        agent_mode = params.get("agentMode")
        if agent_mode is not None:
            hosted.session.set_mode(_mode(agent_mode))
        attachments = None
        if params.get("attachments"):
            try:
                attachments = normalize(params["attachments"], hosted.session.cwd)
            except AttachmentError as exc:
                raise RpcError(INVALID_PARAMS, str(exc)) from None
        return hosted.session.send(
            prompt,
            message_id=message_id,
            immediate=delivery == "immediate",
            attachments=attachments,
        )

    async def session_abort(self, conn: Connection, params: dict[str, Any]) -> Any:
        self._hosted(params).session.abort()
        return {"success": True}

    async def session_get_messages(self, conn: Connection, params: dict[str, Any]) -> Any:
        session_id = _str(params, "sessionId")
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            # A resumed long session read back only its tail: the rest comes from the log.
            earlier = await asyncio.to_thread(hosted.session.earlier_events)
            return {"events": [event.wire() for event in [*earlier, *hosted.events]]}
        _check_id(session_id)
        path = self.store.events_path(session_id)
        if not path.is_file():
            raise RpcError(SERVER_ERROR, f"Session not found: {session_id}")
        return {"events": [event.wire() for event in read_events(path).events]}

    async def session_history_compact(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Compact now (the SDK's ``session.rpc.history.compact``) and say how it went."""
        session = self._hosted(params).session
        focus = _opt_str(params, "customInstructions")
        done = await session.context.compact_now(focus)
        usage = session.context.measure()
        window = {
            "currentTokens": usage.total,
            "messagesLength": usage.message_count,
            "tokenLimit": usage.window,
            "systemTokens": usage.system,
            "conversationTokens": usage.messages,
            "toolDefinitionsTokens": usage.tools,
        }
        if done is None:  # nothing to compact yet
            return {
                "success": True,
                "messagesRemoved": 0,
                "tokensRemoved": 0,
                "contextWindow": window,
            }
        out: dict[str, Any] = {
            "success": done.success,
            "messagesRemoved": done.messages_removed or 0,
            "tokensRemoved": done.tokens_removed or 0,
            "contextWindow": window,
        }
        if done.summary_content is not None:
            out["summaryContent"] = done.summary_content
        return out

    async def session_log(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        message = _str(params, "message")
        level = params.get("level") or "info"
        data: EventData
        if level == "warning":
            data = SessionWarningData(warning_type="log", message=message)
        elif level == "error":
            data = SessionErrorData(error_type="log", message=message)
        else:
            data = SessionInfoData(info_type="log", message=message)
        return {"eventId": hosted.session.emit(data).id}

    # --- sessions: answers from the app ------------------------------------------

    async def permission_answer(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        return {
            "success": hosted.answer_permission(_str(params, "requestId"), params.get("result"))
        }

    async def tool_answer(self, conn: Connection, params: dict[str, Any]) -> Any:
        hosted = self._hosted(params)
        request_id = _str(params, "requestId")
        return {"success": hosted.calls.answer(request_id, tool_answer(params))}

    # --- sessions: state ---------------------------------------------------------

    async def todos_read(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"rows": sdk_rows(self._hosted(params).session.todos.items)}

    async def todos_read_with_dependencies(self, conn: Connection, params: dict[str, Any]) -> Any:
        # update_todos keeps no dependencies between items.
        return {**await self.todos_read(conn, params), "dependencies": []}

    async def session_mode_get(self, conn: Connection, params: dict[str, Any]) -> Any:
        return self._hosted(params).session.mode

    async def session_mode_set(self, conn: Connection, params: dict[str, Any]) -> Any:
        session = self._hosted(params).session
        mode = _mode(params.get("mode"))
        expected = params.get("expectedMode")
        if expected is not None and expected != session.mode:
            return {"modelChanged": False, "status": "unchanged", "modeApplied": False}
        changed = mode != session.mode
        session.set_mode(mode)
        return {
            "modelChanged": False,
            "status": "applied" if changed else "unchanged",
            "modeApplied": True,
        }

    async def session_plan_read(self, conn: Connection, params: dict[str, Any]) -> Any:
        return plan_read(self._hosted(params).session)

    async def session_plan_update(self, conn: Connection, params: dict[str, Any]) -> Any:
        return plan_update(self._hosted(params).session, params)

    async def session_plan_delete(self, conn: Connection, params: dict[str, Any]) -> Any:
        return plan_delete(self._hosted(params).session)

    async def session_model_get_current(self, conn: Connection, params: dict[str, Any]) -> Any:
        return {"modelId": self._hosted(params).session.model.name}

    async def session_model_switch_to(self, conn: Connection, params: dict[str, Any]) -> Any:
        session = self._hosted(params).session
        model = self._model({"model": _str(params, "modelId")}, recorded=None)
        session.set_model(model)
        return {"modelId": model.name, "status": "applied"}

    async def session_options_update(self, conn: Connection, params: dict[str, Any]) -> Any:
        self._hosted(params)
        # Custom instructions, co-author lines, plugins…: nothing here to configure.
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
        session_id = _str(params, "sessionId")
        _check_id(session_id)
        if not self.store.events_path(session_id).is_file():
            return {"session": None}
        return {"session": _metadata(self.store.summary(session_id))}

    # --- helpers -------------------------------------------------------------------

    def _hosted(self, params: dict[str, Any]) -> HostedSession:
        session_id = _str(params, "sessionId")
        hosted = self.sessions.get(session_id)
        if hosted is None:
            raise RpcError(SERVER_ERROR, f"Session not found: {session_id}")
        return hosted

    def _default_model(self) -> str | None:
        return getattr(self.flags, "model", None) if self.flags else None

    def _model(self, params: dict[str, Any], recorded: str | None) -> ModelClient:
        provider = params.get("provider") if isinstance(params.get("provider"), dict) else None
        try:
            picked = pick_model(_opt_str(params, "model") or self._default_model(), recorded)
        except SetupError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        if picked is None:
            raise RpcError(INVALID_PARAMS, "no model given and none configured.\n" + NO_MODEL_HELP)
        spec, api_base = picked
        flags_base = getattr(self.flags, "api_base", None) if self.flags else None
        api_base = flags_base or api_base
        try:
            if spec.startswith(SCRIPTED_PREFIX):
                return make_model(spec)
            # The same timeouts and retries as the app and -p: flags over config.
            settings = provider_settings(self.flags)
            if provider:
                from agent.models.litellm_client import LiteLLMModel

                base = provider.get("baseUrl")
                extra = {"api_key": provider["apiKey"]} if provider.get("apiKey") else None
                return LiteLLMModel(
                    spec,
                    api_base=check_api_base(str(base)) if base else api_base,
                    connect_timeout=settings.connect_timeout,
                    idle_timeout=settings.idle_timeout,
                    retry_policy=settings.retry_policy,
                    extra=extra,
                )
            return make_model(spec, api_base, settings)
        except SetupError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        except ApiBaseError as exc:
            raise RpcError(INVALID_PARAMS, f"provider.baseUrl {exc}") from exc
        except ScriptError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc

    def _cwd(self, params: dict[str, Any]) -> Path:
        given = _opt_str(params, "workingDirectory")
        path = Path(given).expanduser() if given else self.cwd
        if not path.is_absolute():
            path = self.cwd / path
        if not path.is_dir():
            raise RpcError(INVALID_PARAMS, f"workingDirectory {path}: not a directory")
        return path.resolve()

    def _sandbox(self) -> tuple[Sandbox, EnvFilter]:
        """The server's --sandbox flags over config.toml, fresh per session (its temp dir)."""
        try:
            return sandbox_setup(self.flags)
        except SandboxSetupError as exc:
            raise RpcError(SERVER_ERROR, str(exc)) from exc

    def _permissions(self, params: dict[str, Any]) -> tuple[PermissionPolicy, list[Path]]:
        """The server's permission flags (a fresh policy per session), plus the
        session's ``additionalDirectories``."""
        flags = self.flags
        # A rule may name a built-in tool that asks or one of this session's own tools.
        own_tools = [
            str(raw.get("name")) for raw in params.get("tools") or [] if isinstance(raw, dict)
        ]
        try:
            policy = PermissionPolicy.from_flags(
                getattr(flags, "allow_tool", None),
                getattr(flags, "deny_tool", None),
                allow_all=bool(getattr(flags, "allow_all_tools", False))
                or bool(getattr(flags, "yolo", False)),
                tools=[*rule_tool_names(), *own_tools],
                servers=_mcp_config(params).configured,
            )
        except RuleError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        extra: list[Path] = [Path(p).expanduser().resolve() for p in getattr(flags, "add_dir", [])]
        if getattr(flags, "yolo", False):
            extra.append(Path("/"))
        for entry in params.get("additionalDirectories") or []:
            path = Path(str(entry)).expanduser()
            if not path.is_dir():
                raise RpcError(INVALID_PARAMS, f"additionalDirectories: {path}: not a directory")
            extra.append(path.resolve())
        return policy, extra

    def _max_continues(self, params: dict[str, Any]) -> int:
        autopilot = params.get("autopilot") if isinstance(params.get("autopilot"), dict) else {}
        assert isinstance(autopilot, dict)
        if autopilot.get("continuationEnabled") is False:
            return 0
        cap = autopilot.get("maxContinues")
        if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 0:
            return cap
        flag_cap = getattr(self.flags, "max_autopilot_continues", None) if self.flags else None
        return flag_cap if isinstance(flag_cap, int) else DEFAULT_MAX_CONTINUES


def _mcp_config(params: dict[str, Any]) -> McpConfig:
    """The session's ``mcpServers`` (less ``disabledMcpServers``), as its app sent them."""
    return from_sdk(params.get("mcpServers"), params.get("disabledMcpServers"))


def _take_questions(hosted: HostedSession, params: dict[str, Any]) -> None:
    """The model's questions go to the app when it has ``on_user_input_request``."""
    questions = hosted.session.questions
    if params.get("requestUserInput") is True:
        questions.asker = user_input_asker(hosted.id, lambda: hosted.owner)
        questions.ask_in_every_mode = True  # the app decides, in every mode
    else:
        questions.asker = None


def _str(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name} must be a non-empty string")
    return value


def _opt_str(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"{name} must be a string")
    return value or None


def _check_id(session_id: str) -> None:
    """Session ids name folders: keep them to safe characters."""
    if not _SAFE_ID.match(session_id) or session_id in (".", ".."):
        raise RpcError(INVALID_PARAMS, f"not a valid session id: {session_id!r}")


def _mode(value: Any) -> Mode:
    for mode in _MODES:
        if value == mode:
            return mode
    raise RpcError(INVALID_PARAMS, f"mode must be one of {', '.join(_MODES)}, not {value!r}")


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


def _model_info(model_id: str) -> dict[str, Any]:
    return {
        "id": model_id,
        "name": model_id,
        "capabilities": {
            "supports": {"vision": False, "reasoningEffort": False},
            "limits": {"max_context_window_tokens": 0},
        },
    }


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
