"""The replay index, playback pacing, and following a log another process writes."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.events.schema import AssistantTurnStartData, Event, UserMessageData
from agent.log.replay import (
    GAP_LIMIT,
    EventIndex,
    LogFollower,
    pacing,
    parse_speed,
    speed_label,
)


def line(etype: str, ts: str, **data: object) -> str:
    return json.dumps({"type": etype, "data": data, "id": ts, "timestamp": ts, "parentId": None})


def write_log(path: Path, lines: list[str], tail: str = "") -> Path:
    path.write_text("".join(f"{x}\n" for x in lines) + tail)
    return path


def test_index_finds_offsets_types_turns_and_reads_a_window(tmp_path: Path) -> None:
    lines = [
        line("session.start", "2026-01-01T00:00:00.000Z", sessionId="s"),
        line("user.message", "2026-01-01T00:00:01.000Z", content="hi"),
        line("assistant.turn_start", "2026-01-01T00:00:02.000Z", turnId="0"),
        "",
        line("assistant.turn_end", "2026-01-01T00:00:04.500Z", turnId="0"),
        line("assistant.turn_start", "2026-01-01T00:00:05.000Z", turnId="1"),
    ]
    path = write_log(tmp_path / "events.jsonl", lines, tail='{"type":"assistant.tu')
    index = EventIndex.build(path)
    assert index.types == [
        "session.start",
        "user.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.turn_start",
    ]
    assert index.turn_starts == [2, 4]
    assert index.turn_of(3) == 1 and index.turn_of(5) == 2
    assert index.elapsed(3) == pytest.approx(4.5)
    window = index.read(1, 3)
    assert [e.type for e in window] == ["user.message", "assistant.turn_start"]
    # The torn tail is not indexed until it is whole.
    with path.open("a") as fh:
        fh.write('rn_end","data":{"turnId":"1"},"id":"x","timestamp":"2026-01-01T00:00:06Z"}\n')
    assert index.extend() == 1
    assert index.types[-1] == "assistant.turn_end"


def test_index_of_a_folder_and_of_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text("")
    index = EventIndex.build(tmp_path)
    assert len(index) == 0 and index.read(0, 10) == [] and index.elapsed(0) == 0.0


def test_pacing_follows_timestamps_at_speed_and_shortens_long_gaps() -> None:
    assert pacing(10.0, 11.0, 1.0).seconds == pytest.approx(1.0)
    assert pacing(10.0, 11.0, 4.0).seconds == pytest.approx(0.25)
    long = pacing(10.0, 70.0, 2.0)
    assert long.seconds == pytest.approx(GAP_LIMIT / 2) and long.shortened_from == 60.0
    assert pacing(10.0, 70.0, 0.0).seconds == 0.0  # instant
    assert pacing(None, 70.0, 1.0).seconds == 0.0


@pytest.mark.parametrize(
    ("text", "speed"), [("1", 1.0), ("2x", 2.0), ("16×", 16.0), ("instant", 0.0)]
)
def test_speeds(text: str, speed: float) -> None:
    assert parse_speed(text) == speed
    assert speed_label(speed) in ("instant", f"{speed:g}×")


def test_bad_speed_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown speed"):
        parse_speed("fast")


def test_follower_yields_whole_lines_and_survives_a_crash_mid_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("")
    follower = LogFollower(path)
    first = Event.new(UserMessageData(content="go"), None).to_json()
    second = Event.new(AssistantTurnStartData(turn_id="0"), None).to_json()
    with path.open("a") as fh:
        fh.write(first + "\n" + second[:15])
    assert list(follower.poll()) == [first]
    assert follower.pending_partial == second[:15]
    with path.open("a") as fh:
        fh.write(second[15:] + "\n")
    assert list(follower.poll()) == [second]
    assert list(follower.poll()) == []
    # The writer crashed leaving half a line; a new writer terminates it and goes on.
    with path.open("a") as fh:
        fh.write('{"type":"assist')
    assert list(follower.poll()) == []
    with path.open("a") as fh:
        fh.write("\n" + first + "\n")
    assert list(follower.poll()) == ['{"type":"assist', first]


def test_follower_starts_over_when_the_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("a\nb\n")
    follower = LogFollower(path)
    assert list(follower.poll()) == ["a", "b"]
    path.write_text("c\n")  # truncated and rewritten
    assert list(follower.poll()) == ["c"]


def test_follower_reads_nothing_from_a_log_it_cannot_open(tmp_path: Path) -> None:
    # Deleted between the stat and the open, or unreadable: the board polls many
    # logs on one timer, and one of them must not stop it.
    path = tmp_path / "events.jsonl"
    path.write_text("a\n")
    follower = LogFollower(path)
    assert list(follower.poll()) == ["a"]
    path.unlink()
    path.mkdir()  # stat works, open fails (as root, a chmod would not)
    assert list(follower.poll()) == []


def test_read_slots_keep_positions_aligned_across_a_corrupt_line(tmp_path: Path) -> None:
    lines = [
        line("user.message", "2026-01-01T00:00:00.000Z", content="one"),
        '{"type": "user.message", "data": {oops',
        line("user.message", "2026-01-01T00:00:02.000Z", content="three"),
    ]
    index = EventIndex.build(write_log(tmp_path / "events.jsonl", lines))
    slots = index.read_slots(0, len(index))
    assert len(slots) == len(index) == 3
    assert slots[1] is None
    assert [e.data.content for e in index.read(0, 3)] == ["one", "three"]  # type: ignore[attr-defined]
    (third,) = index.read_slots(2, 3)  # reading from a later position lands on its line
    assert third is not None and third.data.content == "three"  # type: ignore[attr-defined]


def test_index_reads_the_envelopes_own_type_and_timestamp(tmp_path: Path) -> None:
    # Data can hold keys named "type" and "timestamp" (attachments, tool results,
    # hook payloads); the index must take the envelope's, whatever the key order.
    inner = {"type": "file", "timestamp": "2001-01-01T00:00:00.000Z", "note": "x" * 600}
    after_data = line("user.message", "2026-01-01T00:00:01.000Z", content="hi", attachments=[inner])
    before_data = json.dumps(
        {
            "timestamp": "2026-01-01T00:00:02.000Z",
            "type": "tool.execution_complete",
            "id": "i",
            "data": {"result": inner},
        }
    )
    ephemeral = json.dumps(
        {
            "type": "assistant.message_delta",
            "data": {"deltaContent": json.dumps(inner)},
            "id": "e",
            "timestamp": "2026-01-01T00:00:03.000Z",
            "parentId": "p",
            "ephemeral": True,
        }
    )
    index = EventIndex.build(
        write_log(tmp_path / "events.jsonl", [after_data, before_data, ephemeral])
    )
    assert index.types == ["user.message", "tool.execution_complete", "assistant.message_delta"]
    assert index.times == [datetime(2026, 1, 1, 0, 0, s, tzinfo=UTC).timestamp() for s in (1, 2, 3)]


_SHAPES = [
    '{"type":"assistant.turn_start","data":{"turnId":"0"}}',
    '{"type":"assistant.turn_start","data":{},"agentId":"sub-1"}',
    '{"type":"user.message","data":{"content":"{\\"type\\":\\"x\\"}"}}',
    '{"id":"1","type":"tool.execution_complete","data":{}}',  # another writer's order
    '{ "type" : "session.start", "data": {} }',
    '{"type":"","data":{"type":"inner"}}',  # an empty type: the next one found is used
    '{"type":"assistant.tu',  # cut short
    "",
    "   ",
    "not json",
]


@pytest.mark.parametrize("seed", range(12))
def test_the_index_reads_types_as_the_envelope_pattern_does(tmp_path: Path, seed: int) -> None:
    """Lines that start with their type are read there without the pattern; every
    other line the pattern reads; both give what the pattern alone gives."""
    rng = random.Random(seed)
    lines = [rng.choice(_SHAPES) for _ in range(60)]
    path = write_log(tmp_path / "events.jsonl", lines)
    index = EventIndex.build(path)
    pattern = re.compile(r'"type"\s*:\s*"([^"]+)"')
    expected: list[tuple[int, str]] = []
    offset = 0
    for text in lines:
        if text.strip():
            found = pattern.search(text)
            expected.append((offset, found.group(1) if found else "?"))
        offset += len(text.encode()) + 1
    assert list(zip(index.offsets, index.types, strict=True)) == expected
    # A sub-agent's turn is not a turn of the session.
    kept = [text for text in lines if text.strip()]
    turns = [i for i, (_, t) in enumerate(expected) if t == "assistant.turn_start"]
    assert index.turn_starts == [i for i in turns if "agentId" not in kept[i]]
