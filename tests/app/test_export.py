"""``loopdeck export``: Markdown and HTML transcripts of the recorded fixtures."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from app.export import export_session
from tests.support.cli import run
from tests.support.paths import FIXTURES

LOOPDECK = FIXTURES / "loopdeck-session" / "events.jsonl"
COPILOT = FIXTURES / "copilot-session" / "events.jsonl"
LOOPDECK_ID = "1d0c5e55-0000-4000-8000-000000000001"
XSS = "<script>alert(1)</script>"
NUDGE_START = "You have not yet marked the task as complete using the task_complete tool."


def fences(markdown: str) -> list[tuple[str, str]]:
    """(info string, content) of every fenced code block, as CommonMark reads them."""
    return [
        (tok.info, tok.content)
        for tok in MarkdownIt("commonmark").parse(markdown)
        if tok.type == "fence"
    ]


class TagCounter(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.opened: dict[str, int] = {}
        self.closed: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.opened[tag] = self.opened.get(tag, 0) + 1

    def handle_endtag(self, tag: str) -> None:
        self.closed[tag] = self.closed.get(tag, 0) + 1


def tags(html: str) -> TagCounter:
    counter = TagCounter()
    counter.feed(html)
    return counter


# --- Markdown --------------------------------------------------------------------------


def test_markdown_of_a_loopdeck_session() -> None:
    md = export_session(LOOPDECK, "md")
    assert md.startswith(f"# Session {LOOPDECK_ID}\n\n")
    for fact in (
        "- **Model:** scripted:fix-cart.json",
        "- **Mode:** autopilot",
        "- **Working directory:** /home/dev/shop",
        "- **Turns:** 6",
        "- **Tool calls:** 5",
        "- **Tokens:** 0 in / 241 out",
    ):
        assert f"\n{fact}\n" in md
    # The blocks, in timeline order.
    heads = re.findall(
        r"^(## User|### Turn \d|> \*\*↻ Autopilot nudge \d|## ✔ Task complete)", md, re.M
    )
    assert heads == [
        "## User",
        "### Turn 1",
        "### Turn 2",
        "### Turn 3",
        "> **↻ Autopilot nudge 1",
        "### Turn 4",
        "### Turn 5",
        "### Turn 6",
        "## ✔ Task complete",
    ]
    assert "## User\n\nMake Cart.add reject a quantity of zero or less.\n" in md
    assert "### Turn 1 · scripted:fix-cart.json · 2.8s · 38 out\n\nI'll find" in md
    # Tool calls: glyph, name, arguments, duration (the 42 s pause is in the bash call).
    assert "- ✓ **grep** `TODO` · 700ms" in md
    assert "- ✓ **view** `shop/cart.py view_range=[10, 12]` · 700ms" in md
    assert "- ✓ **bash** `grep -c ValueError shop/cart.py` · 44.1s" in md
    assert "### Turn 5 · scripted:fix-cart.json · 46.2s · 19 out" in md
    # The nudge is a quote, every line of it.
    nudge = md[md.index("> **↻ Autopilot nudge 1**") :].split("\n\n", 1)[0]
    assert f"> **↻ Autopilot nudge 1** — {NUDGE_START}" in nudge
    assert all(line.startswith(">") for line in nudge.splitlines())
    assert "> Do not call task_complete while you still have open questions" in nudge
    # The completion summary, as Markdown.
    assert md.rstrip().endswith(
        "## ✔ Task complete\n\n"
        "`Cart.add` now rejects a zero or negative `qty`:\n\n"
        "- raises `ValueError` in `shop/cart.py`\n"
        "- the TODO marker is gone"
    )


def test_markdown_fences_tool_output_and_diffs() -> None:
    md = export_session(LOOPDECK, "md")
    blocks = fences(md)
    assert [info for info, _ in blocks] == ["", "", "diff", "", ""]  # grep view edit bash done
    diff = blocks[2][1]
    assert diff.startswith("--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -8,7 +8,8 @@\n")
    assert "\n-        # TODO: reject qty <= 0\n" in diff
    assert '\n+            raise ValueError("qty must be positive")\n' in diff
    assert blocks[3][1] == "1\n<exited with exit code 0>\n"
    assert "  ```diff\n  --- a/shop/cart.py\n" in md


def test_markdown_output_with_its_own_fence_stays_in_one_block(tmp_path: Path) -> None:
    """A viewed Markdown file holds ``` fences: they must not close the export's one."""
    readme = "# Demo\n\n```python\nprint('hi')\n```\n\nAfter the fence."
    log = with_events(
        tmp_path,
        LOOPDECK,
        ("assistant.turn_start", {"turnId": "9"}),
        (
            "assistant.message",
            {
                "messageId": "m9",
                "content": "Reading the README.",
                "toolRequests": [
                    {"toolCallId": "v9", "name": "view", "arguments": {"path": "README.md"}}
                ],
            },
        ),
        ("tool.execution_start", {"toolCallId": "v9", "toolName": "view"}),
        (
            "tool.execution_complete",
            {"toolCallId": "v9", "success": True, "result": {"content": readme}},
        ),
        ("assistant.turn_end", {"turnId": "9"}),
    )
    md = export_session(log, "md")
    assert fences(md)[-1] == ("", readme + "\n")
    assert "  ````\n  # Demo\n" in md


# --- HTML ------------------------------------------------------------------------------


def test_html_of_a_loopdeck_session() -> None:
    page = export_session(LOOPDECK, "html")
    assert page.startswith('<!doctype html>\n<html><head><meta charset="utf-8">')
    assert f"<title>loopdeck session {LOOPDECK_ID}</title>" in page
    counted = tags(page)
    for tag in ("details", "summary", "pre", "div", "h3"):
        assert counted.opened.get(tag) == counted.closed.get(tag), tag
    # One collapsed block per tool call, each with its output.
    assert counted.opened["details"] == 5
    names = re.findall(r"<details><summary>.*?<b>(\w+)</b>", page)
    assert names == ["grep", "view", "edit", "bash", "task_complete"]
    assert '<span class="ok">✓</span> <b>bash</b> grep -c ValueError shop/cart.py · 44.1s' in page
    # The edit's diff, each line coloured by what it does.
    assert '<pre class="diff">--- a/shop/cart.py\n+++ b/shop/cart.py\n<span class="hunk">@@' in page
    assert '-&gt; None:\n<span class="del">-        # TODO: reject qty &lt;= 0</span>\n' in page
    assert counted.opened["div"] == 1 + 6 + 1 + 1  # user, turns, nudge, completion
    assert '<div class="user"><b>User</b><br>Make Cart.add reject' in page
    assert f'<div class="nudge"><b>↻ Autopilot nudge 1</b> — {NUDGE_START}' in page
    assert '<div class="done"><h2>✔ Task complete</h2><p><code>Cart.add</code> now rejects' in page
    assert "<h3>Turn 5 · scripted:fix-cart.json · 46.2s · 19 out</h3>" in page
    assert "<li><strong>Mode:</strong> autopilot</li>" in page


def test_html_escapes_markup_wherever_content_lands(tmp_path: Path) -> None:
    log = with_events(
        tmp_path,
        LOOPDECK,
        ("user.message", {"content": f"Please {XSS}"}),
        ("user.message", {"content": f"nudge {XSS}", "isAutopilotContinuation": True}),
        ("assistant.turn_start", {"turnId": "9", "model": f"m{XSS}"}),
        (
            "assistant.message",
            {
                "messageId": "m9",
                "content": f"Text {XSS} and <img src=x onerror=alert(1)>",
                "toolRequests": [
                    {"toolCallId": "v9", "name": "view", "arguments": {"path": f"{XSS}.md"}}
                ],
            },
        ),
        ("tool.execution_start", {"toolCallId": "v9", "toolName": f"view{XSS}"}),
        (
            "tool.execution_complete",
            {"toolCallId": "v9", "success": False, "error": {"message": f"no {XSS}"}},
        ),
        ("assistant.turn_end", {"turnId": "9"}),
        ("future.thing", {"payload": XSS}),
        ("session.task_complete", {"summary": f"done {XSS}"}),
        ("session.error", {"errorType": XSS, "message": XSS}),
    )
    page = export_session(log, "html")
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert page.count("&lt;script&gt;") >= 10
    assert "<title>loopdeck session 1d0c5e55" in page  # the page itself is intact
    assert tags(page).opened["details"] == 7  # the six tool calls, the raw row


# --- the Copilot fixture, and odd files ------------------------------------------------


def test_export_of_a_copilot_session_shows_unknown_types_compactly() -> None:
    md = export_session(COPILOT, "md")
    assert md.startswith("# Session c0b1107e-5e55-4a1e-9d3c-7e57f1c5a001\n")
    assert "- **Model:** claude-sonnet-4.5" in md and "- **Turns:** 3" in md
    assert "*GitHub MCP server connected*" in md  # session.info is modelled
    assert "- ✓ **bash** `wc -w README.md description=Count words` · 1.2s" in md
    assert "### Turn 2 · claude-sonnet-4.5 · 1.6s · 14 out\n\n`README.md` has" in md
    raw = [line for line in md.splitlines() if re.match(r"`[\w.]+` `\{", line)]
    # session.usage_info is modelled (context use): not a row.
    assert [line.split("`")[1] for line in raw] == [
        "assistant.intent",
        "tool.execution_progress",
        "future.thing",
    ]
    # Hooks and truncations are rows of their own (see test_info_rows.py).
    assert "<details><summary>↪ hook userPromptSubmitted ✓</summary>" in md
    assert "*✂ context truncated by BasicTruncator: 9,800 → 9,800 tokens," in md
    assert (
        '`future.thing` `{"widget": "sprocket", "level": 3, "note": "a type no schema knows yet"}`'
        in raw
    )
    assert all(len(line) <= 200 + 40 for line in raw)  # one line each, data cut at 200
    page = export_session(COPILOT, "html")
    # Raw rows are collapsed in HTML too, and cut like in Markdown.
    assert (
        '<details class="raw"><summary><code>future.thing</code></summary>'
        "<code>{&quot;widget&quot;: &quot;sprocket&quot;" in page
    )
    assert page.count('<details class="raw">') == 3
    assert tags(page).opened["details"] == 1 + 3 + 1  # the tool call, raw rows, the hook


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_export_of_a_torn_and_an_empty_file(fmt: str) -> None:
    torn = export_session(FIXTURES / "torn" / "events.jsonl", fmt)
    assert "Turn 2" in torn and "Turn 3" not in torn
    empty = export_session(FIXTURES / "empty" / "events.jsonl", fmt)
    assert "Turns:" in empty and "Turn 1" not in empty
    if fmt == "md":
        assert (
            empty
            == "# Session\n\n- **Turns:** 0\n- **Tool calls:** 0\n- **Tokens:** 0 in / 0 out\n"
        )


# --- the subcommand ----------------------------------------------------------------------


@pytest.fixture
def stored(loopdeck_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = loopdeck_home / "session-state" / LOOPDECK_ID
    folder.mkdir(parents=True)
    shutil.copy(LOOPDECK, folder / "events.jsonl")
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "no-copilot"))
    monkeypatch.chdir(tmp_path)
    return folder / "events.jsonl"


def test_export_subcommand_writes_the_file(
    stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_md = tmp_path / "session.md"
    code, out, err = run(capsys, "export", LOOPDECK_ID[:8], "-o", str(out_md))
    assert code == 0 and out == ""
    assert err == f"wrote {out_md}\n"
    assert out_md.read_text("utf-8") == export_session(stored, "md")

    out_html = tmp_path / "session.html"
    code, out, err = run(capsys, "export", "1d0c", "--format", "html", "--output", str(out_html))
    assert code == 0 and out == "" and err == f"wrote {out_html}\n"
    assert out_html.read_text("utf-8") == export_session(stored, "html")

    code, out, _ = run(capsys, "export", str(stored))  # a path; stdout by default
    assert code == 0 and out == export_session(stored, "md")

    code, _, err = run(capsys, "export", "ffff", "-o", str(tmp_path / "x.md"))
    assert code == 2 and "no session 'ffff'" in err
    assert not (tmp_path / "x.md").exists()


def test_export_infers_html_from_the_suffix_and_says_why_a_file_cannot_be_written(
    stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_html = tmp_path / "session.HTML"
    code, out, err = run(capsys, "export", LOOPDECK_ID[:8], "-o", str(out_html))
    assert code == 0 and err == f"wrote {out_html}\n"
    assert out_html.read_text("utf-8") == export_session(stored, "html")
    # --format still wins over the suffix.
    code, _, _ = run(capsys, "export", LOOPDECK_ID[:8], "-o", str(out_html), "--format", "md")
    assert code == 0 and out_html.read_text("utf-8") == export_session(stored, "md")

    missing = tmp_path / "missing" / "dir" / "x.md"
    code, out, err = run(capsys, "export", LOOPDECK_ID[:8], "-o", str(missing))
    assert code == 1 and out == ""
    assert err == f"loopdeck export: cannot write {missing}: No such file or directory\n"
    assert "Traceback" not in err


# --- helpers -----------------------------------------------------------------------------


def with_events(tmp_path: Path, base: Path, *events: tuple[str, dict[str, object]]) -> Path:
    """A copy of ``base`` with ``events`` appended (fixed timestamps, one second apart)."""
    lines = base.read_text("utf-8").splitlines()
    for n, (etype, data) in enumerate(events, 1):
        lines.append(
            json.dumps(
                {
                    "type": etype,
                    "data": data,
                    "id": f"extra-{n}",
                    "timestamp": f"2025-03-14T09:30:{n:02d}.000Z",
                    "parentId": None,
                }
            )
        )
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(lines) + "\n", "utf-8")
    return log
