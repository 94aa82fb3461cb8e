"""The cut points of a streamed reply (widgets/markdown_split.py)."""

from __future__ import annotations

from markdown_it import MarkdownIt

from widgets.markdown_split import freeze_point


def blocks(text: str) -> list[str]:
    """The top-level block types markdown-it sees, with their text content."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    return [t.type + ":" + t.content for t in tokens if t.level == 0 and t.nesting != -1]


def assert_cut_keeps_meaning(text: str, cut: int) -> None:
    assert blocks(text[:cut]) + blocks(text[cut:]) == blocks(text)


def test_cuts_before_a_paragraph_or_heading_after_a_blank_line() -> None:
    text = "# Title\n\nFirst paragraph.\n\n## Next\n\nLast words here.\n"
    cut = freeze_point(text, keep=20)  # "Last words here.\n" alone is too short
    assert cut is not None and text[cut:].startswith("## Next")
    assert_cut_keeps_meaning(text, cut)


def test_keeps_at_least_keep_characters_after_the_cut() -> None:
    text = "one\n\ntwo\n\nthree\n\nfour\n"
    cut = freeze_point(text, keep=len("three\n\nfour\n"))
    assert cut is not None and text[cut:] == "three\n\nfour\n"
    assert freeze_point(text, keep=len(text)) is None
    assert freeze_point("", keep=0) is None


def test_never_cuts_inside_fenced_code() -> None:
    code = "```python\nx = 1\n\ny = 2\n\nz = 3\n```\n"
    text = "Intro.\n\n" + code + "\nAfter.\n"
    for keep in range(len(text)):
        cut = freeze_point(text, keep=keep)
        if cut is not None:
            assert text[cut:].startswith(("```", "After.")), text[cut:]
            assert_cut_keeps_meaning(text, cut)


def test_a_longer_fence_is_not_closed_by_a_shorter_one() -> None:
    text = "````\n```\n\ninner\n````\n\nAfter.\n"
    cut = freeze_point(text, keep=3)
    assert cut is not None and text[cut:] == "After.\n"


def test_never_splits_a_list_or_its_indented_continuation() -> None:
    text = "Steps:\n\n1. one\n\n2. two\n\n   more of two\n\n- a\n\n- b\n\nDone.\n"
    for keep in range(len(text)):
        cut = freeze_point(text, keep=keep)
        if cut is not None:
            # Between the two lists is fine; inside either one is not.
            assert text[cut:].startswith(("1. one", "- a", "Done.")), text[cut:]
            assert_cut_keeps_meaning(text, cut)


def test_no_cut_in_text_without_blank_lines() -> None:
    assert freeze_point("a\nb\nc\n" * 50, keep=1) is None


ADVERSARIAL = [
    # A no-break-space line is not blank to CommonMark: "===" still underlines "Title".
    "Intro.\n\nTitle\n\xa0\n===\n\nbody text\n",
    # HTML blocks of types 1-5 run past blank lines.
    "Intro.\n\n<!--\n\nhidden\n\n-->\n\nAfter.\n",
    "Intro.\n\n<pre>\nx\n\ny\n</pre>\n\nAfter.\n",
    # A fence opened inside a list item; its indented closer is not a top-level opener.
    "- step:\n  ```sh\n  make\n\n  make test\n  ```\n\nPara.\n\n```py\nx = 1\n\ny = 2\n```\n",
    # Backticks in the info string: not a fence at all.
    "Intro.\n\n```js``` is inline\n\nNext para.\n\n```\ncode\n\nmore\n```\n",
    # A link reference definition far from its use, in either order.
    "See [the docs][d].\n\nMore text here.\n\n[d]: https://example.com\n",
    "[d]: https://example.com\n\nMore text here.\n\nSee [the docs][d].\n",
]


def test_adversarial_texts_are_only_cut_where_the_halves_render_as_the_whole() -> None:
    parser = MarkdownIt("gfm-like")
    for text in ADVERSARIAL:
        whole = parser.render(text)
        for keep in range(len(text)):
            cut = freeze_point(text, keep=keep)
            if cut is not None:
                halves = parser.render(text[:cut]) + parser.render(text[cut:])
                assert halves == whole, (text, cut)
