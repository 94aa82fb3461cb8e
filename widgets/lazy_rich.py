"""Rich renderables whose modules load on first use, not on the way to the first frame.

``rich.markdown`` and ``rich.syntax`` bring markdown-it and pygments with them: about
130 ms of imports that the empty start screen never needs.
"""

from __future__ import annotations

from rich.console import RenderableType


def rich_markdown(text: str) -> RenderableType:
    from rich.markdown import Markdown

    return Markdown(text)


def highlighted(code: str, lexer: str) -> RenderableType:
    from rich.syntax import Syntax

    return Syntax(code, lexer, theme="ansi_dark", word_wrap=True)
