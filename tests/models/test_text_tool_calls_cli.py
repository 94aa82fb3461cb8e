"""A local server that returns a tool call as text: ``loopdeck -p --api-base`` runs it.

The fake OpenAI-compatible server answers with the call written in the reply's text
(no ``tool_calls``), in pieces, as a small local model through llama.cpp does; the
run reads it (``text_tool_calls`` is on by default with ``--api-base``), and the log
on disk records it as a tool request recovered from text, never as prose.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.exit_codes import EXIT_OK
from tests.support.config import write_config
from tests.support.fake_openai_server import FakeOpenAIServer, text
from tests.support.provider_faults import FAST, KEY, MODEL, NOTES, run_cli
from tests.support.provider_faults import nothing_left_running as nothing_left_running  # autouse

session_events = pytest.importorskip("copilot.generated.session_events")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

CALL = 'Let me read it.\n```json\n{"name": "view", "arguments": {"path": "notes.txt"}}\n```'


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(max_block=25.0) as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(NOTES, encoding="utf-8")
    monkeypatch.chdir(ws)
    return ws


def log_of(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = home / "session-state" / session_id / "events.jsonl"
    wire = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    for obj in wire:  # every line, the recovered call's included, parses officially
        parsed = session_events.session_event_from_dict(obj)
        assert parsed.type.value == obj["type"]
    return wire


def test_a_call_written_as_text_runs_and_is_logged_as_recovered(
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(tmp_path, FAST)
    server.script(text(CALL, pieces=9), text("The notes mention a needle."))
    run = run_cli(
        capfd, "-p", "what do the notes say?", "--model", MODEL, "--api-base", server.base_url
    )
    assert run.code == EXIT_OK, run.err
    wire = log_of(loopdeck_home, run.session_id)
    messages = [e["data"] for e in wire if e["type"] == "assistant.message"]
    assert messages[0]["content"] == "Let me read it."
    (request,) = messages[0]["toolRequests"]
    assert request["name"] == "view" and request["arguments"] == {"path": "notes.txt"}
    assert request["recoveredFromText"] is True
    done = [e["data"] for e in wire if e["type"] == "tool.execution_complete"]
    assert done[0]["success"] is True and "needle" in done[0]["result"]["content"]
    streamed = "".join(
        e["data"]["deltaContent"] for e in run.events if e["type"] == "assistant.message_delta"
    )
    assert "```" not in streamed and '"name"' not in streamed
    # The second request carries the call as a structured one, and its result.
    sent = server.requests[1].json["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "view"
    assert sent[-1]["role"] == "tool"
    assert messages[-1]["content"] == "The notes mention a needle."


def test_off_the_call_is_only_text(
    server: FakeOpenAIServer,
    workspace: Path,
    tmp_path: Path,
    loopdeck_home: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(tmp_path, {**FAST, "text_tool_calls": "off"})
    server.script(text(CALL, pieces=9))
    run = run_cli(capfd, "-p", "notes?", "--model", MODEL, "--api-base", server.base_url)
    assert run.code == EXIT_OK, run.err
    assert len(server.requests) == 1
    assert not [e for e in run.events if e["type"] == "tool.execution_start"]


def test_the_settings_are_read_and_checked(tmp_path: Path) -> None:
    from agent.models.select import ConfigError, read_config_file

    path = write_config(tmp_path, {"text_tool_calls": "on", "system_prompt": "compact"})
    config = read_config_file(path)
    assert (config.text_tool_calls, config.system_prompt) == ("on", "compact")
    write_config(tmp_path, {"system_prompt": "tiny"})
    with pytest.raises(ConfigError, match='system_prompt = "compact"'):
        read_config_file(path)
