"""What a tool is: a name, a JSON schema, a permission kind, and an async run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from agent.sandbox.secrets import EnvFilter

if TYPE_CHECKING:
    from agent.sandbox.policy import Confinement

# ``custom-tool``: a tool an SDK app defined and runs itself (see tools/external.py);
# ``mcp``: an MCP server's tool (agent/extensions/mcp/), Copilot's permission kind for it.
ToolKind = Literal["read", "write", "shell", "custom-tool", "mcp"]


class ToolArgs(BaseModel):
    """Base for a tool's arguments; unknown keys from the model are an error."""

    model_config = ConfigDict(extra="forbid")


@dataclass(slots=True)
class ToolResult:
    """``content`` goes to the model; ``detailed_content`` is for display only."""

    content: str
    success: bool = True
    detailed_content: str | None = None
    error: str | None = None

    @classmethod
    def failure(cls, message: str) -> ToolResult:
        return cls(content=message, success=False, error=message)


@dataclass(slots=True)
class ToolContext:
    cwd: Path
    extra_dirs: list[Path] = field(default_factory=list)
    # Streams progress lines to the timeline (tool.execution_partial_result).
    report_progress: Callable[[str], None] = lambda _line: None
    # The model's id for this call, for tools that hand the call on (external tools).
    tool_call_id: str = ""
    # How shell commands are confined (None: unconfined) and which variables they inherit.
    sandbox: Confinement | None = None
    # Paths no tool may read or write, resolved (the sandbox's hidden paths).
    hidden: tuple[Path, ...] = ()
    env_filter: EnvFilter = field(default_factory=EnvFilter)
    # The session's questions to the user and its todo list (ask_user, update_todos).
    questions: QuestionAsker | None = None
    todos: TodoKeeper | None = None
    # The user's own ``!command``, not the model's call: what it is told is for the user.
    for_user: bool = False


class QuestionAsker(Protocol):
    """Who puts the model's questions to the user (the session's
    agent/session/user_input.py)."""

    async def ask(
        self,
        question: str,
        choices: list[str],
        *,
        allow_freeform: bool = True,
        tool_call_id: str | None = None,
    ) -> ToolResult: ...


class TodoKeeper(Protocol):
    """Who keeps the session's todo list (agent/session/todos.py)."""

    def changed(self) -> None: ...


class ToolError(Exception):
    """A tool failed in a way the model should read (bad path, no match...)."""


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind] = "read"
    Args: ClassVar[type[ToolArgs]]
    # Calls of such a tool next to each other in one reply run at the same time
    # (``task``: sub-agents); any other call runs alone, in order.
    concurrent: ClassVar[bool] = False

    def may_have_effects(self) -> bool:
        """Whether a call can change the workspace or the world (write a file, run a
        command): such a call starts only once its request is durable in the log."""
        return self.kind != "read"

    def mcp_origin(self) -> tuple[str, str] | None:
        """An MCP server's tool: the server's name and the tool's own name on it."""
        return None

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema offered to the model."""
        params = self.Args.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        params["additionalProperties"] = False
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        """Run with validated ``args`` (an instance of ``Args``)."""
