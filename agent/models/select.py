"""Which model to talk to: flag, environment, config file, or an API key found.

Nothing here imports litellm: choosing a model happens before the first frame.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.models.settings import ApiBaseError, check_api_base

CONFIG_FILE_NAME = "config.toml"

# The first of these whose key is set picks the model; the order favours
# providers whose default model is the strongest coding agent.
PROVIDER_DEFAULTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("ANTHROPIC_API_KEY",), "anthropic/claude-sonnet-4-5"),
    (("OPENAI_API_KEY",), "openai/gpt-5"),
    (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini/gemini-2.5-pro"),
    (("OPENROUTER_API_KEY",), "openrouter/anthropic/claude-sonnet-4.5"),
    (("GROQ_API_KEY",), "groq/llama-3.3-70b-versatile"),
    (("MISTRAL_API_KEY",), "mistral/mistral-large-latest"),
    (("DEEPSEEK_API_KEY",), "deepseek/deepseek-chat"),
    (("XAI_API_KEY",), "xai/grok-4"),
)

# Where litellm looks for the key of providers not in PROVIDER_DEFAULTS.
_OTHER_KEY_VARS: dict[str, tuple[str, ...]] = {
    "text-completion-openai": ("OPENAI_API_KEY",),
    "azure": ("AZURE_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "hosted_vllm": ("HOSTED_VLLM_API_KEY",),
    "lm_studio": ("LM_STUDIO_API_KEY",),
}


# The provider LiteLLM picks for a bare model name (no ``provider/``), by the name's
# start: the families LiteLLM's own model list maps this way. Read without importing it.
_BARE_NAME_PROVIDERS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-", "chatgpt-", "o1", "o3", "o4", "text-davinci", "davinci", "babbage"), "openai"),
    (("claude-",), "anthropic"),
    (("gemini-",), "gemini"),
    (("grok-",), "xai"),
    (("mistral-", "codestral", "magistral", "open-mistral"), "mistral"),
    (("deepseek-",), "deepseek"),
)


def provider_key_vars(model: str) -> tuple[str, ...]:
    """The environment variables holding the API key for ``model``'s provider (from
    its ``provider/`` prefix, or the family of a bare name such as ``gpt-4o``); empty
    when the provider is not known."""
    if "/" in model:
        prefix = model.split("/", 1)[0]
    else:
        bare = model.lower()
        found = (p for starts, p in _BARE_NAME_PROVIDERS if bare.startswith(starts))
        prefix = next(found, "")
        if not prefix:
            return ()
    for keys, default in PROVIDER_DEFAULTS:
        if default.split("/", 1)[0] == prefix:
            return keys
    return _OTHER_KEY_VARS.get(prefix, ())


NO_MODEL_HELP = """\
No model is configured yet.

loopdeck speaks to models through LiteLLM, so any provider it supports works.
Set a model in one of these ways (the first one found wins):

  1. On the command line:
       loopdeck --model anthropic/claude-sonnet-4-5

  2. In the environment:
       export LOOPDECK_MODEL=openai/gpt-5

  3. In ~/.config/loopdeck/config.toml (or $XDG_CONFIG_HOME/loopdeck/config.toml):
       model = "ollama/qwen2.5-coder"
       api_base = "http://localhost:11434"   # optional, e.g. for a local server

  4. Just export an API key, and loopdeck picks a good default model:
       export ANTHROPIC_API_KEY=...
     (also OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY,
      MISTRAL_API_KEY, DEEPSEEK_API_KEY or XAI_API_KEY)

Just want to look around? The built-in demo runs offline, no key needed:

  loopdeck --model scripted:demo
"""


class ConfigError(Exception):
    """The config file cannot be used; the message names the file and why."""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    model: str
    source: str  # where the choice came from, shown to the user
    api_base: str | None = None


def user_config_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/loopdeck``, else ``~/.config/loopdeck``."""
    xdg = env.get("XDG_CONFIG_HOME", "")
    # The XDG spec says a relative value is invalid and must be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "loopdeck"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".config" / "loopdeck"


def choose_model(
    cli_model: str | None, env: Mapping[str, str], config_dir: Path
) -> ModelChoice | None:
    """The model to use, by precedence; None when nothing configures one.

    Raises :class:`ConfigError` for a config file that exists but is broken.
    """
    if cli_model and cli_model.strip():
        return ModelChoice(cli_model.strip(), "--model")
    env_model = env.get("LOOPDECK_MODEL", "").strip()
    if env_model:
        return ModelChoice(env_model, "LOOPDECK_MODEL")
    from_config = _model_from_config(config_dir / CONFIG_FILE_NAME)
    if from_config is not None:
        return from_config
    for keys, model in PROVIDER_DEFAULTS:
        for key in keys:
            if env.get(key, "").strip():
                return ModelChoice(model, f"{key} in the environment")
    return None


def _model_from_config(path: Path) -> ModelChoice | None:
    config = read_config_file(path)
    if config.model is None:
        # A config with other settings but no model defers to the API keys.
        return None
    return ModelChoice(config.model, f"config file {path}", api_base=config.api_base)


@dataclass(frozen=True, slots=True)
class ConfigValues:
    """What config.toml sets; None for what it leaves out."""

    model: str | None = None
    api_base: str | None = None
    connect_timeout: float | None = None
    idle_timeout: float | None = None
    max_retries: int | None = None
    retry_base_delay: float | None = None
    # The shell's sandbox ("read-only" | "workspace-write" | "off") and its network.
    sandbox: str | None = None
    sandbox_network: bool | None = None
    # Paths no command and no tool may read (None: the default list, see
    # agent.sandbox.policy.default_hidden).
    sandbox_hidden: tuple[str, ...] | None = None
    # [shell_env]: glob patterns of variable names passed to / kept from commands.
    shell_env_include: tuple[str, ...] = ()
    shell_env_exclude: tuple[str, ...] = ()
    # The model's context window in tokens, for a model litellm's map does not know.
    context_window: int | None = None
    # Tokens kept for (and asked of) each reply; default: the model's output limit in
    # litellm's map, else 4096 (at most a quarter) of a context_window given here.
    max_output_tokens: int | None = None
    # [infinite_sessions]: compaction, as the Copilot SDK names its settings.
    infinite_sessions: dict[str, object] | None = None
    # Summaries while the turn goes on: "on", "off", or "auto" (off with an api_base).
    background_compaction: str | None = None
    # Tool calls read from the reply's text: "on", "off", or "auto" (on with an api_base).
    text_tool_calls: str | None = None
    # The system prompt: "full", "compact", or "auto" (compact for a small window).
    system_prompt: str | None = None


SANDBOX_CHOICES = ("read-only", "workspace-write", "off")
BACKGROUND_COMPACTION_CHOICES = ("auto", "on", "off")
TEXT_TOOL_CALLS_CHOICES = ("auto", "on", "off")
SYSTEM_PROMPT_CHOICES = ("auto", "compact", "full")


def read_config(config_dir: Path) -> ConfigValues:
    """The config file in ``config_dir``; empty values if there is none."""
    return read_config_file(config_dir / CONFIG_FILE_NAME)


def read_config_file(path: Path) -> ConfigValues:
    """Raises :class:`ConfigError` (one line, naming the file) for a broken file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ConfigValues()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}") from exc

    api_base = _optional_string(data, "api_base", path)
    if api_base is not None:
        try:
            api_base = check_api_base(api_base)
        except ApiBaseError as exc:
            raise ConfigError(f"Config file {path}: api_base {exc}") from None
    return ConfigValues(
        model=_optional_string(data, "model", path),
        api_base=api_base,
        connect_timeout=_optional_number(data, "connect_timeout", path, positive=True),
        idle_timeout=_optional_number(data, "idle_timeout", path, positive=True),
        max_retries=_optional_count(data, "max_retries", path),
        retry_base_delay=_optional_number(data, "retry_base_delay", path, positive=False),
        sandbox=_optional_choice(data, "sandbox", SANDBOX_CHOICES, path),
        sandbox_network=_optional_bool(data, "sandbox_network", path),
        sandbox_hidden=_optional_paths(data, "sandbox_hidden", path),
        shell_env_include=_shell_env(data, "include", path),
        shell_env_exclude=_shell_env(data, "exclude", path),
        context_window=_optional_count(data, "context_window", path) or None,
        max_output_tokens=_optional_count(data, "max_output_tokens", path) or None,
        infinite_sessions=_infinite_sessions(data, path),
        background_compaction=_optional_choice(
            data, "background_compaction", BACKGROUND_COMPACTION_CHOICES, path
        ),
        text_tool_calls=_optional_choice(data, "text_tool_calls", TEXT_TOOL_CALLS_CHOICES, path),
        system_prompt=_optional_choice(data, "system_prompt", SYSTEM_PROMPT_CHOICES, path),
    )


def _infinite_sessions(data: Mapping[str, object], path: Path) -> dict[str, object] | None:
    table = data.get("infinite_sessions")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(
            f"Config file {path}: [infinite_sessions] must be a table, like\n"
            "[infinite_sessions]\nbackground_compaction_threshold = 0.8"
        )
    known = {"enabled", "background_compaction_threshold", "buffer_exhaustion_threshold"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"Config file {path}: [infinite_sessions] has no setting {unknown[0]!r} "
            f"(known: {', '.join(sorted(known))})"
        )
    for key in ("background_compaction_threshold", "buffer_exhaustion_threshold"):
        value = table.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1
        ):
            raise ConfigError(
                f"Config file {path}: [infinite_sessions] {key} must be a fraction of the "
                "context window, more than 0 and at most 1, like 0.8"
            )
    if "enabled" in table and not isinstance(table["enabled"], bool):
        raise ConfigError(f"Config file {path}: [infinite_sessions] enabled must be true or false")
    return dict(table)


def _optional_choice(
    data: Mapping[str, object], key: str, choices: tuple[str, ...], path: Path
) -> str | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, str) or value.strip() not in choices:
        options = " | ".join(f'"{c}"' for c in choices)
        raise ConfigError(
            f'Config file {path}: "{key}" must be one of {options}, like {key} = "{choices[1]}"'
        )
    return value.strip()


def _optional_bool(data: Mapping[str, object], key: str, path: Path) -> bool | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, bool):
        raise ConfigError(f'Config file {path}: "{key}" must be true or false, like {key} = false')
    return value


def _optional_paths(data: Mapping[str, object], key: str, path: Path) -> tuple[str, ...] | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(
            f'Config file {path}: "{key}" must be a list of paths, like '
            f'{key} = ["~/.ssh", "~/.aws"] (an empty list hides nothing)'
        )
    return tuple(v.strip() for v in value)


def _shell_env(data: Mapping[str, object], key: str, path: Path) -> tuple[str, ...]:
    table = data.get("shell_env", {})
    if not isinstance(table, dict):
        raise ConfigError(
            f'Config file {path}: "shell_env" must be a table: [shell_env] then include = [...]'
        )
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(
            f'Config file {path}: "shell_env.{key}" must be a list of variable names or '
            f'patterns, like {key} = ["GITHUB_TOKEN", "AWS_*"]'
        )
    return tuple(v.strip() for v in value)


def _optional_string(data: Mapping[str, object], key: str, path: Path) -> str | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f'Config file {path}: "{key}" must be a non-empty string, '
            f'like {key} = "{_EXAMPLES[key]}"'
        )
    return value.strip()


def _optional_number(
    data: Mapping[str, object], key: str, path: Path, *, positive: bool
) -> float | None:
    if key not in data:
        return None
    value = data[key]
    number = None if isinstance(value, bool) or not isinstance(value, int | float) else value
    if number is None or not math.isfinite(number) or number < 0 or (positive and number == 0):
        bound = "more than 0" if positive else "0 or more"
        raise ConfigError(
            f'Config file {path}: "{key}" must be a number of seconds, {bound}, '
            f"like {key} = {_EXAMPLES[key]}"
        )
    return float(number)


def _optional_count(data: Mapping[str, object], key: str, path: Path) -> int | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(
            f'Config file {path}: "{key}" must be a whole number, 0 or more, '
            f"like {key} = {_EXAMPLES[key]}"
        )
    return value


_EXAMPLES = {
    "model": "anthropic/claude-sonnet-4-5",
    "api_base": "http://localhost:11434",
    "connect_timeout": "10",
    "idle_timeout": "60",
    "max_retries": "3",
    "retry_base_delay": "1.0",
    "context_window": "32768",
    "max_output_tokens": "4096",
}
