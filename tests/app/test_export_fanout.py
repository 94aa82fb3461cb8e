"""Exports of loopdeck's own fan-out (three explore sub-agents started in one reply):
each run collapsed under its own ``task`` call, in Markdown and in HTML."""

from __future__ import annotations

from app.export import export_session
from tests.support.paths import FIXTURES

FANOUT = FIXTURES / "loopdeck-fanout" / "events.jsonl"
ANSWERS = (
    "Two TODO markers: `shop/cart.py:4` and `shop/pricing.py:4`.",
    "Prices and discounts are computed in `shop/pricing.py`.",
    "No test functions: the project has no tests yet.",
)


def test_markdown_draws_each_run_under_its_task_call() -> None:
    md = export_session(FANOUT, "md")
    assert md.count("## User") == 1  # the runs' prompts are not the user's
    first = md[md.index("\n### Turn 1") : md.index("\n### Turn 2")]
    assert first.count("⤷ ✓ **Explore Agent** — completed · 2 turns · 1 tool call") == 3
    assert first.count("<details><summary>the run: 2 turns, 1 tool call</summary>") == 3
    calls = [first.index(f"`{d}`") for d in ("Find TODO markers", "Find pricing code")]
    for answer, call in zip(ANSWERS, [*calls, first.index("`Find the tests`")], strict=True):
        # Each run's answer comes after its own call, inside its details, then as its output.
        run = first.index(answer, call)
        assert first.index("</details>", call) > run
    assert "Searching for" not in md[md.index("\n### Turn 2") :]


def test_html_draws_each_run_collapsed() -> None:
    html = export_session(FANOUT, "html")
    assert html.count('class="subagent"') == 3
    assert html.count("<details") >= 3
    for answer in ANSWERS:
        assert answer.split("`")[0] in html
