"""Scripted calls of the ``ask_user`` and ``update_todos`` tools, and the question the
tests ask by default."""

from __future__ import annotations

from typing import Any

QUESTION = "Which database should I use?"
CHOICES = ["PostgreSQL (Recommended)", "MySQL", "SQLite"]


def ask(question: str = QUESTION, choices: list[str] | None = CHOICES) -> dict[str, Any]:
    """An ``ask_user`` call, with ``choices`` unless None (a free-form question)."""
    arguments: dict[str, Any] = {"question": question}
    if choices is not None:
        arguments["choices"] = choices
    return {"name": "ask_user", "arguments": arguments}


def todos(*rows: tuple[str, str, str]) -> dict[str, Any]:
    """An ``update_todos`` call from ``(id, title, status)`` rows."""
    return {
        "name": "update_todos",
        "arguments": {"todos": [{"id": i, "title": t, "status": s} for i, t, s in rows]},
    }
