"""``loopdeck --model scripted:demo``: a new session tells the demo's story; a resumed
one goes on where it was (no plan mode forced on it, no question typed into its prompt)."""

from __future__ import annotations

import pytest

from app.cli import build_parser
from app.tui import DEMO_PROMPT, demo_story


def story(*argv: str) -> tuple[str | None, str | None]:
    args = build_parser().parse_args(list(argv))
    prompt = " ".join(args.prompt_words) or None
    return demo_story(args, prompt), args.mode


def test_a_new_demo_starts_in_plan_mode_with_its_question_ready() -> None:
    assert story("--model", "scripted:demo") == (DEMO_PROMPT, "plan")


def test_a_new_demo_with_a_prompt_of_ones_own_sends_that_instead() -> None:
    assert story("--model", "scripted:demo", "look around") == (None, "plan")


@pytest.mark.parametrize("resume", [["--resume"], ["--resume", "e18bed95"], ["--continue"]])
def test_a_resumed_demo_goes_on_where_it_was(resume: list[str]) -> None:
    assert story("--model", "scripted:demo", *resume) == (None, None)


def test_another_model_has_no_story() -> None:
    assert story("--model", "scripted:other") == (None, None)
