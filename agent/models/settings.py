"""How loopdeck talks to a model server: base URL, timeouts, retry backoff.

The values come from flags (``--api-base``, ``--connect-timeout``,
``--idle-timeout``) over ``config.toml`` (``api_base``, ``connect_timeout``,
``idle_timeout``, ``max_retries``, ``retry_base_delay``) over the defaults
below. Nothing here imports litellm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agent.models.base import RetryPolicy

# Seconds to open the TCP (and TLS) connection. A server that is up answers in
# milliseconds; ten seconds covers a slow network without leaving a dead
# address hanging.
DEFAULT_CONNECT_TIMEOUT = 10.0
# Seconds with no data from the server, waiting for the reply to start or for
# the next chunk. A small local server evaluating a 2k-token prompt on two
# cores needs several seconds before its first token; a reasoning model that
# thinks before it streams may need more (raise it with --idle-timeout).
DEFAULT_IDLE_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """Everything about reaching the model that is not the model's name."""

    api_base: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)


def worst_case_seconds(connect_timeout: float, idle_timeout: float, policy: RetryPolicy) -> float:
    """Longest one model call can take against a server that never answers.

    Every attempt may wait ``connect_timeout`` to connect and then
    ``idle_timeout`` for the first byte; between attempts the backoff sleeps.
    """
    attempts = policy.max_retries + 1
    backoff = sum(policy.delay(n) for n in range(policy.max_retries))
    return attempts * (connect_timeout + idle_timeout) + backoff


class ApiBaseError(ValueError):
    """An api_base that is not a URL; the message says what to write instead."""


def check_api_base(value: str) -> str:
    """``value`` if it is an http(s) URL with a host; else :class:`ApiBaseError`."""
    text = value.strip()
    try:
        parts = urlsplit(text)
        has_host = bool(parts.hostname)
    except ValueError:
        parts, has_host = None, False
    if parts is not None and parts.scheme in ("http", "https") and has_host:
        return text
    if parts is not None and parts.scheme in ("http", "https"):
        raise ApiBaseError(f"{text!r} has no host; write e.g. http://127.0.0.1:8080/v1")
    bare = text.split("://", 1)[-1].strip("/") or "127.0.0.1:8080"
    suggestion = f"http://{bare}" + ("" if "/" in bare else "/v1")
    raise ApiBaseError(
        f"{text!r} is not a URL; write it with http:// or https://, e.g. {suggestion}"
    )
