"""A long autopilot run in a small context window: compaction keeps it going.

    python -m benchmarks.long_autopilot [--turns N] [--window TOKENS] [--read-chars C]

One persisted session (a real ``SessionStore`` in a temp dir) runs a scripted
autopilot task of N turns (default 300): every turn but the last reads a file of C
characters (default 2,400, ~600 tokens) with ``view``; the last calls
``task_complete``. The context window is ``--window`` tokens (default 8,000; the
system prompt and tool schemas take about a third of it). Every request the model
receives is recorded and measured the way the session measures it.

Checked, and reported: no request exceeds the window; compactions are recorded
(``session.compaction_start``/``_complete``) and drawn (a compaction row in the
transcript folded from the log); the task completes. Then the session is resumed
and sent one more prompt: its first request must open with the latest summary and
hold none of the old turns. Also: wall time, turns per second, requests' largest
share of the window. Results: stdout and ``benchmarks/results/long_autopilot.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.log.store import SessionStore, read_events
from agent.loop.history import SUMMARY_PREFIX
from agent.models.base import COMPACTION_CALL, RetryPolicy, StreamItem
from agent.models.context_window import estimate_tokens, message_text
from agent.models.scripted import Script, ScriptedModel
from agent.session.session import Session
from agent.transcript.blocks import InfoRowBlock
from agent.transcript.fold import fold
from benchmarks.machine import machine

RESULTS = Path(__file__).resolve().parent / "results" / "long_autopilot.json"
TASK = "Read notes.txt once per step until the survey is done, then mark the task complete."


class FakeRecordingModel:
    """The scripted model, recording every request it gets."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.requests: list[tuple[int, list[dict[str, Any]], int]] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def retry_policy(self) -> RetryPolicy:
        return self.inner.retry_policy

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, call_index: int
    ) -> AsyncIterator[StreamItem]:
        tool_tokens = estimate_tokens(json.dumps(tools, sort_keys=True)) if tools else 0
        self.requests.append((call_index, list(messages), tool_tokens))
        async for item in self.inner.stream(messages, tools, call_index=call_index):
            yield item


def request_tokens(messages: list[dict[str, Any]], tool_tokens: int) -> int:
    """As the session counts for a scripted model: ~4 characters a token, +4 a message."""
    return sum(estimate_tokens(message_text(m)) + 4 for m in messages) + tool_tokens


def script(turns: int) -> Script:
    steps: list[dict[str, Any]] = [
        {
            "text": f"Step {i}: reading the notes.",
            "tool_calls": [{"name": "view", "arguments": {"path": "notes.txt"}}],
        }
        for i in range(turns - 1)
    ]
    steps.append(
        {
            "text": "The survey is done.",
            "tool_calls": [
                {
                    "name": "task_complete",
                    "arguments": {"summary": f"Read the notes {turns - 1} times."},
                }
            ],
        }
    )
    steps.append({"text": "Resumed: nothing left to do."})
    return Script.model_validate({"turns": steps})


async def run(turns: int, window: int, read_chars: int, folder: Path) -> dict[str, Any]:
    workspace = folder / "ws"
    workspace.mkdir()
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    (workspace / "notes.txt").write_text(line * (read_chars // len(line) + 1))
    store = SessionStore(folder / "home")
    model = FakeRecordingModel(ScriptedModel(script(turns), "long"))
    session = await Session.create(
        model=model, cwd=workspace, mode="autopilot", store=store, max_autopilot_continues=0
    )
    session.configure_context(window=window)
    started = time.perf_counter()
    outcome = await session.send_and_wait(TASK)
    wall = time.perf_counter() - started
    await session.close()

    sizes = [
        request_tokens(messages, tools)
        for index, messages, tools in model.requests
        if index != COMPACTION_CALL
    ]
    events = read_events(store.events_path(session.id)).events
    types = [e.type for e in events]
    transcript = fold(events, replay=True)
    drawn = [b for b in transcript.items if isinstance(b, InfoRowBlock) and b.kind == "compaction"]

    # Resume and send once more: the summary goes out, not the old turns.
    again = FakeRecordingModel(ScriptedModel(script(turns), "long"))
    resumed = await Session.resume(store=store, session_id=session.id, model=again)
    resumed.configure_context(window=window)
    # The scripted model answers by call index: the resumed call is the script's last turn.
    await resumed.send_and_wait("Anything left?")
    await resumed.close()
    first = next(messages for index, messages, _ in again.requests if index != COMPACTION_CALL)
    old_turns = [m for m in first if "Step 0:" in str(m.get("content") or "")]
    return {
        "turns": turns,
        "window": window,
        "task_complete": outcome.task_complete,
        "model_turns": outcome.turns,
        "wall_s": wall,
        "turns_per_s": outcome.turns / wall if wall else None,
        "requests": len(sizes),
        "largest_request_tokens": max(sizes),
        "largest_share_of_window": max(sizes) / window,
        "over_window": sum(1 for s in sizes if s > window),
        "compactions_started": types.count("session.compaction_start"),
        "compactions_completed": types.count("session.compaction_complete"),
        "truncations": types.count("session.truncation"),
        "compaction_rows_drawn": len(drawn),
        "resumed_request_opens_with_summary": str(first[1].get("content", "")).startswith(
            SUMMARY_PREFIX
        ),
        "resumed_request_old_turns": len(old_turns),
        "resumed_request_tokens": request_tokens(first, again.requests[0][2]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=8_000)
    parser.add_argument("--read-chars", type=int, default=2_400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(run(args.turns, args.window, args.read_chars, Path(tmp)))
    for key, value in result.items():
        shown = f"{value:.3f}" if isinstance(value, float) else value
        print(f"{key:36} {shown}")
    problems = []
    if result["over_window"]:
        problems.append(f"{result['over_window']} requests over the window")
    if not result["task_complete"]:
        problems.append("the task did not complete")
    if not result["compactions_completed"] or not result["compaction_rows_drawn"]:
        problems.append("no compaction recorded and drawn")
    if not result["resumed_request_opens_with_summary"] or result["resumed_request_old_turns"]:
        problems.append("the resumed request does not start from the summary")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine(), **result}, indent=2) + "\n")
    if problems:
        raise SystemExit("; ".join(problems))


if __name__ == "__main__":
    main()
