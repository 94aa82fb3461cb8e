"""Secrets stay out: of the shell's environment, and of everything loopdeck records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.events.schema import (
    ToolErrorPayload,
    ToolExecutionCompleteData,
    ToolExecutionPartialResultData,
    ToolResultPayload,
)
from agent.sandbox.secrets import EnvFilter, SecretMasker, mask
from agent.tools.base import ToolContext
from agent.tools.bash import BashArgs, BashTool, child_env
from app.cli import main
from tests.support.config import write_config

OPENAI = "sk-proj-openai-test-0123456789abcdef"
ANTHROPIC = "sk-ant-anthropic-test-0123456789"
SERVICE = "svc-token-value-98765"
PASSWORD = "hunter2-but-longer"
SECRETS = {
    "OPENAI_API_KEY": OPENAI,
    "ANTHROPIC_API_KEY": ANTHROPIC,
    "MY_SERVICE_TOKEN": SERVICE,
    "DB_PASSWORD": PASSWORD,
}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PLAIN_SETTING", "visible-value")


# --- the shell's environment ---------------------------------------------------


def test_secret_looking_names_are_dropped_by_default() -> None:
    env = {
        **SECRETS,
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "aws_secret_access_key": "x" * 20,
        "GH_TOKEN": "y" * 20,
        "KEYCHAIN_PASSWORD_FILE": "z",
    }
    kept = EnvFilter().child_env(env)
    assert kept == {"PATH": "/usr/bin", "HOME": "/home/me"}


def test_include_passes_a_variable_through_and_exclude_drops_more() -> None:
    env = {**SECRETS, "AWS_PROFILE": "prod", "DATABASE_URL": "postgres://u:p@h/db"}
    env_filter = EnvFilter(include=("my_service_*",), exclude=("AWS_*", "DATABASE_URL"))
    kept = env_filter.child_env(env)
    assert kept == {"MY_SERVICE_TOKEN": SERVICE}
    # Passed through, still a secret: its value is masked in what is recorded.
    assert SERVICE in env_filter.secret_values(env)
    assert "postgres://u:p@h/db" in env_filter.secret_values(env)


async def test_the_bash_tool_sees_no_keys(keys: None, tmp_path: Path) -> None:
    result = await BashTool().run(
        BashArgs(command='env; echo "[$OPENAI_API_KEY][$MY_SERVICE_TOKEN]"'),
        ToolContext(cwd=tmp_path),
    )
    assert result.success
    assert "PLAIN_SETTING=visible-value" in result.content
    assert "[][]" in result.content
    for name, value in SECRETS.items():
        assert name not in result.content and value not in result.content
    assert "OPENAI_API_KEY" not in child_env()


# --- masking what is recorded ------------------------------------------------------


def test_mask_replaces_the_longest_secret_first() -> None:
    assert mask("a sk-123456789 b sk-12345678", ["sk-12345678", "sk-123456789"]) == "a *** b ***"


def test_tool_events_are_masked_and_others_left_alone() -> None:
    masker = SecretMasker([OPENAI])
    complete = ToolExecutionCompleteData(
        tool_call_id="c",
        success=False,
        result=ToolResultPayload(content=f"key={OPENAI}", detailed_content=f"full {OPENAI}"),
        error=ToolErrorPayload(message=f"failed with {OPENAI}"),
    )
    masked = masker.event_data(complete)
    assert isinstance(masked, ToolExecutionCompleteData)
    assert masked.result == ToolResultPayload(content="key=***", detailed_content="full ***")
    assert masked.error is not None and masked.error.message == "failed with ***"
    partial = ToolExecutionPartialResultData(tool_call_id="c", partial_output=OPENAI)
    assert masker.event_data(partial) == partial.model_copy(update={"partial_output": "***"})
    clean = ToolExecutionPartialResultData(tool_call_id="c", partial_output="nothing")
    assert masker.event_data(clean) is clean


def test_short_values_are_not_treated_as_secrets() -> None:
    assert EnvFilter().secret_values({"SOME_KEY": "1", "OTHER_TOKEN": "true"}) == []


def test_keys_never_reach_the_log_stdout_exports_or_logs(
    keys: None,
    tmp_path: Path,
    loopdeck_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    # A file that holds a key (a .env), and a variable passed through on purpose.
    (ws / ".env").write_text(f"OPENAI_API_KEY={OPENAI}\nANTHROPIC_API_KEY={ANTHROPIC}\n")
    write_config(tmp_path, '[shell_env]\ninclude = ["MY_SERVICE_TOKEN"]\n')
    commands = [
        "env",
        "printenv",
        "echo $OPENAI_API_KEY",
        'echo "service: $MY_SERVICE_TOKEN"',
        "cat .env",
        "cat .env >&2; exit 3",
    ]
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": c}} for c in commands]},
        {"tool_calls": [{"name": "view", "arguments": {"path": ".env"}}]},
        {"text": "done"},
    ]
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": turns}))
    capsys.readouterr()
    code = main(
        [
            "-p",
            "show me the environment",
            "--model",
            f"scripted:{script}",
            "--allow-all-tools",
            "--output-format",
            "json",
        ]
    )
    assert code == 0
    out, err = capsys.readouterr()
    [log] = list((loopdeck_home / "session-state").glob("*/events.jsonl"))
    recorded = log.read_text()
    results = [
        json.loads(line)["data"]
        for line in recorded.splitlines()
        if '"tool.execution_complete"' in line
    ]
    assert len(results) == len(commands) + 1
    # The commands ran: env listed the plain variables; the passed-through one was
    # there for the command and masked on its way out; the file's keys were masked.
    assert "PLAIN_SETTING=visible-value" in results[0]["result"]["content"]
    assert "service: ***" in results[3]["result"]["content"]
    assert "OPENAI_API_KEY=***" in results[4]["result"]["content"]
    assert "ANTHROPIC_API_KEY=***" in results[5]["error"]["message"]
    assert "OPENAI_API_KEY=***" in results[6]["result"]["content"]  # the view tool too
    assert "MY_SERVICE_TOKEN=***" in results[0]["result"]["content"]  # included, masked
    assert "OPENAI_API_KEY" not in results[0]["result"]["content"]  # dropped
    assert "DB_PASSWORD" not in results[1]["result"]["content"]

    code = main(["export", log.parent.name, "--format", "html", "-o", str(tmp_path / "s.html")])
    assert code == 0
    code = main(["export", log.parent.name])
    assert code == 0
    exported_md, export_err = capsys.readouterr()
    assert "OPENAI_API_KEY=***" in exported_md
    logs = "".join(p.read_text() for p in loopdeck_home.rglob("*.log"))
    places = {
        "events.jsonl": recorded,
        "stdout": out,
        "stderr": err + export_err,
        "markdown export": exported_md,
        "html export": (tmp_path / "s.html").read_text(),
        "logs": logs,
    }
    for where, text in places.items():
        for name, value in SECRETS.items():
            assert value not in text, f"{name}'s value is in {where}"
