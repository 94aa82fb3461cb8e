"""Exports of sessions with sub-agents: each run under its task call, collapsed.

Markdown and HTML both keep the run's summary in view and its prompt, turns and
tool calls inside a ``<details>`` block; nothing of the run is drawn as the main
agent's (no second "User" message, no sub-agent reply in a main turn).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from app.export import export_session
from tests.support.paths import FIXTURES

REAL = FIXTURES / "copilot-real" / "irrlicht-foreground-subagent" / "events.jsonl"
TOOLS = FIXTURES / "subagent-tools" / "events.jsonl"

PROMPT = "You are a task subagent. Write exactly two sentences"
ANSWER = "JSONL (JSON Lines) is a text format where each line is a separate, valid JSON value"
REJECTED = "Reasoning effort 'short' is not supported for model 'gpt-5-mini'."


def sections(markdown: str) -> dict[str, str]:
    """The text under each ``### Turn N`` heading of the main agent."""
    parts = re.split(r"^### (Turn \d+)", markdown, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_markdown_puts_each_run_under_its_task_call_collapsed() -> None:
    md = export_session(REAL, "md")

    assert md.count("## User") == 1  # the run's prompt is not the user's
    turns = sections(md)
    assert ANSWER not in turns["Turn 1"]
    # The failed run never began: its prompt is the one the call asked for, closed.
    first = turns["Turn 1"]
    assert (
        first.index("<details><summary>the run: 0 turns, 0 tool calls</summary>")
        < first.index(f"  **Prompt:** {PROMPT}")
        < first.index("</details>")
    )
    # The failed run: its summary, and the error once (the call's output says it).
    assert (
        "  ⤷ ✗ **Task Agent** — failed · 0 turns · 0 tool calls · 10ms · gpt-5-mini"
        in (turns["Turn 1"])
    )
    assert turns["Turn 1"].count(REJECTED) == 1
    # The answered run: summary in view, the run inside <details>, then the answer.
    run = turns["Turn 3"]
    summary = (
        "  ⤷ ✓ **Task Agent** — completed · 1 turn · 0 tool calls · 6.8s · gpt-5-mini"
        " · 10.6k tokens"
    )
    assert summary in run
    opened = run.index("  <details><summary>the run: 1 turn, 0 tool calls</summary>")
    closed = run.index("  </details>")
    assert run.index(summary) < opened < run.index(f"  **Prompt:** {PROMPT}") < closed
    assert opened < run.index("  #### Turn 1 · gpt-5-mini") < run.index(f"  {ANSWER}") < closed
    assert closed < run.rindex(f"  {ANSWER}")  # the call's output: the run's answer


def test_markdown_nests_a_runs_tool_calls_inside_its_details() -> None:
    md = export_session(TOOLS, "md")
    run = sections(md)["Turn 1"]
    opened, closed = run.index("<details>"), run.index("</details>")
    grep = run.index("  - ✓ **grep** `load_config` · 1.0s")
    output = run.index("    app/settings.py:12:def load_config(path):")
    assert opened < run.index("  #### Turn 1 · claude-haiku-4.5") < grep < output < closed
    assert opened < run.index("  #### Turn 2 · claude-haiku-4.5") < closed
    assert md.count("## User") == 1 and "### Turn 3" not in md


class Outline(HTMLParser):
    """Text of the page, each piece with how many ``<details>`` enclose it and
    whether it is in a ``<summary>`` (shown while closed)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.in_summary = 0
        self.pieces: list[tuple[int, bool, str]] = []
        self.user_divs: list[int] = []  # depth of each <div class="user">

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "details":
            self.depth += 1
        elif tag == "summary":
            self.in_summary += 1
        elif tag == "div" and ("class", "user") in attrs:
            self.user_divs.append(self.depth)

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self.depth -= 1
        elif tag == "summary":
            self.in_summary -= 1

    def handle_data(self, data: str) -> None:
        self.pieces.append((self.depth, self.in_summary > 0, data))

    def where(self, text: str) -> list[tuple[int, bool]]:
        return [(depth, summary) for depth, summary, data in self.pieces if text in data]


def test_html_keeps_each_run_closed_under_its_task_call_with_its_summary_shown() -> None:
    page = Outline()
    page.feed(export_session(REAL, "html"))

    # The user's message; each run's prompt, inside its closed call.
    assert page.user_divs == [0, 1, 1]
    # The summary is on the closed call's <summary> line; the run is inside it.
    assert page.where("⤷ ✓ Task Agent — completed · 1 turn · 0 tool calls · 6.8s") == [(1, True)]
    assert page.where("⤷ ✗ Task Agent — failed · 0 turns · 0 tool calls · 10ms") == [(1, True)]
    assert (1, False) in page.where(PROMPT)  # inside the closed call
    assert (1, False) in page.where(ANSWER) and (0, False) not in page.where(ANSWER)
    assert page.where("Turn 1 · gpt-5-mini · 5.5s · 261 out") == [(1, False)]


def test_html_nests_a_runs_tool_calls_one_level_deeper() -> None:
    page = Outline()
    page.feed(export_session(TOOLS, "html"))
    assert page.where("grep") == [(2, True)]
    assert page.where("app/settings.py:12:def load_config(path):") == [(2, False)]
    assert page.where("Searching for the loader.") == [(1, False)]
