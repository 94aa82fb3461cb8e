"""The check every tool call passes before it runs, and the events that record it.

Reads go straight through. Writes and shell commands are decided by the policy;
what it leaves open is asked of a human (interactive mode with a UI attached) or
denied (autopilot and headless runs never wait for a human). An embedder that
answers in every mode (the SDK server: its app decides) sets ``ask_in_every_mode``.
Each decision is a ``permission.requested`` / ``permission.completed`` pair in the log.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from agent.events.schema import (
    Event,
    EventData,
    Mode,
    PermissionCompletedData,
    PermissionRequestedData,
    ToolRequest,
)
from agent.permissions.rules import (
    Kind,
    PermissionAnswer,
    PermissionAsker,
    PermissionPolicy,
    PermissionPrompt,
    Rule,
    ShellPart,
    command_identifiers,
    writes_files,
)
from agent.tools.base import ToolArgs, ToolContext, ToolError, ToolResult
from agent.tools.registry import ToolRegistry


class GateHost(Protocol):
    @property
    def mode(self) -> Mode: ...

    def emit(self, data: EventData) -> Event: ...

    def tools(self) -> ToolRegistry: ...

    def tool_context(self, report_progress: Callable[[str], None]) -> ToolContext: ...


class PermissionGate:
    def __init__(self, host: GateHost, policy: PermissionPolicy | None = None) -> None:
        self.host = host
        self.policy = policy or PermissionPolicy()
        # Set by an interactive UI; None means nobody can be asked.
        self.asker: PermissionAsker | None = None
        # By default the asker is a human, consulted in interactive mode only.
        self.ask_in_every_mode = False

    async def check(self, request: ToolRequest) -> ToolResult | None:
        """None when the call may run; otherwise the failed result the model reads."""
        tool = self.host.tools().get(request.name)
        if tool is None or tool.kind == "read":
            return None
        args = _validated(tool.Args, request.arguments)
        if args is None:
            return None  # the tool call itself will fail with a readable message
        prompt = self._prompt(tool.kind, request, args)
        if prompt is None or isinstance(prompt, ToolResult):
            return prompt
        origin = (prompt.server_name or "", prompt.server_tool or "")
        verdict, rule = self.policy.decide(
            prompt.kind, request.name, prompt.command, self._workspace(), mcp=origin
        )
        self.host.emit(
            PermissionRequestedData(
                request_id=prompt.request_id, permission_request=_wire_request(prompt)
            )
        )
        answered = False
        try:
            result, denial = await self._resolve(verdict, rule, prompt)
            answered = True
        finally:
            if not answered:  # aborted while waiting for the human
                self._complete(prompt, {"kind": "cancelled", "reason": "aborted"})
        self._complete(prompt, result)
        return denial

    async def _resolve(
        self, verdict: str, rule: Rule | None, prompt: PermissionPrompt
    ) -> tuple[dict[str, Any], ToolResult | None]:
        if verdict == "allow":
            return {"kind": "approved"}, None
        what = _describe(prompt)
        parts = self._shell_parts(prompt)
        if verdict == "deny":
            assert rule is not None
            culprit = next((p for p in parts if p.verdict == "deny" and p.rule == rule), None)
            if culprit is not None and culprit.text.strip() != (prompt.command or "").strip():
                what = f"`{culprit.text}` in {what}"  # which part of `a && b` it was
            message = f"Permission denied: {what} is denied by the rule {rule}."
            if culprit is not None and culprit.note:
                message = message[:-1] + f" ({culprit.note})."
            return {"kind": "denied-by-rules", "rules": [rule.wire()]}, ToolResult.failure(message)
        can_ask = self.host.mode == "interactive" or self.ask_in_every_mode
        if self.asker is None or not can_ask:
            who = "autopilot" if self.host.mode == "autopilot" else "this non-interactive run"
            message = (
                f"Permission denied: {what} needs approval{_unallowed(parts)} and {who} cannot "
                f"ask the user. {self._remedy(parts, prompt)}"
            )
            result = {"kind": "denied-no-approval-rule-and-could-not-request-from-user"}
            return result, ToolResult.failure(message)
        answer: PermissionAnswer = await self.asker(prompt)
        match answer.decision:
            case "approve":
                return {"kind": "approved"}, None
            case "session":
                self.policy.approve_for_session(prompt.kind, prompt.command, prompt.tool_name)
                return {"kind": "approved-for-session", "approval": _approval(prompt)}, None
            case _:
                feedback = (answer.feedback or "").strip()
                message = f"The user denied {what}."
                if feedback:
                    message += f" Their feedback: {feedback}"
                denied: dict[str, Any] = {"kind": "denied-interactively-by-user"}
                if feedback:
                    denied["feedback"] = feedback
                return denied, ToolResult.failure(message)

    def _remedy(self, parts: list[ShellPart], prompt: PermissionPrompt) -> str:
        """What would let the call through: what the user or the model can change."""
        if prompt.kind == "mcp":
            server, tool = prompt.server_name, prompt.server_tool
            return (
                f"Allow it with --allow-tool '{server}({tool})' (or '{server}' for all "
                "its tools) or --allow-all-tools."
            )
        causes = {part.cause for part in parts if part.verdict == "ask"} or {""}
        fixes: list[str] = []
        if "unknown" in causes:
            fixes.append("write the command out plainly so the rules can check it")
            if not self.policy.deny:
                fixes.append("allow every command with --allow-tool shell or --allow-all-tools")
        if "outside" in causes:
            fixes.append(
                "write inside the workspace (or add the directory with --add-dir, or run "
                "with --allow-all-tools)"
            )
        if "" in causes:
            fixes.append(
                "allow it with --allow-tool (e.g. --allow-tool 'shell(git:*)' or "
                "--allow-tool write) or --allow-all-tools"
            )
        text = "; or ".join(fixes)
        return text[0].upper() + text[1:] + "."

    def _shell_parts(self, prompt: PermissionPrompt) -> list[ShellPart]:
        if prompt.kind != "shell":
            return []
        return self.policy.shell_parts(prompt.tool_name, prompt.command or "", self._workspace())

    def _workspace(self) -> list[Path]:
        """The working directory, then the added ones: where redirections may write."""
        ctx = self.host.tool_context(lambda _line: None)
        return [ctx.cwd, *ctx.extra_dirs]

    def _complete(self, prompt: PermissionPrompt, result: dict[str, Any]) -> None:
        self.host.emit(
            PermissionCompletedData(
                request_id=prompt.request_id, result=result, tool_call_id=prompt.tool_call_id
            )
        )

    def _prompt(
        self, kind: Kind, request: ToolRequest, args: ToolArgs
    ) -> PermissionPrompt | ToolResult | None:
        """What to ask about the call; a failed result when its preview already fails."""
        base = {
            "request_id": str(uuid.uuid4()),
            "tool_call_id": request.tool_call_id,
            "tool_name": request.name,
        }
        if kind == "shell":
            command = str(getattr(args, "command", ""))
            intention = str(getattr(args, "description", None) or f"Run `{command}`")
            return PermissionPrompt(kind="shell", intention=intention, command=command, **base)
        tool = self.host.tools().get(request.name)
        origin = tool.mcp_origin() if tool else None
        if kind == "mcp" and origin is not None:
            server, server_tool = origin
            return PermissionPrompt(
                kind="mcp",
                intention=f"Call {server_tool} on the MCP server {server}",
                arguments=args.model_dump(),
                description=tool.description if tool else "",
                server_name=server,
                server_tool=server_tool,
                **base,
            )
        if kind == "custom-tool":
            return PermissionPrompt(
                kind="custom-tool",
                intention=f"Call {request.name}",
                arguments=args.model_dump(),
                description=tool.description if tool else "",
                **base,
            )
        preview = getattr(tool, "preview", None)
        path = str(getattr(args, "path", ""))
        diff: str | None = None
        if callable(preview):
            try:
                diff = preview(args, self.host.tool_context(lambda _line: None))
            except ToolError as exc:
                # The call fails here, not later: the path may change before a run.
                return ToolResult.failure(str(exc))
            except Exception as exc:  # an OS refusal no check foresaw fails only this call
                return ToolResult.failure(
                    f"cannot prepare {request.name} for {path}: {type(exc).__name__}: {exc}"
                )
        verb = "Create" if request.name == "create" else "Edit"
        return PermissionPrompt(
            kind="write", intention=f"{verb} {path}", path=path, diff=diff, **base
        )


def _validated(model: type[ToolArgs], raw: Any) -> ToolArgs | None:
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
        return model.model_validate(data if data is not None else {})
    except (ValueError, ValidationError):
        return None


def _unallowed(parts: list[ShellPart]) -> str:
    """`` (not allowed by any rule: `make`; `$a x`: its name is known only when it runs)``."""
    plain = [f"`{p.text}`" for p in parts if p.verdict == "ask" and not p.note]
    noted = [f"`{p.text}`: {p.note}" for p in parts if p.verdict == "ask" and p.note]
    items = [f"not allowed by any rule: {', '.join(plain)}"] if plain and len(parts) > 1 else []
    items += noted
    return f" ({'; '.join(items)})" if items else ""


def _describe(prompt: PermissionPrompt) -> str:
    if prompt.kind == "shell":
        return f"the shell command `{prompt.command}`"
    if prompt.kind == "custom-tool":
        return f"calling the tool {prompt.tool_name}"
    if prompt.kind == "mcp":
        return f"the MCP tool {prompt.server_name}({prompt.server_tool})"
    return f"writing {prompt.path}"


def _approval(prompt: PermissionPrompt) -> dict[str, Any]:
    if prompt.kind == "shell":
        return {"kind": "commands", "commandIdentifiers": command_identifiers(prompt.command or "")}
    if prompt.kind == "custom-tool":
        return {"kind": "custom-tool", "toolName": prompt.tool_name}
    if prompt.kind == "mcp":
        return {"kind": "mcp", "serverName": prompt.server_name, "toolName": prompt.server_tool}
    return {"kind": "write"}


def _wire_request(prompt: PermissionPrompt) -> dict[str, Any]:
    """The SDK's ``permissionRequest`` shape for shell and write."""
    if prompt.kind == "shell":
        command = prompt.command or ""
        return {
            "kind": "shell",
            "toolCallId": prompt.tool_call_id,
            "fullCommandText": command,
            "intention": prompt.intention,
            "commands": [
                {"identifier": name, "readOnly": False} for name in command_identifiers(command)
            ],
            "possiblePaths": [],
            "possibleUrls": [],
            "hasWriteFileRedirection": writes_files(command),
            "canOfferSessionApproval": True,
        }
    if prompt.kind == "mcp":
        return {
            "kind": "mcp",
            "toolCallId": prompt.tool_call_id,
            "serverName": prompt.server_name or "",
            "toolName": prompt.server_tool or "",
            "toolTitle": prompt.tool_name,
            "args": prompt.arguments,
            "readOnly": False,
        }
    if prompt.kind == "custom-tool":
        return {
            "kind": "custom-tool",
            "toolCallId": prompt.tool_call_id,
            "toolName": prompt.tool_name,
            "toolDescription": prompt.description or "",
            "args": prompt.arguments,
        }
    return {
        "kind": "write",
        "toolCallId": prompt.tool_call_id,
        "fileName": prompt.path or "",
        "diff": prompt.diff or "",
        "intention": prompt.intention,
        "canOfferSessionApproval": True,
    }
