"""One loopdeck session as the SDK sees it: events out, answers in, hooks asked.

:class:`HostedSession` forwards every event of its session to the attached
connections as ``session.event`` notifications (in emit order), keeps the
persisted ones for ``session.getMessages``, and holds what waits on the app:
permission decisions, external tool results, and hook calls (``hooks.invoke``
on the owning connection).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.events.schema import (
    AssistantMessageData,
    Event,
    Mode,
    SessionIdleData,
    ToolRequest,
    UserMessageData,
)
from agent.extensions.mcp.config import EnvValueMode
from agent.loop.hooks import LoopHooks, PromptDecision, ToolAfterword, ToolDecision
from agent.permissions.rules import PermissionAnswer, PermissionPrompt
from agent.session.session import Session
from agent.tools.base import Tool, ToolResult
from agent.tools.external import ExternalToolCalls, ExternalToolSpec, external_tool
from agent.tools.registry import ToolRegistry, default_tools
from app.server.event_log import EventLog
from app.server.plan import app_plan_reviewer
from app.server.rpc import INVALID_PARAMS, Connection, ConnectionClosed, RpcError

log = logging.getLogger(__name__)

_APPROVE = frozenset({"approve-once", "approved", "approve-read-only-for-session"})
_APPROVE_FOR_SESSION = frozenset(
    {
        "approve-for-session",
        "approved-for-session",
        "approve-for-location",
        "approved-for-location",
        "approve-permanently",
    }
)
_DENY = frozenset(
    {
        "reject",
        "user-not-available",
        "cancelled",
        "denied-by-rules",
        "denied-interactively-by-user",
        "denied-no-approval-rule-and-could-not-request-from-user",
        "denied-by-content-exclusion-policy",
        "denied-by-permission-request-hook",
    }
)


class SdkSession(Session):
    """A session an SDK app drives: its ``systemMessage`` and hook context apply."""

    system_append: str = ""
    system_replace: str | None = None
    start_context: str = ""  # from the sessionStart hook

    def system_prompt(self) -> str:
        base = self.system_replace if self.system_replace is not None else super().system_prompt()
        return "\n\n".join(p for p in (base, self.system_append, self.start_context) if p)

    def refresh(self) -> None:
        """Rebuild the tool registries and system prompts on next use."""
        self.toolbox.refresh()

    def use_tools(self, registry_factory: Callable[[Mode], ToolRegistry]) -> None:
        """Offer other tools from the next model call on (a resume with new ``tools``)."""
        self.toolbox.use_factory(registry_factory)


@dataclass(slots=True)
class ToolChoice:
    """Which tools a session offers: the built-ins, filtered, plus the app's own."""

    specs: list[ExternalToolSpec] = field(default_factory=list)
    available: list[str] | None = None  # allowlist: "name", "builtin:name", "custom:*"…
    excluded: list[str] | None = None
    calls: ExternalToolCalls | None = None

    def check(self) -> None:
        builtins = set(default_tools(autopilot=True).names())
        seen: set[str] = set()
        for spec in self.specs:
            if spec.name in seen:
                raise RpcError(INVALID_PARAMS, f"tool {spec.name!r} is defined twice")
            seen.add(spec.name)
            if spec.name in builtins and not spec.overrides_built_in_tool:
                raise RpcError(
                    INVALID_PARAMS,
                    f"tool {spec.name!r} clashes with a built-in tool; "
                    "set overrides_built_in_tool to replace it",
                )

    def registry(self, mode: Mode) -> ToolRegistry:
        assert self.calls is not None, "tools are built once the session is hosted"
        custom = {spec.name for spec in self.specs}
        builtins = default_tools(autopilot=mode == "autopilot")
        tools: list[Tool] = []
        for name in builtins.names():
            tool = builtins.get(name)
            if tool is not None and name not in custom and self._offered(name, "builtin"):
                tools.append(tool)
        tools += [
            external_tool(spec, self.calls)
            for spec in self.specs
            if self._offered(spec.name, "custom")
        ]
        return ToolRegistry(tools)

    def _offered(self, name: str, source: str) -> bool:
        if self.available is not None and not _any_match(self.available, name, source):
            return False
        return not (self.excluded and _any_match(self.excluded, name, source))


def _any_match(entries: list[str], name: str, source: str) -> bool:
    for entry in entries:
        prefix, sep, pattern = entry.partition(":")
        if sep and prefix == source and pattern in ("*", name):
            return True
        if not sep and entry == name:
            return True
    return False


class HostedSession:
    def __init__(self, session: SdkSession, tools: ToolChoice) -> None:
        self.session = session
        self.tools = tools
        self.calls = ExternalToolCalls(session.emit, session.id)
        tools.calls = self.calls
        self.events: list[Event] = [e for e in session.backlog if not e.ephemeral]
        self.event_log = EventLog(self.events)  # session.eventLog.* reads these
        self.connections: list[Connection] = []
        self.owner: Connection | None = None  # answers hooks; the last to attach
        self.hooks_enabled = False
        self.mcp_env_mode: EnvValueMode = "direct"  # session.mcp.setEnvValueMode
        self._permissions: dict[str, asyncio.Future[PermissionAnswer]] = {}
        self.hooks = SdkHooks(self)
        session.hooks = self.hooks
        # What the policy leaves open is the app's to decide, in every mode: the
        # request goes out as ``permission.requested`` and waits for
        # ``handlePendingPermissionRequest`` (from the SDK's on_permission_request,
        # or from the app itself, as the SDK documents when it has no handler).
        session.permissions.asker = self.ask_permission
        session.permissions.ask_in_every_mode = True
        # exit_plan_mode: the app answers if it registered a handler (app/server/plan.py).
        self.answers_plans = False
        # The runtime's session.lifecycle, told of every event after the app's copy.
        self.on_event: Callable[[Session, Event], None] | None = None
        self.user_named = False  # the app named it (session.name.set): no auto names after
        session.plan.reviewer = app_plan_reviewer(self)
        self._unsubscribe = session.subscribe(self._forward)

    @property
    def id(self) -> str:
        return self.session.id

    # --- events out ----------------------------------------------------------

    def _forward(self, event: Event) -> None:
        if not event.ephemeral:
            self.events.append(event)
            self.event_log.appended()
        self._send(event)
        if self.on_event is not None:
            self.on_event(self.session, event)

    def _send(self, event: Event) -> None:
        params = {"sessionId": self.session.id, "event": event.wire()}
        for conn in list(self.connections):
            conn.notify("session.event", params)

    def replay_to(self, conn: Connection, events: list[Event]) -> None:
        """Send events from before ``conn`` attached (session.start, session.resume)."""
        for event in events:
            conn.notify("session.event", {"sessionId": self.session.id, "event": event.wire()})

    # --- connections ---------------------------------------------------------

    def attach(self, conn: Connection, *, hooks: bool) -> None:
        if conn not in self.connections:
            self.connections.append(conn)
        self.owner = conn
        self.hooks_enabled = hooks

    def detach(self, conn: Connection) -> bool:
        """Drop ``conn``. True when nobody is attached any more."""
        if conn in self.connections:
            self.connections.remove(conn)
        if self.owner is conn:
            self.owner = self.connections[-1] if self.connections else None
        if self.owner is None:
            self.hooks_enabled = False
        return not self.connections

    async def close(self) -> None:
        """Stop forwarding and close the session: a running loop is aborted, which
        also settles what it waited for (permission answers, external tools)."""
        self._unsubscribe()
        try:
            await self.session.close()
        except Exception:
            log.exception("closing session %s failed", self.id)

    # --- permissions ---------------------------------------------------------

    async def ask_permission(self, prompt: PermissionPrompt) -> PermissionAnswer:
        """The gate's asker: wait for ``session.permissions.handlePendingPermissionRequest``."""
        future: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
        self._permissions[prompt.request_id] = future
        try:
            return await future
        finally:
            self._permissions.pop(prompt.request_id, None)

    def answer_permission(self, request_id: str, result: Any) -> bool:
        future = self._permissions.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(permission_answer(result))
        return True


def permission_answer(result: Any) -> PermissionAnswer:
    """The SDK's ``PermissionDecision`` as the gate's answer."""
    if not isinstance(result, dict) or not isinstance(result.get("kind"), str):
        raise RpcError(INVALID_PARAMS, "result must be a permission decision with a 'kind'")
    kind = result["kind"]
    if kind in _APPROVE:
        return PermissionAnswer("approve")
    if kind in _APPROVE_FOR_SESSION:
        return PermissionAnswer("session")
    if kind in _DENY:
        feedback = result.get("feedback")
        if kind == "user-not-available":
            feedback = "no user was available to approve it"
        return PermissionAnswer("deny", feedback if isinstance(feedback, str) else None)
    raise RpcError(INVALID_PARAMS, f"unknown permission decision kind {kind!r}")


def tool_answer(params: dict[str, Any]) -> ToolResult:
    """``session.tools.handlePendingToolCall`` params as the tool's result."""
    error = params.get("error")
    result = params.get("result")
    if isinstance(error, str) and error:
        return ToolResult.failure(error)
    if isinstance(result, str):
        return ToolResult(content=result)
    if isinstance(result, dict):
        text = str(result.get("textResultForLlm") or "")
        failed_with = result.get("error")
        kind = result.get("resultType") or ("failure" if failed_with else "success")
        log_text = result.get("sessionLog")
        detailed = log_text if isinstance(log_text, str) else None
        if kind != "success":
            message = str(failed_with or text or f"the tool's result was {kind}")
            return ToolResult(content=text or message, success=False, error=message)
        return ToolResult(content=text, detailed_content=detailed)
    raise RpcError(INVALID_PARAMS, "give a 'result' (string or object) or an 'error'")


class RequestTracker:
    """Follows one sent message: its last assistant message and the idle that ends it."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.started = False
        self.response: Event | None = None
        self.idle_id: str | None = None

    def __call__(self, event: Event) -> None:
        match event.data:
            case UserMessageData(message_id=message_id) if message_id == self.message_id:
                self.started = True
            case AssistantMessageData() if self.started:
                self.response = event
            case SessionIdleData():
                self.idle_id = event.id
            case _:
                pass


class SdkHooks(LoopHooks):
    """The loop's hooks, answered by the app's ``hooks`` via ``hooks.invoke``."""

    def __init__(self, hosted: HostedSession) -> None:
        self.hosted = hosted

    async def invoke(self, hook_type: str, data: dict[str, Any]) -> dict[str, Any] | None:
        hosted = self.hosted
        conn = hosted.owner
        if not hosted.hooks_enabled or conn is None or conn.closed:
            return None
        session = hosted.session
        hook_input = {
            "sessionId": session.id,
            "timestamp": int(time.time() * 1000),
            "cwd": str(session.cwd),
            **data,
        }
        params = {"sessionId": session.id, "hookType": hook_type, "input": hook_input}
        try:
            response = await conn.request("hooks.invoke", params)
        except (RpcError, ConnectionClosed) as exc:
            log.warning("hook %s failed: %s", hook_type, exc)
            return None
        output = response.get("output") if isinstance(response, dict) else None
        return output if isinstance(output, dict) else None

    async def user_prompt_submitted(self, prompt: str) -> PromptDecision | None:
        out = await self.invoke("userPromptSubmitted", {"prompt": prompt})
        if out is None:
            return None
        blocked = out.get("decision") == "block"
        return PromptDecision(
            prompt=_text(out.get("modifiedPrompt")),
            context=_text(out.get("additionalContext")),
            block_reason=(_text(out.get("reason")) or "no reason given") if blocked else None,
        )

    async def pre_tool_use(self, request: ToolRequest) -> ToolDecision | None:
        out = await self.invoke(
            "preToolUse", {"toolName": request.name, "toolArgs": request.arguments}
        )
        if out is None:
            return None
        decision = out.get("permissionDecision")
        modified = out.get("modifiedArgs")
        return ToolDecision(
            permission=decision if decision in ("allow", "deny", "ask") else None,
            reason=_text(out.get("permissionDecisionReason")),
            arguments=modified if isinstance(modified, dict) else None,
            context=_text(out.get("additionalContext")),
        )

    async def post_tool_use(self, request: ToolRequest, result: ToolResult) -> ToolAfterword | None:
        base = {"toolName": request.name, "toolArgs": request.arguments}
        if not result.success:
            out = await self.invoke(
                "postToolUseFailure", {**base, "error": result.error or result.content}
            )
            return ToolAfterword(context=_text(out.get("additionalContext"))) if out else None
        tool_result = {"textResultForLlm": result.content, "resultType": "success"}
        out = await self.invoke("postToolUse", {**base, "toolResult": tool_result})
        if out is None:
            return None
        modified = out.get("modifiedResult")
        if isinstance(modified, dict):
            modified = modified.get("textResultForLlm")
        return ToolAfterword(content=_text(modified), context=_text(out.get("additionalContext")))

    async def agent_stop(self, *, stop_reason: str, repeated: bool) -> str | None:
        out = await self.invoke(
            "agentStop", {"stopReason": stop_reason, "stopHookActive": repeated}
        )
        if out is None or out.get("decision") != "block":
            return None
        return _text(out.get("reason")) or "Continue working on the task."

    async def session_start(self, source: str) -> None:
        """``sessionStart``; its ``additionalContext`` joins the system prompt."""
        out = await self.invoke("sessionStart", {"source": source})
        if out is not None:
            self.hosted.session.start_context = _text(out.get("additionalContext")) or ""

    async def session_end(self, reason: str) -> None:
        await self.invoke("sessionEnd", {"reason": reason})


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
