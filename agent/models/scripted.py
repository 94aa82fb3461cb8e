"""A model that plays a script: deterministic sessions for tests and demos.

``--model scripted:<file.json>`` or ``scripted:<name>`` (a script shipped in
``agent/models/scripts``). The n-th model call of a session gets ``turns[n]``;
the loop passes ``call_index`` counted from the session's persisted history, so a
resumed session continues where its script left off.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.models.base import (
    COMPACTION_CALL,
    ERROR_TYPES,
    ModelReply,
    ProviderError,
    RetryPolicy,
    StreamItem,
    TextDelta,
    ToolCall,
    Usage,
)

SCRIPTED_PREFIX = "scripted:"
EXHAUSTED_TEXT = "(script exhausted)"
_CHUNK = re.compile(r"\S+\s*|\s+")
_PREAMBLE = re.compile(r"<checkpoint_summary>.*?</checkpoint_summary>\s*", re.S)


class ScriptError(ValueError):
    """A script that cannot be loaded; the message says what and where."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScriptToolCall(_Strict):
    name: str
    # A dict is sent as JSON; a string is sent verbatim (lets a script play a
    # model that produces malformed arguments).
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None
    # Made only when the tool is offered: one script plays in several modes (the demo's
    # exit_plan_mode exists only in plan mode).
    optional: bool = False


class ScriptUsage(_Strict):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None


class ScriptedFailure(_Strict):
    type: str
    message: str = "scripted provider error"


class ScriptTurn(_Strict):
    text: str = ""
    reasoning: str | None = None
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    delay_ms: int = 0
    usage: ScriptUsage | None = None
    error: ScriptedFailure | None = None


class ScriptCompaction(_Strict):
    """How the scripted model answers a summary request (agent/loop/compaction.py)."""

    summary: str | None = None  # None: a summary built from the conversation
    error: ScriptedFailure | None = None


class Script(_Strict):
    turns: list[ScriptTurn]
    when_exhausted: Literal["repeat_last", "stop"] = "stop"
    # The context window the scripted model claims, in tokens (None: the default
    # for a model nobody described); a tiny one lets tests fill it.
    context_window: int | None = None
    compaction: ScriptCompaction = Field(default_factory=ScriptCompaction)
    # The sub-agents' own turns, by the ``name`` a ``task`` call gives its agent (or,
    # without one, its ``agent_type``): each plays its script from its first call.
    subagents: dict[str, Script] = Field(default_factory=dict)


def load_script(spec: str) -> tuple[str, Script]:
    """Load ``spec`` (a path or a shipped script's name). Returns (label, script)."""
    path = Path(spec).expanduser()
    if spec.endswith(".json") or path.exists():
        if not path.is_file():
            raise ScriptError(f"script file not found: {path}")
        text = path.read_text(encoding="utf-8")
        label = str(path.resolve())
    else:
        shipped = resources.files("agent.models").joinpath("scripts", f"{spec}.json")
        if not shipped.is_file():
            names = ", ".join(shipped_script_names()) or "none"
            raise ScriptError(f"no shipped script named {spec!r} (shipped: {names})")
        text = shipped.read_text(encoding="utf-8")
        label = spec
    try:
        script = Script.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{label}: not valid JSON: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ScriptError(f"{label}: not a valid script: {problems}") from exc
    for i, turn in enumerate(script.turns):
        if turn.error is not None and turn.error.type not in ERROR_TYPES:
            known = ", ".join(sorted(ERROR_TYPES))
            raise ScriptError(f"{label}: turns.{i}.error.type must be one of {known}")
    return label, script


def shipped_script_names() -> list[str]:
    folder = resources.files("agent.models").joinpath("scripts")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


class ScriptedModel:
    """Plays :class:`Script` turns; implements :class:`agent.models.base.ModelClient`."""

    def __init__(self, script: Script, label: str = "script", call_ids: str = "call") -> None:
        self._script = script
        self._label = label
        self._call_ids = call_ids  # the calls' ids start with it: a sub-agent's differ

    @classmethod
    def from_spec(cls, model: str) -> ScriptedModel:
        """Build from ``scripted:<file-or-name>``."""
        spec = model.removeprefix(SCRIPTED_PREFIX)
        if not spec:
            raise ScriptError(
                "scripted model needs a script: scripted:<file.json> or scripted:demo"
            )
        label, script = load_script(spec)
        return cls(script, label)

    @property
    def name(self) -> str:
        return f"{SCRIPTED_PREFIX}{self._label}"

    @property
    def context_window(self) -> int | None:
        return self._script.context_window

    @property
    def retry_policy(self) -> RetryPolicy:
        # Short but visible backoff: scripted errors are for tests and demos.
        return RetryPolicy(max_retries=3, base_delay=0.05, max_delay=0.4)

    def _summary(self, messages: list[dict[str, Any]]) -> ModelReply:
        scripted = self._script.compaction
        if scripted.error is not None:
            raise ProviderError(scripted.error.type, scripted.error.message)
        text = scripted.summary
        if text is None:
            # Deterministic, and it carries the task: tests can find it in later requests.
            asked = str(messages[-1].get("content", "")) if messages else ""
            conversation = asked.split("</conversation>")[0].removeprefix("<conversation>\n")
            # An earlier summary's preamble is not the task; what follows it is.
            conversation = _PREAMBLE.sub("", conversation)
            first = conversation.split("\n\n")[0][:300]
            text = (
                f"<overview>{first}</overview>\n"
                f"<history>{conversation.count(chr(10) + chr(10)) + 1} messages summarised "
                "(scripted)</history>"
            )
        return ModelReply(text=text, finish_reason="stop")

    def for_subagent(self, name: str, agent_type: str) -> ScriptedModel:
        """The model a sub-agent started by ``task`` talks to: its own script, under
        the agent's name, else its type; none scripted: an empty one (it answers
        :data:`EXHAUSTED_TEXT`)."""
        subs = self._script.subagents
        script = subs.get(name) or subs.get(agent_type) or Script(turns=[])
        return ScriptedModel(script, self._label, f"call_{name}")

    def turn_for(self, call_index: int) -> ScriptTurn | None:
        turns = self._script.turns
        if call_index < len(turns):
            return turns[call_index]
        if self._script.when_exhausted == "repeat_last" and turns:
            return turns[-1]
        return None

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        call_index: int,
    ) -> AsyncIterator[StreamItem]:
        if call_index == COMPACTION_CALL:
            yield self._summary(messages)
            return
        turn = self.turn_for(call_index)
        if turn is None:
            yield TextDelta(EXHAUSTED_TEXT)
            yield ModelReply(text=EXHAUSTED_TEXT, finish_reason="stop")
            return
        chunks = _CHUNK.findall(turn.text)
        pause = turn.delay_ms / 1000 / max(len(chunks), 1)
        if turn.error is not None and not chunks:
            if pause:
                await asyncio.sleep(turn.delay_ms / 1000)
            raise ProviderError(turn.error.type, turn.error.message)
        # Chunks keep a schedule, as a network stream does: one that falls behind (a
        # busy event loop) gets the chunks already due at once instead of drifting.
        start = time.monotonic()
        for i, chunk in enumerate(chunks, start=1):
            if pause:
                wait = start + i * pause - time.monotonic()
                await asyncio.sleep(max(wait, 0.0))
            yield TextDelta(chunk)
        if turn.error is not None:  # a stream dropped after its text
            raise ProviderError(turn.error.type, turn.error.message)
        if not chunks and pause:
            await asyncio.sleep(pause)
        offered = {tool.get("function", {}).get("name") for tool in tools}
        calls = [
            ToolCall(
                id=call.id or f"{self._call_ids}_{call_index}_{i}",
                name=call.name,
                arguments=call.arguments
                if isinstance(call.arguments, str)
                else json.dumps(call.arguments),
            )
            for i, call in enumerate(turn.tool_calls)
            if not call.optional or call.name in offered
        ]
        usage = None
        if turn.usage is not None:
            usage = Usage(
                input_tokens=turn.usage.prompt_tokens,
                output_tokens=turn.usage.completion_tokens,
                cost=turn.usage.cost,
            )
        yield ModelReply(
            text=turn.text,
            tool_calls=calls,
            reasoning=turn.reasoning,
            usage=usage,
            finish_reason="tool_calls" if calls else "stop",
        )
