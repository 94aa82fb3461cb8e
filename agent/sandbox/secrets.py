"""Secrets stay out: of the shell's environment, and of everything loopdeck records.

A variable is secret when its name contains KEY, SECRET, TOKEN or PASSWORD (any
case) or matches a pattern in config.toml's ``[shell_env] exclude``; ``include``
passes a secret-looking variable through to commands anyway. Whatever their
name-based fate in the shell, the values of secret variables in loopdeck's own
environment are masked in tool results before they become events: the log, the
screen, ``-p``'s output, exports and the model all read events.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent.events.schema import EventData, ToolExecutionCompleteData, ToolExecutionPartialResultData

SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD")
MASK = "***"
# Short values ("1", "true") are no secrets, and masking them would shred output.
MIN_SECRET_LENGTH = 8


@dataclass(frozen=True, slots=True)
class EnvFilter:
    """Which variables a shell command inherits. Patterns are globs, any case."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def is_secret(self, name: str) -> bool:
        upper = name.upper()
        return any(word in upper for word in SECRET_WORDS) or _matches(upper, self.exclude)

    def drops(self, name: str) -> bool:
        return self.is_secret(name) and not _matches(name.upper(), self.include)

    def child_env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {name: value for name, value in env.items() if not self.drops(name)}

    def secret_values(self, env: Mapping[str, str]) -> list[str]:
        return [
            value
            for name, value in env.items()
            if self.is_secret(name) and len(value.strip()) >= MIN_SECRET_LENGTH
        ]


def _matches(upper_name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(upper_name, pattern.upper()) for pattern in patterns)


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***``, longest first (one may hold another)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class SecretMasker:
    """Masks known secret values in what tools return, before it becomes an event."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    @classmethod
    def from_env(cls, env: Mapping[str, str], env_filter: EnvFilter | None = None) -> SecretMasker:
        return cls((env_filter or EnvFilter()).secret_values(env))

    def text(self, text: str) -> str:
        return mask(text, self.secrets) if self.secrets else text

    def event_data(self, data: EventData) -> EventData:
        """Tool output, masked; every other event as it is."""
        if not self.secrets:
            return data
        match data:
            case ToolExecutionPartialResultData(partial_output=output):
                masked = self.text(output)
                if masked != output:
                    return data.model_copy(update={"partial_output": masked})
            case ToolExecutionCompleteData(result=result, error=error):
                update: dict[str, object] = {}
                if result is not None:
                    content = self.text(result.content)
                    detailed = (
                        None
                        if result.detailed_content is None
                        else self.text(result.detailed_content)
                    )
                    if content != result.content or detailed != result.detailed_content:
                        update["result"] = result.model_copy(
                            update={"content": content, "detailed_content": detailed}
                        )
                if error is not None:
                    message = self.text(error.message)
                    if message != error.message:
                        update["error"] = error.model_copy(update={"message": message})
                if update:
                    return data.model_copy(update=update)
            case _:
                pass
        return data
