"""What the user can do next about an error, by its type or HTTP status."""

from __future__ import annotations

_HINTS: dict[str, str] = {
    "auth": "check your API key (or the provider login) and send again",
    "rate_limit": "wait and retry, or switch model with --model",
    "context_limit": "start a new session or shorten the request",
    "server": "the provider had a problem; send again to retry",
    "timeout": "the server went quiet; send again, or allow a slow one more with --idle-timeout",
    "bad_request": "the provider rejected the request; rephrase it or switch model with --model",
    "connection": "check that the model server is running and its URL is right, then send again",
    "empty_response": "the model sent back nothing; send again, or switch model with --model",
}
_ALIASES: dict[str, str] = {
    "authentication": "auth",
    "unauthorized": "auth",
    "permission_denied": "auth",
    "rate_limited": "rate_limit",
    "quota": "rate_limit",
    "context_length": "context_limit",
    "context_window": "context_limit",
    "server_error": "server",
    "overloaded": "server",
    "network": "connection",
}
_DEFAULT_HINT = "send again to retry; if it keeps failing, switch model with --model"


def error_hint(error_type: str, status_code: int | None = None) -> str:
    """What the user can do next about an error of ``error_type``.

    Unknown types fall back on the HTTP status code, then on a generic hint.
    """
    key = error_type.strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key in _HINTS:
        return _HINTS[key]
    if status_code in (401, 403):
        return _HINTS["auth"]
    if status_code == 429:
        return _HINTS["rate_limit"]
    if status_code == 413:
        return _HINTS["context_limit"]
    if status_code is not None and status_code >= 500:
        return _HINTS["server"]
    return _DEFAULT_HINT
