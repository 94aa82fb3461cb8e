"""The welcome banner's text, laid out for the width it is drawn at."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text


class WelcomeText:
    """A title line, then the body: its lines as written when they all fit, else one
    reflowed paragraph (lines broken for a wide terminal, wrapped again in a narrow
    one, leave a stub of a word or two under every line)."""

    def __init__(self, title: str, body: Sequence[str]) -> None:
        self.title = title
        self.body = list(body)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.title, overflow="fold")
        if all(cell_len(line) <= options.max_width for line in self.body):
            yield Text("\n".join(self.body))
        else:
            yield Text(" ".join(self.body))
