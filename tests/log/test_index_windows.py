"""The replay index maps the log a window at a time: lines across a window's edge,
lines longer than a window, blank lines and a torn tail index as in one read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent.log.replay
from agent.log.replay import EventIndex


def _lines(n: int) -> list[str]:
    out = []
    for i in range(n):
        size = 70_000 if i == 7 else 300 + 977 * (i % 5)  # line 7: longer than a window
        out.append(
            json.dumps(
                {
                    "type": "assistant.turn_start" if i % 3 == 0 else "user.message",
                    "data": {"content": "x" * size, "turnId": str(i)},
                    "id": f"id-{i}",
                    "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z",
                    "parentId": None,
                },
                separators=(",", ":"),
            )
        )
    return out


def test_windows_index_the_same_lines_as_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _lines(40)
    text = "\n".join(lines[:20]) + "\n\n  \n" + "\n".join(lines[20:]) + '\n{"type":"user.mes'
    path = tmp_path / "events.jsonl"
    path.write_text(text, encoding="utf-8")
    whole = EventIndex.build(path)
    monkeypatch.setattr(agent.log.replay, "_WINDOW", 8192)  # two pages: most lines cross one
    windowed = EventIndex.build(path)
    assert len(whole) == len(windowed) == 40
    assert list(windowed.offsets) == list(whole.offsets)
    assert windowed.types == whole.types and windowed.turn_starts == whole.turn_starts
    assert windowed.times == whole.times
    assert windowed.size == whole.size == len(text.encode()) - len('{"type":"user.mes')
    # Each offset starts its own line.
    raw = path.read_bytes()
    assert all(raw[o : o + 9] == b'{"type":"' for o in windowed.offsets)
    # The torn line is indexed once it is whole.
    with path.open("a", encoding="utf-8") as fh:
        fh.write('sage","data":{"content":"done"},"id":"z","timestamp":"2026-01-01T00:01:00Z"}\n')
    assert windowed.extend() == 1 and windowed.types[-1] == "user.message"
