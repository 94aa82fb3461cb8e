"""Ctrl+C and Esc: stop the running turn first, clear the prompt, quit on a second Ctrl+C;
long pastes with CR line breaks collapse like any other."""

from __future__ import annotations

from pathlib import Path

from textual import events

from tests.support.app_harness import SIZE, Harness, send, started, wait_idle
from tests.support.pilot import notifications, text_of, wait_for
from widgets.message_blocks import AbortView, UserMessageView

SLOW = {"text": "a long and slow answer " * 20, "delay_ms": 10_000}


async def test_ctrl_c_stops_the_running_turn_and_a_second_one_quits(tmp_path: Path) -> None:
    h = Harness([SLOW], tmp_path)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "take your time")
        await wait_for(pilot, lambda: h.session.busy, "the turn to start")
        await pilot.press("ctrl+c")
        await wait_idle(pilot, h)
        assert h.app.is_running  # stopped the turn, did not quit
        assert len(h.app.query(AbortView)) == 1
        assert any("Press Ctrl+C again to quit" in m for m in notifications(h.app))
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not h.app.is_running, "the app to quit")


async def test_esc_with_a_queued_message_says_it_is_sent_next_and_sends_it(
    tmp_path: Path,
) -> None:
    h = Harness([SLOW, {"text": "Queued one answered."}], tmp_path)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "take your time")
        await wait_for(pilot, lambda: h.session.busy, "the turn to start")
        await send(pilot, h, "and then this")
        await wait_for(pilot, lambda: h.session.queued == 1, "the message to queue")
        await pilot.press("escape")
        await wait_for(pilot, lambda: bool(h.app.query(AbortView)), "the abort line")
        said = text_of(h.app.query_one(AbortView))
        assert "Your queued message is sent next." in said
        assert "Send a message to go on" not in said
        await wait_for(pilot, lambda: h.idles() == 2, "the queued message's turn")
        contents = [e.data.content for e in h.recorder.of("user.message")]
        assert contents == ["take your time", "and then this"]


async def test_esc_without_a_queue_still_says_send_a_message(tmp_path: Path) -> None:
    h = Harness([SLOW], tmp_path)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        await send(pilot, h, "take your time")
        await wait_for(pilot, lambda: h.session.busy, "the turn to start")
        await pilot.press("escape")
        await wait_idle(pilot, h)
        assert "Send a message to go on." in text_of(h.app.query_one(AbortView))


async def test_esc_and_ctrl_c_clear_the_prompt_and_up_brings_it_back(tmp_path: Path) -> None:
    h = Harness([], tmp_path)
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        h.app.prompt.text = "half a thought"
        await pilot.press("escape")
        assert h.app.prompt.text == ""
        await pilot.press("up")
        assert h.app.prompt.text == "half a thought"
        await pilot.press("ctrl+c")
        assert h.app.prompt.text == "" and h.app.is_running
        await pilot.press("up")
        assert h.app.prompt.text == "half a thought"


async def test_a_long_paste_with_cr_line_breaks_collapses(tmp_path: Path) -> None:
    """tmux and many terminals send a paste's line breaks as CR."""
    h = Harness([{"text": "Read it."}], tmp_path)
    lines = [f"line {i}" for i in range(1, 3001)]
    async with h.app.run_test(size=SIZE) as pilot:
        await started(pilot, h)
        h.app.post_message(events.Paste("\r".join(lines)))
        await pilot.pause()
        assert h.app.prompt.text == "[pasted 3000 lines]"
        await pilot.press("enter")
        await wait_idle(pilot, h)
        assert h.recorder.of("user.message")[0].data.content == "\n".join(lines)
        # The timeline shows its start and how much more it held, not 3,000 lines.
        shown = text_of(h.app.query_one(UserMessageView))
        assert "line 10" in shown and "line 11\n" not in shown
        assert "… 2,990 more lines" in shown

        h.app.post_message(events.Paste("\r".join(lines[:20]) + "\r"))  # a final CR: no line
        await pilot.pause()
        assert h.app.prompt.text == "[pasted 20 lines]"
        h.app.prompt.text = ""
        h.app.post_message(events.Paste("a\r\nb\rc"))  # short: inserted, one convention
        await pilot.pause()
        assert h.app.prompt.text == "a\nb\nc"
