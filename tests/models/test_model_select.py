"""choose_model precedence, config parsing, and the help text."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.models.select import (
    NO_MODEL_HELP,
    PROVIDER_DEFAULTS,
    ConfigError,
    ModelChoice,
    choose_model,
    user_config_dir,
)


def write_config(config_dir: Path, text: str) -> Path:
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_nothing_configured(tmp_path: Path) -> None:
    assert choose_model(None, {}, tmp_path / "missing") is None


def test_cli_flag_wins_over_everything(tmp_path: Path) -> None:
    write_config(tmp_path, 'model = "ollama/qwen"\n')
    env = {"LOOPDECK_MODEL": "openai/gpt-4o", "ANTHROPIC_API_KEY": "k"}
    assert choose_model("xai/grok-4", env, tmp_path) == ModelChoice("xai/grok-4", "--model")


def test_env_variable_beats_config_and_keys(tmp_path: Path) -> None:
    write_config(tmp_path, 'model = "ollama/qwen"\n')
    env = {"LOOPDECK_MODEL": " openai/gpt-4o ", "ANTHROPIC_API_KEY": "k"}
    assert choose_model(None, env, tmp_path) == ModelChoice("openai/gpt-4o", "LOOPDECK_MODEL")


def test_blank_values_count_as_unset(tmp_path: Path) -> None:
    env = {"LOOPDECK_MODEL": "  ", "OPENAI_API_KEY": ""}
    assert choose_model("", env, tmp_path) is None


def test_config_file_beats_keys(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, 'model = "ollama/qwen2.5-coder"\napi_base = "http://localhost:11434"\n'
    )
    choice = choose_model(None, {"OPENAI_API_KEY": "k"}, tmp_path)
    assert choice == ModelChoice(
        "ollama/qwen2.5-coder", f"config file {path}", api_base="http://localhost:11434"
    )


def test_config_without_model_defers_to_keys(tmp_path: Path) -> None:
    write_config(tmp_path, "# nothing chosen yet\n")
    choice = choose_model(None, {"OPENAI_API_KEY": "k"}, tmp_path)
    assert choice == ModelChoice("openai/gpt-5", "OPENAI_API_KEY in the environment")


@pytest.mark.parametrize(
    ("key", "model"),
    [(key, model) for keys, model in PROVIDER_DEFAULTS for key in keys],
)
def test_each_provider_key_gives_its_default(tmp_path: Path, key: str, model: str) -> None:
    assert choose_model(None, {key: "secret"}, tmp_path) == ModelChoice(
        model, f"{key} in the environment"
    )


def test_provider_key_order(tmp_path: Path) -> None:
    every_key = {key: "secret" for keys, _ in PROVIDER_DEFAULTS for key in keys}
    choice = choose_model(None, every_key, tmp_path)
    assert choice is not None and choice.model == "anthropic/claude-sonnet-4-5"
    del every_key["ANTHROPIC_API_KEY"]
    choice = choose_model(None, every_key, tmp_path)
    assert choice is not None and choice.model == "openai/gpt-5"
    choice = choose_model(None, {"XAI_API_KEY": "x", "GROQ_API_KEY": "g"}, tmp_path)
    assert choice is not None and choice.model == "groq/llama-3.3-70b-versatile"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('model = "unterminated\n', "not valid TOML"),
        ("model = 42\n", '"model" must be a non-empty string'),
        ('model = ""\n', '"model" must be a non-empty string'),
        ('model = "a/b"\napi_base = ["x"]\n', '"api_base" must be a non-empty string'),
    ],
)
def test_malformed_config_names_the_file(tmp_path: Path, text: str, why: str) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        choose_model(None, {"OPENAI_API_KEY": "k"}, tmp_path)
    assert str(path) in str(caught.value)
    assert why in str(caught.value)


def test_unreadable_config_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()  # a directory where the file should be
    with pytest.raises(ConfigError, match="Cannot read config file"):
        choose_model(None, {}, tmp_path)


def test_config_that_is_not_utf8(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "config.toml").write_bytes(b'model = "\xff\xfe"\n')
    with pytest.raises(ConfigError, match=r"config\.toml"):
        choose_model(None, {}, tmp_path)


def test_cli_and_env_skip_a_broken_config(tmp_path: Path) -> None:
    # The file is read only when it is needed, so --model still works.
    write_config(tmp_path, "not toml at all [[[")
    assert choose_model("openai/gpt-4o", {}, tmp_path) is not None
    assert choose_model(None, {"LOOPDECK_MODEL": "openai/gpt-4o"}, tmp_path) is not None


def test_user_config_dir(tmp_path: Path) -> None:
    xdg = str(tmp_path / "xdg")
    home = str(tmp_path / "home")
    assert user_config_dir({"XDG_CONFIG_HOME": xdg, "HOME": home}) == Path(xdg) / "loopdeck"
    assert user_config_dir({"HOME": home}) == Path(home) / ".config" / "loopdeck"
    # A relative XDG_CONFIG_HOME is invalid per the spec and ignored.
    assert user_config_dir({"XDG_CONFIG_HOME": "rel", "HOME": home}) == (
        Path(home) / ".config" / "loopdeck"
    )


def test_help_text_explains_every_way() -> None:
    for needle in (
        "--model",
        "LOOPDECK_MODEL",
        "config.toml",
        'model = "',
        "ANTHROPIC_API_KEY",
        "loopdeck --model scripted:demo",
    ):
        assert needle in NO_MODEL_HELP
    assert "Traceback" not in NO_MODEL_HELP
