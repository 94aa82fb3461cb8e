"""Counting a log's lines of a type by their head (agent.log.line_heads): in this process,
a chunk at a time, and by ripgrep in its own process; both agree with a plain split
of the file into lines, and a ripgrep that fails or hangs leaves the count to this
process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent.log.line_heads
from agent.log.line_heads import RipgrepCount, count_before, last_before, start_count
from agent.system.ripgrep import find_rg

TURN = "assistant.turn_start"
# Lines a log may hold: the type's own, other types, the head mid-line (a tool's
# output quoting it), a line that only starts like it, and bytes a text search may
# balk at (NUL, CR, invalid UTF-8).
LINES = [
    b'{"type":"assistant.turn_start","data":{}}',
    b'{"type":"assistant.turn_start_x","data":{}}',
    b'{"type":"assistant.message","data":{"content":"{\\"type\\":\\"assistant.turn_start\\""}}',
    b'{"x":1,"type":"assistant.turn_start"}',
    b'  {"type":"assistant.turn_start"}',
    b'{"type":"assistant.turn_start"\x00\xff\xfe}',
    b'{"type":"user.message"}\x00{"type":"assistant.turn_start"}',
    b'{"type":"assistant.turn_start","data":{}}\r',
    b"",
    b"not json at all",
]


def _reference(data: bytes, stop: int) -> tuple[int, int]:
    """(lines of TURN starting before ``stop``, the offset of the last of them or -1)."""
    head = b'{"type":"' + TURN.encode() + b'"'
    count, last, offset = 0, -1, 0
    for line in data.split(b"\n"):
        if offset < stop and line.startswith(head):
            count, last = count + 1, offset
        offset += len(line) + 1
    return count, last


lines_st = st.lists(st.sampled_from(LINES), max_size=40)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=lines_st, newline_at_end=st.booleans(), chunk=st.integers(40, 200), cut=st.data())
def test_counting_here_agrees_with_splitting_the_file_into_lines(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[bytes],
    newline_at_end: bool,
    chunk: int,
    cut: st.DataObject,
) -> None:
    data = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    # Chunks smaller than some lines: the head spans the seam between two reads.
    monkeypatch.setattr(agent.log.line_heads, "COUNT_CHUNK", chunk)
    stop = cut.draw(st.integers(0, len(data)))
    expected = _reference(data, stop)
    assert (count_before(path, TURN, stop), last_before(path, TURN, stop)) == expected


needs_rg = pytest.mark.skipif(find_rg() is None, reason="ripgrep (rg) is not installed")


@needs_rg
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=lines_st, newline_at_end=st.booleans(), bom=st.booleans())
def test_ripgrep_counts_what_this_process_counts(
    tmp_path: Path, lines: list[bytes], newline_at_end: bool, bom: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    if bom:  # a UTF-16 byte-order mark must not make ripgrep read the file as UTF-16
        data = b"\xff\xfe" + data
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    counting = RipgrepCount.start(path, TURN)
    assert counting is not None
    assert counting.total() == _reference(data, len(data))[0] == count_before(path, TURN, len(data))


def _fake_rg(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-rg"
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize(
    "body",
    [
        "import sys\nsys.stderr.write('rg: boom')\nsys.exit(2)\n",  # an error
        "print('12 lines')\n",  # not a count
        "import sys\nsys.exit(1)\n",  # "no match" -- but with a match count it means none
    ],
)
def test_a_failing_ripgrep_gives_no_count(tmp_path: Path, body: str) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(LINES[0] + b"\n")
    counting = RipgrepCount.start(path, TURN, rg=_fake_rg(tmp_path, body))
    assert counting is not None
    expected = 0 if "exit(1)" in body else None
    assert counting.total() == expected
    assert counting.total() == expected  # asked again: the same, ripgrep not rerun


def test_a_hung_ripgrep_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(LINES[0] + b"\n")
    monkeypatch.setattr(agent.log.line_heads, "RG_TIMEOUT", 0.2)
    counting = RipgrepCount.start(
        path, TURN, rg=_fake_rg(tmp_path, "import time\ntime.sleep(600)\n")
    )
    assert counting is not None
    assert counting.total() is None
    assert counting._process.returncode is not None  # killed, and waited for


def test_ripgrep_is_started_only_where_it_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(LINES[0] + b"\n")
    monkeypatch.setattr(agent.log.line_heads, "find_rg", lambda: "/bin/true")
    assert start_count(path, TURN) is None  # a short file: counted here
    assert start_count(path, TURN, before=agent.log.line_heads.RG_MIN_BYTES - 1) is None
    monkeypatch.setattr(agent.log.line_heads, "RG_MIN_BYTES", 0)
    started = start_count(path, TURN)
    assert started is not None
    started.cancel()
    assert start_count(path, "not a type; rm -rf /") is None  # only plain type names
    assert start_count(tmp_path / "missing", TURN) is None
    monkeypatch.setattr(agent.log.line_heads, "find_rg", lambda: None)
    assert start_count(path, TURN) is None
