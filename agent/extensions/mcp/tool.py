"""An MCP server's tool as one of the loop's tools: offered under Copilot's name
(``server-tool``) with the server's JSON schema; its result read for the model.

Progress the server reports streams as the call's partial results. Text is kept; an
image or audio clip becomes a note (the model gets no pixels); a resource becomes its
text or a note with its URI; structured content is shown as JSON when the server sent
no text. A result marked ``isError`` is a failed call. Long results are cut for the
model like the bash tool's output (head and tail).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict

from agent.extensions.mcp.connection import McpCallError, McpConnection
from agent.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from agent.tools.bash import HEAD_CHARS, HEAD_LINES, MAX_LINE_CHARS, TAIL_CHARS, TAIL_LINES, Clip

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as ServerTool


class McpToolArgs(ToolArgs):
    """Whatever the model sent: the server validates against its own schema."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool):
    kind = "mcp"
    description = ""
    Args = McpToolArgs
    parameters: ClassVar[dict[str, Any]] = {}
    server_tool: ClassVar[str] = ""

    def __init__(self, server: McpConnection) -> None:
        self._server = server

    def mcp_origin(self) -> tuple[str, str]:
        return self._server.name, self.server_tool

    def may_have_effects(self) -> bool:
        return True  # another program's code runs; its read-only hint is only a hint

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def run(self, args: McpToolArgs, ctx: ToolContext) -> ToolResult:
        try:
            result = await self._server.call(
                self.server_tool, args.model_dump(), ctx.report_progress
            )
        except McpCallError as exc:
            return ToolResult.failure(str(exc))
        return read_result(result)


def mcp_tool(name: str, server: McpConnection, tool: ServerTool) -> McpTool:
    """The loop's tool ``name`` for ``server``'s ``tool``."""
    schema = dict(tool.input_schema or {})
    schema.pop("$schema", None)  # some providers refuse the draft marker
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    description = tool.description or tool.title or f"{tool.name} (MCP server {server.name})"
    attrs: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": schema,
        "server_tool": tool.name,
    }
    cls = type(f"McpTool_{name}", (McpTool,), attrs)
    made: McpTool = cls(server)
    return made


def read_result(result: CallToolResult) -> ToolResult:
    parts = [_part(block) for block in result.content]
    text = "\n".join(p for p in parts if p)
    structured = result.structured_content
    if structured is not None and not text.strip():
        text = json.dumps(structured, indent=2, ensure_ascii=False)
    if not text.strip():
        text = "(the tool returned nothing)"
    shown = _clip(text)
    if result.is_error:
        return ToolResult(content=shown, success=False, detailed_content=text, error=shown)
    return ToolResult(content=shown, detailed_content=text if shown != text else None)


def _part(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(block.data) * 3 // 4  # base64
        return f"[{kind}: {block.mime_type}, about {size} bytes, not shown to the model]"
    if kind == "resource_link":
        return f"[resource: {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        return f"[resource: {resource.uri}, {resource.mime_type or 'binary'}, not shown]"
    return f"[{kind or 'unknown'} content]"


def _clip(text: str) -> str:
    clip = Clip(HEAD_LINES, HEAD_CHARS, TAIL_LINES, TAIL_CHARS, MAX_LINE_CHARS)
    for line in text.split("\n"):
        clip.add(line)
    return clip.render()
