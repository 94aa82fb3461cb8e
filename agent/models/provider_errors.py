"""From whatever litellm raised to a :class:`ProviderError` that says what happened.

litellm's exception classes do not say what happened: a missing API key can
arrive as ``InternalServerError`` (status 500), a refused connection as
``InternalServerError`` ("Cannot connect to host …") or ``APIConnectionError``.
So the class, the HTTP status and the message text are read together, in an
order where the most specific fact wins. Only what a second try can fix is
retryable: rate limits, 5xx, timeouts and connections that failed or dropped.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agent.models.base import ProviderError
from agent.models.select import provider_key_vars
from agent.sandbox.secrets import mask


@dataclass(frozen=True, slots=True)
class CallContext:
    """What the message needs to say where the call went and what to change."""

    model: str
    api_base: str | None = None
    connect_timeout: float | None = None
    idle_timeout: float | None = None
    # "request": waiting for the response to start; "stream": reading its chunks.
    phase: str = "request"


def provider_error_from(
    exc: BaseException,
    *,
    litellm: ModuleType,
    model: str,
    api_base: str | None = None,
    secrets: Iterable[str] = (),
    connect_timeout: float | None = None,
    idle_timeout: float | None = None,
    phase: str = "request",
) -> ProviderError:
    """Map a litellm (or stray) exception to a :class:`ProviderError`."""
    ctx = CallContext(model, api_base, connect_timeout, idle_timeout, phase)
    detail = clean_detail(str(exc))
    error_type = _classify(exc, litellm, detail)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    summary = _summary(error_type, exc, litellm, ctx, status, detail)
    if (
        error_type in ("connection", "timeout")
        or _missing_key(detail)
        or _NO_PROVIDER.search(detail)
    ):
        # No HTTP answer came back: litellm's 500 / 408 would be made up.
        status = None
    # The summary already says all a timeout, a missing key or prefix has to say.
    quiet = error_type == "timeout" or _missing_key(detail) or bool(_NO_PROVIDER.search(detail))
    message = summary + (f" Details: {detail}" if detail and not quiet else "")
    return ProviderError(
        error_type,
        redact(message, secrets),
        status_code=status,
        retry_after=retry_after(exc) if error_type in ("rate_limit", "server") else None,
    )


def timeout_error(ctx: CallContext) -> ProviderError:
    """Our own deadline passed (no response, or the stream went quiet)."""
    return ProviderError("timeout", _timeout_summary(ctx))


# --- what happened -------------------------------------------------------------

_MISSING_KEY = re.compile(
    r"api_key client option must be set|missing credentials|missing [\w ]{0,30}api[ _-]?key"
    r"|no api[ _-]?key (?:provided|found|set|was provided)|api[ _-]?key (?:is )?required"
    r"|(?:please )?set (?:the )?`?[A-Z_]*API_KEY`? (?:or|environment)",
    re.IGNORECASE,
)
_BAD_KEY = re.compile(
    r"(?:incorrect|invalid|bad) (?:api[ _-]?key|x-api-key|authentication|bearer)"
    r"|invalid_api_key|authentication_error|unauthori[sz]ed",
    re.IGNORECASE,
)
_CONTEXT = re.compile(
    r"context (?:length|window|size)|maximum context|prompt is too long|too many tokens"
    r"|exceeds the available context",
    re.IGNORECASE,
)
_NOT_FOUND = re.compile(
    r"model[ _'\"`\w./:-]{0,80}(?:not found|does not exist|not exist)|model_not_found"
    r"|unknown model|no such model|not a valid model",
    re.IGNORECASE,
)
# litellm could not tell which API the model string speaks (no provider/ prefix).
_NO_PROVIDER = re.compile(r"LLM Provider NOT provided", re.IGNORECASE)
# The body ended cleanly but the reply never said it was finished.
_ENDED_EARLY = re.compile(r"stream ended before a finish_reason", re.IGNORECASE)
_CONNECTION = re.compile(
    r"connection error|cannot connect to host|connection refused|connect call failed"
    r"|name or service not known|nodename nor servname|temporary failure in name resolution"
    r"|getaddrinfo|server disconnected|peer closed connection|incomplete chunked read"
    r"|connection reset|connection aborted|remoteprotocolerror|connecterror"
    r"|clientconnectorerror|clientpayloaderror|transferencodingerror"
    r"|response payload is not completed"
    r"|network is unreachable|no route to host|broken pipe",
    re.IGNORECASE,
)


# How the error for a missing API key starts: no request left this process (a session
# that ended with it never started, see agent.session).
NO_KEY = "No API key for"


def _missing_key(detail: str) -> bool:
    return bool(_MISSING_KEY.search(detail))


def ended_early(exc: BaseException) -> bool:
    """The stream closed cleanly before the reply said it was finished."""
    return bool(_ENDED_EARLY.search(str(exc)))


def _classify(exc: BaseException, litellm: ModuleType, detail: str) -> str:
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if _missing_key(detail):
        return "auth"
    if _NO_PROVIDER.search(detail):
        return "bad_request"
    if isinstance(exc, litellm.ContextWindowExceededError) or _CONTEXT.search(detail):
        return "context_limit"
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return "rate_limit"
    # Timeout is an APIConnectionError subclass, so it goes first.
    if isinstance(exc, (litellm.Timeout, TimeoutError)) or status == 408:
        return "timeout"
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
        return "auth"
    if status in (401, 403) or (status is not None and status < 500 and _BAD_KEY.search(detail)):
        return "auth"
    if isinstance(exc, litellm.NotFoundError) or status == 404 or _NOT_FOUND.search(detail):
        return "bad_request"
    # Before the 5xx classes: litellm reports a refused connection as a 500.
    if _CONNECTION.search(detail) or _ENDED_EARLY.search(detail):
        return "connection"
    server_classes = (
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.APIConnectionError,
    )
    if isinstance(exc, server_classes) or (status is not None and status >= 500):
        return "server"
    if isinstance(exc, litellm.BadRequestError) or status is not None:
        return "bad_request"
    # Anything else broke inside the provider path (a malformed stream, a
    # library bug): the request itself was fine, so another try may work.
    return "server"


def _summary(
    error_type: str,
    exc: BaseException,
    litellm: ModuleType,
    ctx: CallContext,
    status: int | None,
    detail: str,
) -> str:
    model = ctx.model
    where = _where(ctx)
    match error_type:
        case "auth" if _missing_key(detail):
            return f"{NO_KEY} {model}: set {_key_hint(model)} in the environment."
        case "auth" if isinstance(exc, litellm.PermissionDeniedError) or status == 403:
            return f"{where} denied access for {model} (403): check the key's permissions."
        case "auth":
            return f"{where} rejected the API key for {model} (401): check {_key_hint(model)}."
        case "context_limit":
            return f"The conversation no longer fits in {model}'s context window."
        case "rate_limit":
            return f"Rate limited by {_lower(where)} ({model})."
        case "timeout":
            return _timeout_summary(ctx)
        case "connection" if _ENDED_EARLY.search(detail):
            return (
                f"The reply from {_lower(where)} ended before it was complete "
                f"(no finish_reason) ({model})."
            )
        case "connection" if ctx.phase == "stream":
            return (
                f"The connection to {_lower(where)} dropped in the middle of the reply ({model})."
            )
        case "connection":
            check = (
                "Is the server running, and is --api-base (or api_base in config.toml) right?"
                if ctx.api_base
                else "Check the network connection."
            )
            return f"Could not reach {_lower(where)} ({model}). {check}"
        case "bad_request" if _NO_PROVIDER.search(detail):
            return (
                f"loopdeck cannot tell which API {model} speaks: write it with its provider, "
                f"e.g. openai/{model} for an OpenAI-compatible server, ollama/{model} for Ollama."
            )
        case "bad_request" if (
            isinstance(exc, litellm.NotFoundError) or status == 404 or _NOT_FOUND.search(detail)
        ):
            path_hint = (
                " and --api-base (OpenAI-compatible servers usually serve under /v1)"
                if ctx.api_base
                else ""
            )
            return (
                f"{where} does not know the model {model} or the API path (not found): "
                f"check --model{path_hint}."
            )
        case "bad_request":
            return f"{where} rejected the request ({model})."
        case _:
            code = f" ({status})" if status is not None else ""
            return f"{where} had a server error{code} ({model})."


IDLE_TIMEOUT_ADVICE = " A slow server may need a longer --idle-timeout."


def _timeout_summary(ctx: CallContext) -> str:
    where = _lower(_where(ctx))
    if ctx.phase == "stream":
        what = f"The reply from {where} stalled ({ctx.model})"
    else:
        what = f"No response from {where} ({ctx.model})"
    limits = []
    if ctx.idle_timeout is not None:
        limits.append(f"no data for {ctx.idle_timeout:g} s")
    if ctx.connect_timeout is not None and ctx.phase != "stream":
        limits.append(f"connect timeout {ctx.connect_timeout:g} s")
    limit = f": {', '.join(limits)}" if limits else ""
    return f"{what}{limit}.{IDLE_TIMEOUT_ADVICE}"


def _where(ctx: CallContext) -> str:
    if ctx.api_base:
        return f"The server at {strip_credentials(ctx.api_base)}"
    provider = ctx.model.split("/", 1)[0] if "/" in ctx.model else "model"
    return f"The {provider} API"


def _lower(where: str) -> str:
    return where[:1].lower() + where[1:]


def _key_hint(model: str) -> str:
    names = provider_key_vars(model)
    if names:
        return " or ".join(names)
    if "/" in model:
        return f"the provider's API key (e.g. {model.split('/', 1)[0].upper()}_API_KEY)"
    return "the provider's API key"


def strip_credentials(url: str) -> str:
    """``url`` without ``user:password@`` and without a query string (may hold a key)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return _URL_USERINFO.sub("", url)
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


# --- tidying the detail ------------------------------------------------------------

_LITELLM_PREFIX = re.compile(r"^(?:\s*(?:litellm\.\w+|\w+Error|Timeout Error):\s*)+")
_SSL_NOISE = re.compile(r"\s*ssl:<ssl\.SSLContext object at 0x[0-9a-f]+>", re.IGNORECASE)
_MAX_DETAIL = 600


def clean_detail(text: str) -> str:
    # litellm stacks "litellm.XError: XError: OpenAIException - …" prefixes and
    # may append a traceback; the summary already says what kind of error it is.
    text = text.split("Traceback (most recent call last)", 1)[0]
    # litellm's mid-stream errors repeat themselves after "Original exception:".
    text = text.split(" Original exception:", 1)[0]
    detail = _LITELLM_PREFIX.sub("", text).strip()
    detail = re.sub(r"^\w+Exception - ", "", detail)
    detail = _SSL_NOISE.sub("", detail).strip()
    if len(detail) > _MAX_DETAIL:
        detail = detail[:_MAX_DETAIL].rstrip() + "…"
    return detail


# --- secrets ------------------------------------------------------------------------

# Well-known key shapes, redacted even when we don't know the exact value.
_KEY_PATTERNS = re.compile(
    r"\b(?:sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{8,}|gsk_[A-Za-z0-9]{8,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|xai-[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,})"
)
_URL_USERINFO = re.compile(r"(?<=//)[^/@\s:]+:[^/@\s]+@")
_SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET)$", re.IGNORECASE)


def known_secrets(extra: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """Values that must never appear in an error message: keys we were given."""
    values = [v for k, v in extra.items() if _SECRET_NAME.search(k) and isinstance(v, str)]
    values += [v for k, v in env.items() if _SECRET_NAME.search(k)]
    # Short values ("1", "true") would shred the message and are no secrets.
    return [v for v in values if len(v) >= 8]


def redact(text: str, secrets: Iterable[str]) -> str:
    text = mask(text, secrets)
    text = _KEY_PATTERNS.sub("***", text)
    return _URL_USERINFO.sub("***@", text)


# --- Retry-After ----------------------------------------------------------------------


def retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait, from Retry-After(-Ms) headers."""
    response = getattr(exc, "response", None)
    sources = [getattr(exc, "headers", None), getattr(response, "headers", None)]
    for headers in sources:
        if not headers:
            continue
        lowered = {str(k).lower(): str(v) for k, v in headers.items()}
        if "retry-after-ms" in lowered:
            try:
                return max(float(lowered["retry-after-ms"]) / 1000.0, 0.0)
            except ValueError:
                pass
        if "retry-after" in lowered:
            return _parse_retry_after(lowered["retry-after"])
    return None


def _parse_retry_after(value: str) -> float | None:
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    # The header may also be an HTTP date.
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
