"""Where the model server is and how long to wait: flags over config.toml over defaults."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from agent.log.store import SessionStore
from agent.models.base import RetryPolicy
from agent.models.litellm_client import PLACEHOLDER_API_KEY, LiteLLMModel
from agent.models.settings import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    ApiBaseError,
    check_api_base,
    worst_case_seconds,
)
from tests.support.cli import run
from tests.support.fake_openai_server import FakeOpenAIServer, empty_body, openai_server, text

__all__ = ["openai_server"]  # the fixture
from app.cli import build_parser
from app.model_setup import SetupError, make_model, open_session, provider_settings
from app.server.methods import Runtime


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A one-turn scripted model; the run ends at once (exit 0) unless stopped first."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"text": "done"}]}), "utf-8")
    return f"scripted:{path}"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    # conftest points XDG_CONFIG_HOME at tmp_path/config.
    folder = tmp_path / "config" / "loopdeck"
    folder.mkdir(parents=True)
    return folder / "config.toml"


# --- api_base needs a scheme -----------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "suggested"),
    [
        ("127.0.0.1:8080", "http://127.0.0.1:8080/v1"),
        ("localhost:11434", "http://localhost:11434/v1"),
        ("localhost:8000/v1", "http://localhost:8000/v1"),
    ],
)
def test_api_base_without_scheme_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], script: str, given: str, suggested: str
) -> None:
    code, _, err = run(capsys, "-p", "hi", "--model", script, "--api-base", given)
    assert code == 2
    assert suggested in err and "--api-base" in err


def test_api_base_check() -> None:
    assert check_api_base(" https://llm.example/v1 ") == "https://llm.example/v1"
    for bad in ("127.0.0.1:8080", "ftp://host/v1", "http://", "localhost"):
        with pytest.raises(ApiBaseError):
            check_api_base(bad)


def test_config_api_base_without_scheme_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], script: str, config_file: Path
) -> None:
    config_file.write_text(f'model = "{script}"\napi_base = "127.0.0.1:8080"\n', "utf-8")
    code, _, err = run(capsys, "-p", "hi")
    assert code == 2
    assert err.count("\n") == 1  # one line, no traceback
    assert "api_base" in err and "http://127.0.0.1:8080/v1" in err and str(config_file) in err


@pytest.mark.parametrize("flag", ["--connect-timeout", "--idle-timeout"])
@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_timeout_flags_must_be_positive_seconds(
    capsys: pytest.CaptureFixture[str], script: str, flag: str, value: str
) -> None:
    code, _, err = run(capsys, "-p", "hi", "--model", script, f"{flag}={value}")
    assert code == 2 and flag in err


@pytest.mark.parametrize(
    "line",
    [
        "idle_timeout = 0",
        "connect_timeout = -2",
        'idle_timeout = "60"',
        "max_retries = -1",
        "max_retries = 1.5",
        "retry_base_delay = -0.5",
        "retry_base_delay = true",
    ],
)
def test_bad_config_settings_are_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], script: str, config_file: Path, line: str
) -> None:
    config_file.write_text(f'model = "{script}"\n{line}\n', "utf-8")
    code, _, err = run(capsys, "-p", "hi")
    assert code == 2
    assert err.count("\n") == 1 and line.split(" ")[0] in err


# --- precedence, and every place a model is made -------------------------------------


def args_of(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_defaults(config_file: Path) -> None:
    settings = provider_settings(args_of())
    assert (settings.connect_timeout, settings.idle_timeout) == (10.0, 60.0)
    assert settings.retry_policy == RetryPolicy()
    assert (DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT) == (10.0, 60.0)
    # The bound the README documents for these defaults.
    assert worst_case_seconds(10.0, 60.0, RetryPolicy()) == 287.0


def test_flags_win_over_config(config_file: Path) -> None:
    config_file.write_text(
        "connect_timeout = 3\nidle_timeout = 120\nmax_retries = 1\nretry_base_delay = 0.25\n",
        "utf-8",
    )
    from_config = provider_settings(args_of())
    assert (from_config.connect_timeout, from_config.idle_timeout) == (3.0, 120.0)
    assert from_config.retry_policy == RetryPolicy(max_retries=1, base_delay=0.25)
    flagged = provider_settings(args_of("--connect-timeout", "1.5", "--idle-timeout", "7"))
    assert (flagged.connect_timeout, flagged.idle_timeout) == (1.5, 7.0)
    assert flagged.retry_policy.max_retries == 1


def test_broken_config_is_a_setup_error(config_file: Path) -> None:
    config_file.write_text("idle_timeout = 0\n", "utf-8")
    with pytest.raises(SetupError, match="idle_timeout"):
        provider_settings(args_of())


def test_make_model_applies_the_settings(config_file: Path) -> None:
    config_file.write_text("max_retries = 0\n", "utf-8")
    settings = provider_settings(args_of("--idle-timeout", "9", "--api-base", "http://h:1/v1"))
    model = make_model("openai/x", None, settings)
    assert isinstance(model, LiteLLMModel)
    assert (model.api_base, model.connect_timeout, model.idle_timeout) == ("http://h:1/v1", 10, 9)
    assert model.retry_policy.max_retries == 0


async def test_the_app_and_headless_sessions_get_the_settings(
    tmp_path: Path, config_file: Path
) -> None:
    # open_session is where both the terminal app and -p make their model.
    config_file.write_text("retry_base_delay = 0.5\n", "utf-8")
    args = args_of("--model", "openai/x", "--idle-timeout", "4", "--api-base", "http://h:1/v1")
    session = await open_session(args, tmp_path)
    try:
        model = session.model
        assert isinstance(model, LiteLLMModel)
        assert (model.api_base, model.idle_timeout) == ("http://h:1/v1", 4.0)
        assert model.retry_policy.base_delay == 0.5
    finally:
        await session.close()


def test_the_sdk_runtime_gets_the_settings(tmp_path: Path, config_file: Path) -> None:
    config_file.write_text("connect_timeout = 2\nmax_retries = 5\n", "utf-8")
    flags = args_of("--idle-timeout", "30")
    runtime = Runtime(cwd=tmp_path, store=SessionStore(tmp_path / "h"), flags=flags)
    for params in ({"model": "openai/x"}, {"model": "openai/x", "provider": {"apiKey": "k"}}):
        model = runtime._model(params, None)
        assert isinstance(model, LiteLLMModel)
        assert (model.connect_timeout, model.idle_timeout) == (2.0, 30.0)
        assert model.retry_policy.max_retries == 5


# --- a local server without a key -----------------------------------------------------


def test_local_server_needs_no_key(
    capsys: pytest.CaptureFixture[str],
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_AUTH_TOKEN")):
            monkeypatch.delenv(name)
    openai_server.script(text("Hello from the local server."))
    argv = ["-p", "hi", "--model", "openai/local", "--api-base", openai_server.base_url]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert out == "Hello from the local server.\n"
    sent = openai_server.requests[-1].header("Authorization")
    assert sent == f"Bearer {PLACEHOLDER_API_KEY}"

    # A real key in the environment is the one sent.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-server-key-1234")
    openai_server.script(text("Again."))
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert openai_server.requests[-1].header("Authorization") == "Bearer sk-local-server-key-1234"


def test_an_empty_reply_exits_1(
    capsys: pytest.CaptureFixture[str],
    openai_server: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-empty-reply")
    openai_server.script(empty_body())
    argv = ["-p", "hi", "--model", "openai/local", "--api-base", openai_server.base_url]
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert out == "" and "error (empty_response)" in err
