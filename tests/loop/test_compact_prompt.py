"""The compact system prompt for small windows, and a prefix that never changes within a session."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from agent.loop import system_prompt
from agent.loop.compact_prompt import COMPACT_WINDOW, wants_compact
from agent.loop.system_prompt import build_system_prompt
from agent.models.base import StreamItem
from agent.models.scripted import Script, ScriptedModel
from agent.tools.registry import default_tools
from tests.support.scripting import FakeCountingModel, new_session

MODES = ("interactive", "autopilot", "plan")


def prompt(tmp_path: Path, mode: str, *, compact: bool) -> str:
    return build_system_prompt(
        cwd=tmp_path,
        mode=mode,
        tool_names=default_tools(autopilot=True).names(),
        model="openai/qwen",
        today=date(2026, 1, 2),
        platform_name="Linux",
        compact=compact,
    )


@pytest.mark.parametrize("mode", MODES)
def test_the_compact_prompt_is_a_fraction_of_the_full_one(tmp_path: Path, mode: str) -> None:
    full = prompt(tmp_path, mode, compact=False)
    compact = prompt(tmp_path, mode, compact=True)
    assert len(compact) < len(full) * 0.45
    # The essentials: where, which mode, the tools, the rules that keep it honest.
    for words in (str(tmp_path), f"Mode: {mode}", "edit", "Never invent", "data"):
        assert words in compact, words
    # Nothing that changes from day to day or model to model.
    assert "2026-01-02" not in compact and "openai/qwen" not in compact


def test_the_compact_autopilot_prompt_says_how_to_finish(tmp_path: Path) -> None:
    assert "call task_complete" in prompt(tmp_path, "autopilot", compact=True)


def test_compact_tools_keep_what_a_call_needs() -> None:
    registry = default_tools(autopilot=True)
    full = json.loads(json.dumps(registry.schemas()))
    registry.compact = True
    compact = registry.schemas()
    assert len(json.dumps(compact)) < len(json.dumps(full)) * 0.55
    for before, after in zip(full, compact, strict=True):
        f, c = before["function"], after["function"]
        assert f["name"] == c["name"]
        assert f["parameters"].get("required") == c["parameters"].get("required")
        assert set(f["parameters"]["properties"]) == set(c["parameters"]["properties"])
    view = compact[0]["function"]["parameters"]["properties"]
    assert view["view_range"]["type"] == "array"  # anyOf [array, null] made plain
    registry.compact = False
    assert registry.schemas() == full


@pytest.mark.parametrize(
    ("style", "window", "compact"),
    [
        ("auto", None, False),
        ("auto", COMPACT_WINDOW, True),
        ("auto", COMPACT_WINDOW + 1, False),
        ("compact", None, True),
        ("full", 4096, False),
    ],
)
def test_which_prompt(style: str, window: int | None, compact: bool) -> None:
    assert wants_compact(style, window) is compact


class FakePrefixModel(FakeCountingModel):
    """Records each call's system message and tools as the bytes a server would read."""

    def __init__(self, inner: ScriptedModel) -> None:
        super().__init__(inner)
        self.prefixes: list[str] = []

    @property
    def context_window(self) -> int | None:
        return self.inner.context_window

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        self.prefixes.append(json.dumps([messages[0], tools]))
        async for item in super().stream(messages, tools, call_index=call_index):
            yield item


def prefix_model(window: int | None = None) -> FakePrefixModel:
    turns = [
        {"text": "", "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
        {"text": "", "tool_calls": [{"name": "view", "arguments": {"path": "."}}]},
        {"text": "Done."},
    ]
    script = Script.model_validate({"turns": turns, "context_window": window})
    return FakePrefixModel(ScriptedModel(script, "prefix"))


@pytest.mark.parametrize("window", [None, 4096])
async def test_every_call_of_a_session_sends_the_same_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int | None
) -> None:
    """llama.cpp reuses its prompt cache only for a byte-identical prefix: the system
    prompt and the tools must not change from one call to the next, not even when the
    day does."""
    model = prefix_model(window)
    session, _ = await new_session(model, tmp_path)
    await session.send_and_wait("look around")

    class FakeTomorrow(date):
        @classmethod
        def today(cls) -> FakeTomorrow:
            return cls(2099, 1, 1)

    monkeypatch.setattr(system_prompt, "date", FakeTomorrow)
    await session.send_and_wait("and again")
    await session.close()
    assert len(model.prefixes) == 4
    assert len(set(model.prefixes)) == 1
    system = json.loads(model.prefixes[0])[0]["content"]
    assert ("# Rules" in system) is (window is not None)  # the small window's compact prompt


async def test_the_setting_chooses_the_prompt(tmp_path: Path) -> None:
    model = prefix_model()
    session, _ = await new_session(model, tmp_path)
    assert "# Working well" in session.system_prompt()
    session.configure_context(window=8192)
    assert "# Rules" in session.system_prompt()  # auto: a small window
    assert session.tools().compact
    session.use_system_prompt("full")
    assert "# Working well" in session.system_prompt()
    assert not session.tools().compact
    session.configure_context(window=128_000)
    session.use_system_prompt("compact")
    assert "# Rules" in session.system_prompt()
    await session.close()
