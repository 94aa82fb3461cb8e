"""Compact rows for the events around the conversation: the system prompt, skills,
hooks, MCP servers, permissions, compactions, truncations, rewinds, notifications,
auto-model routing and the session's usage summary.

Each event becomes one :class:`InfoRowBlock` (a kind, a one-line title, an optional
body shown on request). Events that continue one another update a single row in
place: a hook's end its start, an MCP server's status changes, a compaction's end
its start, the stream of background-task changes.

Copilot's logs do not always follow the SDK schema to the letter (its
``session.permissions_changed`` carries ``allowAllPermissions`` where the schema
has ``mode``), so the rows are read from the event's wire data, field by field,
and an odd value only makes a plainer title.

Pure Python: no UI imports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from agent.transcript.blocks import InfoRowBlock, InfoState

# Event types drawn as info rows (besides loopdeck's own compaction events).
INFO_TYPES = frozenset(
    {
        "system.message",
        "session.skills_loaded",
        "skill.invoked",
        "hook.start",
        "hook.end",
        "session.mcp_server_status_changed",
        "session.mcp_servers_loaded",
        "session.tools_updated",
        "session.permissions_changed",
        "session.compaction_start",
        "session.compaction_complete",
        "session.snapshot_rewind",
        "session.truncation",
        "session.background_tasks_changed",
        "system.notification",
        "session.auto_mode_resolved",
    }
)

TITLE_WIDTH = 100  # characters of a list (skills, servers) in a title
_TAG = re.compile(r"</?[a-z_]+>")

Data = dict[str, Any]


class InfoRows:
    """Folds info events into rows; remembers the rows later events update."""

    def __init__(self, new_id: Callable[[], int]) -> None:
        self._new_id = new_id
        self._open: dict[tuple[str, str], InfoRowBlock] = {}  # rows a later event updates
        self._system_prompts: dict[str, str] = {}  # role -> the last prompt seen
        self._invoked: str | None = None  # the skill whose skill.invoked came last

    def take_invoked(self, name: str) -> bool:
        """Whether ``name``'s ``skill.invoked`` row was the last skill row (its
        instructions message then adds nothing); forgets it either way."""
        invoked, self._invoked = self._invoked, None
        return invoked == name

    def fold(self, etype: str, data: Data, ts: datetime | None) -> tuple[InfoRowBlock, bool]:
        """The row for this event, and whether it is new (else an updated one)."""
        match etype:
            case "system.message":
                return self._system(data, ts)
            case "session.skills_loaded":
                return self._keyed(("skills", ""), "skills", *_skills(data), ts=ts)
            case "skill.invoked":
                name = _text(data.get("name")) or "?"
                self._invoked = name if "path" in data else None  # the event, not its message
                trigger = _text(data.get("trigger"))
                title = f"skill {name} loaded" + (f" ({trigger})" if trigger else "")
                return self._new("skill", title, _text(data.get("content")) or None, ts=ts)
            case "hook.start" | "hook.end":
                return self._hook(etype, data, ts)
            case "session.mcp_server_status_changed":
                name = _text(data.get("serverName")) or "?"
                status = _text(data.get("status")) or "?"
                error = _text(data.get("error"))
                title = f"MCP server {name}: {status}" + (f" — {error}" if error else "")
                state: InfoState | None = "failed" if status == "failed" else None
                return self._keyed(("mcp", name), "mcp", title, None, state, ts=ts)
            case "session.mcp_servers_loaded":
                return self._keyed(("mcp-servers", ""), "mcp", *_servers(data), ts=ts)
            case "session.tools_updated":
                model = _text(data.get("model"))
                title = "tools updated" + (f" for {model}" if model else "")
                return self._new("tools", title, ts=ts)
            case "session.permissions_changed":
                return self._new("permissions", _permissions(data), ts=ts)
            case "session.compaction_start" | "session.compaction_complete":
                return self._compaction(etype, data, ts)
            case "session.snapshot_rewind":
                removed = _int(data.get("eventsRemoved"))
                to = _text(data.get("upToEventId"))
                title = "rewound to an earlier point"
                if removed is not None:
                    title += f": {removed} events removed"
                return self._new("rewind", title, f"back to event {to}" if to else None, ts=ts)
            case "session.truncation":
                return self._new("truncation", _truncation(data), ts=ts)
            case "session.background_tasks_changed":
                return self._background(data, ts)
            case "system.notification":
                return self._new("notification", *_notification(data), ts=ts)
            case "session.auto_mode_resolved":
                return self._new("auto-model", *_auto_model(data), ts=ts)
        return self._new("info", etype, _dump(data) or None, ts=ts)

    # --- rows ------------------------------------------------------------------------

    def _new(
        self,
        kind: str,
        title: str,
        body: str | None = None,
        state: InfoState | None = None,
        *,
        ts: datetime | None,
    ) -> tuple[InfoRowBlock, bool]:
        return InfoRowBlock(self._new_id(), kind, title, body, state, timestamp=ts), True

    def _keyed(
        self,
        key: tuple[str, str],
        kind: str,
        title: str,
        body: str | None = None,
        state: InfoState | None = None,
        *,
        ts: datetime | None,
    ) -> tuple[InfoRowBlock, bool]:
        """One row per key, updated in place by each event that names it."""
        row = self._open.get(key)
        if row is None:
            row, _ = self._new(kind, title, body, state, ts=ts)
            self._open[key] = row
            return row, True
        row.title, row.body, row.state = title, body, state
        row.count += 1
        return row, False

    def _system(self, data: Data, ts: datetime | None) -> tuple[InfoRowBlock, bool]:
        content = _text(data.get("content"))
        role = _text(data.get("role")) or "system"
        name = _text(data.get("name"))
        what = "system prompt" if role == "system" else f"{role} instructions"
        if name:
            what += f" ({name})"
        row = self._open.get(("system", role))
        if row is not None and self._system_prompts.get(role) == content:
            # Copilot writes the same prompt again before every user message: one row.
            row.count += 1
            row.title = f"{row.title.split(' (sent ')[0]} (sent {row.count} times)"
            return row, False
        self._system_prompts[role] = content
        lines = content.count("\n") + 1 if content else 0
        title = f"{what} · {lines:,} lines, {_size(len(content.encode()))}"
        row, _ = self._new("system", title, content or None, ts=ts)
        self._open[("system", role)] = row
        return row, True

    def _hook(self, etype: str, data: Data, ts: datetime | None) -> tuple[InfoRowBlock, bool]:
        hook_id = _text(data.get("hookInvocationId"))
        hook = _text(data.get("hookType")) or "hook"
        detail = [f"input: {_dump(data.get('input'))}"] if data.get("input") is not None else []
        if etype == "hook.start":
            return self._keyed(
                ("hook", hook_id),
                "hook",
                f"hook {hook} running",
                "\n".join(detail) or None,
                "running",
                ts=ts,
            )
        row = self._open.pop(("hook", hook_id), None)
        error = data.get("error")
        message = _text(error.get("message")) if isinstance(error, dict) else _text(error)
        state: InfoState
        if data.get("success") is True:
            title, state = f"hook {hook} ✓", "ok"
        else:
            title, state = f"hook {hook} failed" + (f": {message}" if message else ""), "failed"
        lines = [row.body] if row is not None and row.body else detail
        if data.get("output") is not None:
            lines.append(f"output: {_dump(data.get('output'))}")
        body = "\n".join(lines) or None
        if row is None:
            return self._new("hook", title, body, state, ts=ts)
        row.title, row.body, row.state = title, body, state
        row.count += 1
        return row, False

    def _compaction(self, etype: str, data: Data, ts: datetime | None) -> tuple[InfoRowBlock, bool]:
        if etype == "session.compaction_start":
            title = "compacting the context"
            tokens, limit = _int(data.get("currentTokens")), _int(data.get("tokenLimit"))
            size = f"{tokens:,}" + (f"/{limit:,}" if limit else "") + " tokens" if tokens else ""
            facts = [size, _text(data.get("trigger"))]
            shown = [fact for fact in facts if fact]
            if shown:
                title += f" ({', '.join(shown)})"
            return self._keyed(("compaction", ""), "compaction", title, None, "running", ts=ts)
        row = self._open.pop(("compaction", ""), None)
        state: InfoState
        if data.get("success") is False:
            error = _text(data.get("error")) or "unknown error"
            title, body, state = f"compaction failed: {error}", None, "failed"
        else:
            title, state = "context compacted", "ok"
            before = _int(data.get("preCompactionTokens"))
            after = _int(data.get("postCompactionTokens"))
            facts = []
            if before is not None and after is not None:
                facts.append(f"{before:,} → {after:,} tokens")
            removed = _int(data.get("messagesRemoved"))
            if removed is not None:
                facts.append(f"{removed} message{'' if removed == 1 else 's'} removed")
            if facts:
                title += ": " + ", ".join(facts)
            body = _text(data.get("summaryContent")) or None
        if row is None:
            return self._new("compaction", title, body, state, ts=ts)
        row.title, row.body, row.state = title, body, state
        row.count += 1
        return row, False

    def _background(self, data: Data, ts: datetime | None) -> tuple[InfoRowBlock, bool]:
        key = ("background", "")
        row = self._open.get(key)
        count = 1 if row is None else row.count + 1
        title = "background tasks changed" + (f" ×{count}" if count > 1 else "")
        body = _dump(data) if data else (row.body if row is not None else None)
        return self._keyed(key, "background", title, body, ts=ts)


def usage_summary(data: Data) -> str | None:
    """A session.shutdown's model metrics as one line (``None`` if it has none)."""
    metrics = data.get("modelMetrics")
    if not isinstance(metrics, dict) or not metrics:
        return None
    parts = []
    for model, metric in metrics.items():
        requests, usage = _metric(metric)
        count = _int(requests.get("count"))
        tokens_in, tokens_out = _int(usage.get("inputTokens")), _int(usage.get("outputTokens"))
        part = str(model)
        if count is not None:
            part += f" {count} request{'' if count == 1 else 's'}"
        if tokens_in is not None or tokens_out is not None:
            part += f" · {tokens_in or 0:,} in / {tokens_out or 0:,} out"
        parts.append(part)
    return "usage: " + "; ".join(parts)


def usage_body(data: Data) -> str | None:
    """Per model: requests, premium requests, and every token count it reported."""
    metrics = data.get("modelMetrics")
    if not isinstance(metrics, dict):
        return None
    lines = []
    for model, metric in metrics.items():
        requests, usage = _metric(metric)
        facts = [f"{key} {value:,}" for key, value in usage.items() if isinstance(value, int)]
        cost = requests.get("cost")
        if isinstance(cost, int | float) and cost:
            facts.append(f"premium requests {cost:g}")
        lines.append(f"{model}: " + ", ".join(facts))
    duration = data.get("totalApiDurationMs")
    if isinstance(duration, int | float):
        lines.append(f"time in model calls: {duration / 1000:.1f}s")
    return "\n".join(lines) or None


# --- titles ---------------------------------------------------------------------------


def _skills(data: Data) -> tuple[str, str | None]:
    skills = [s for s in _list(data.get("skills")) if isinstance(s, dict)]
    names = [_text(s.get("name")) or "?" for s in skills]
    title = f"{len(skills)} skill{'' if len(skills) == 1 else 's'} available"
    if names:
        title += ": " + _listed(names)
    body = "\n".join(
        f"{_text(s.get('name'))} — {_text(s.get('description'))}".rstrip(" —") for s in skills
    )
    return title, body or None


def _servers(data: Data) -> tuple[str, str | None]:
    servers = [s for s in _list(data.get("servers")) if isinstance(s, dict)]
    shown = [f"{_text(s.get('name')) or '?'} ({_text(s.get('status')) or '?'})" for s in servers]
    title = f"{len(servers)} MCP server{'' if len(servers) == 1 else 's'}"
    if shown:
        title += ": " + _listed(shown)
    errors = [f"{_text(s.get('name'))}: {_text(s.get('error'))}" for s in servers if s.get("error")]
    return title, "\n".join(errors) or None


def _permissions(data: Data) -> str:
    mode, previous = _text(data.get("mode")), _text(data.get("previousMode"))
    if mode:
        return f"permissions: {previous} → {mode}" if previous else f"permissions: {mode}"
    allow_all = data.get("allowAllPermissions")
    if isinstance(allow_all, bool):
        return f"permissions: allow all tools {'on' if allow_all else 'off'}"
    return "permissions changed"


def _truncation(data: Data) -> str:
    before = _int(data.get("preTruncationTokensInMessages"))
    after = _int(data.get("postTruncationTokensInMessages"))
    removed = _int(data.get("messagesRemovedDuringTruncation"))
    by = _text(data.get("performedBy"))
    title = "context truncated" + (f" by {by}" if by else "")
    facts = []
    if before is not None and after is not None:
        facts.append(f"{before:,} → {after:,} tokens")
    if removed is not None:
        facts.append(f"{removed} message{'' if removed == 1 else 's'} removed")
    limit = _int(data.get("tokenLimit"))
    if limit is not None:
        facts.append(f"limit {limit:,}")
    return title + (": " + ", ".join(facts) if facts else "")


def _notification(data: Data) -> tuple[str, str | None]:
    content = _TAG.sub("", _text(data.get("content"))).strip()
    kind = data.get("kind")
    what = _text(kind.get("type")) if isinstance(kind, dict) else ""
    first = content.splitlines()[0] if content else ""
    title = "notification" + (f" ({what.replace('_', ' ')})" if what else "")
    if first:
        title += f": {_cut(first, TITLE_WIDTH)}"
    return title, content if content and content != first else None


def _auto_model(data: Data) -> tuple[str, str | None]:
    chosen = _text(data.get("chosenModel")) or "?"
    facts = []
    bucket = _text(data.get("reasoningBucket"))
    if bucket:
        facts.append(f"{bucket} reasoning")
    confidence = data.get("confidence")
    if isinstance(confidence, int | float):
        facts.append(f"confidence {confidence:.2f}")
    if data.get("fallback") is True:
        facts.append("fallback")
    title = f"auto → {chosen}" + (f" ({', '.join(facts)})" if facts else "")
    return title, _dump(data, indent=1)


# --- helpers --------------------------------------------------------------------------


def _metric(metric: object) -> tuple[Data, Data]:
    if not isinstance(metric, dict):
        return {}, {}
    requests, usage = metric.get("requests"), metric.get("usage")
    return (
        requests if isinstance(requests, dict) else {},
        usage if isinstance(usage, dict) else {},
    )


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _listed(names: list[str]) -> str:
    return _cut(", ".join(names), TITLE_WIDTH)


def _size(count: int) -> str:
    return f"{count / 1024:.0f} KB" if count >= 1024 else f"{count} bytes"


def _dump(value: object, indent: int | None = None) -> str:
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, indent=indent)
