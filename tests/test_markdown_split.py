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
            assert text[cut:].startswith(("1. one", "Done.")), text[cut:]
            assert_cut_keeps_meaning(text, cut)


def test_no_cut_in_text_without_blank_lines() -> None:
    assert freeze_point("a\nb\nc\n" * 50, keep=1) is None
