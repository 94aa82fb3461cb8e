"""The text of a user message as the user (or the loop) wrote it.

Copilot writes its autopilot continuations with empty ``content``; the nudge it
sent is in ``transformedContent``, behind the context it prepends for the model
(``<current_datetime>…</current_datetime>`` and the like). Pure Python.
"""

from __future__ import annotations

import re

# One leading context element (a tag, its text, the same closing tag) and the blank
# lines after it.
_CONTEXT = re.compile(r"\A\s*<([A-Za-z_][\w-]*)>.*?</\1>\s*", re.DOTALL)


def sent_text(content: str, transformed: str | None) -> str:
    """``content``, or when it is empty the text of ``transformed`` without the
    context elements in front of it."""
    if content.strip() or not transformed:
        return content
    text = transformed
    while match := _CONTEXT.match(text):
        text = text[match.end() :]
    return text.strip()
