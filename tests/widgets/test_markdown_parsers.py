"""Replies are parsed without building a Markdown parser per update.

Textual's ``Markdown`` builds a new ``MarkdownIt("gfm-like")`` on every ``update`` and
``append`` unless given a factory: ~0.3 ms and ~0.4 MB of linkify regex sources in
a reference cycle each time, several times a turn, left for the cyclic collector.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from markdown_it import MarkdownIt

from tests.support.pilot import wait_for
from tests.support.streams import Stream
from tests.support.timeline_app import FakeTimelineApp
from widgets.markdown_split import shared_parser, thread_parser
from widgets.timeline import Timeline


async def test_streamed_turns_reuse_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    parsed: list[str] = []
    init, parse = MarkdownIt.__init__, MarkdownIt.parse

    def counting_init(self: MarkdownIt, *args: Any, **kwargs: Any) -> None:
        if args[:1] == ("gfm-like",):  # Textual's (rich's own Markdown is commonmark)
            built.append(threading.current_thread().name)
        init(self, *args, **kwargs)

    def counting_parse(self: MarkdownIt, src: str, env: Any = None) -> Any:
        parsed.append(src)
        return parse(self, src, env)

    monkeypatch.setattr(MarkdownIt, "__init__", counting_init)
    monkeypatch.setattr(MarkdownIt, "parse", counting_parse)
    stream = Stream()
    stream.start()
    stream.user("hi")
    turns = 6
    for i in range(turns):
        stream.turn(f"t{i}", f"Step {i}: reading **main.py** at https://example.com/{i}.")
    app = FakeTimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        for event in stream.events:
            timeline.apply(event)
            await pilot.pause()
        await wait_for(
            pilot,
            lambda: any(f"Step {turns - 1}:" in src for src in parsed),
            "the last reply to be parsed",
        )
    assert len(parsed) >= turns // 2
    # At most one parser per thread that parsed (the loop's, the executor's).
    assert len(built) == len(set(built))


def test_one_parser_per_thread_parsing_as_gfm_like() -> None:
    text = "# Title\n\nSee https://example.com and `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    want = [t.as_dict() for t in MarkdownIt("gfm-like").parse(text)]
    assert [t.as_dict() for t in shared_parser().parse(text)] == want
    assert thread_parser() is thread_parser()
    other: list[MarkdownIt] = []
    worker = threading.Thread(target=lambda: other.append(thread_parser()))
    worker.start()
    worker.join()
    assert other[0] is not thread_parser()  # linkify keeps state between its calls
