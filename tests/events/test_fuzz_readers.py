"""Property-based fuzz of the log readers over mutated real logs: no reader ever crashes.

Seeds: loopdeck's own fixtures and real GitHub Copilot CLI logs
(``tests/fixtures/copilot-real``, see its README for where each comes from). Each
example takes one, damages it (truncation at any byte, byte flips, duplicated,
swapped and dropped lines, huge lines, invalid UTF-8, unknown types, wrong shapes
and field types, missing fields, deep nesting, NUL bytes, CRLF, lone surrogate
escapes, huge numbers, a damaged ``session.json``) and runs every reader over it:

- the session listing (``loopdeck sessions``), read from the log or from the metadata;
- export to Markdown and HTML (the text must be encodable as UTF-8);
- the replay index (offsets, windows, turn positions, elapsed time, pacing);
- watch: following the file while it is written in two pieces, folding what is read;
- resume: rebuilding the model history (it must serialise as the provider gets it),
  the ``--output-format json`` printer, and the log repair. Afterwards the bytes
  that were on disk are still there (a torn tail is kept beside the log), and
  every line the resume appended parses with the official Copilot parser and
  chains to an id that parser accepts.

The Textual views are exercised by a few examples in a pilot (they draw the same
transcript, and each app start costs a second).

CI runs 2,000 examples with a fixed seed (``derandomize``: the same examples every
run); the whole file takes about 45 s on a busy 2-core machine (load 6-9). A larger
run (``LOOPDECK_FUZZ_VIEW_EXAMPLES`` scales the pilot of the views the same way)::

    LOOPDECK_FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest tests/events/test_fuzz_readers.py \\
        -p no:randomly -k readers_never_crash

Result (2026-12-01, 2 cores at load 6-8): 20,000 examples, 0 failures; 299 s wall,
155 s CPU. Before the fixes of issue 12, 300 examples already found crashes of
several kinds (lone surrogate escapes, ``int()`` of damaged metadata fields, ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from copilot.generated.session_events import session_event_from_dict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.events.base import is_event_id
from agent.events.schema import DATA_TYPES, event_from_json
from agent.log.replay import EventIndex, LogFollower, pacing
from agent.log.store import SessionStore
from agent.session.session import Session
from agent.transcript.blocks import NoticeBlock
from agent.transcript.fold import Transcript, fold
from app.export import export_session
from app.headless import HeadlessPrinter
from app.sessions_table import print_sessions
from tests.support.paths import FIXTURES
from tests.support.scripting import scripted

SEEDS = [
    FIXTURES / "loopdeck-session" / "events.jsonl",
    FIXTURES / "copilot-session" / "events.jsonl",
    FIXTURES / "torn" / "events.jsonl",
    *sorted((FIXTURES / "copilot-real").glob("*/events.jsonl")),
]
CORPUS: list[tuple[str, bytes]] = [(p.parent.name, p.read_bytes()) for p in SEEDS]
EXAMPLES = int(os.environ.get("LOOPDECK_FUZZ_EXAMPLES", "2000"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # the same examples on every run: CI is reproducible
    database=None,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
KNOWN_TYPES = sorted(DATA_TYPES)
ODD_STAMPS = [
    "0001-01-01T00:00:00",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31",
    "2025-01-01T00:00:00",  # no zone, beside stamps that have one
    "2025-13-45T99:99:99Z",
    "",
]
ENVELOPE_KEYS = ["type", "data", "id", "timestamp", "parentId", "ephemeral", "agentId"]

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


# --- damaging a log ---------------------------------------------------------------------


class Damaged:
    """A damaged log (and maybe a ``session.json``), and how it was damaged."""

    def __init__(
        self, seed: str, raw: bytes, meta: bytes | None = None, steps: list[str] | None = None
    ) -> None:
        self.seed, self.raw, self.meta, self.steps = seed, raw, meta, steps or []

    def __repr__(self) -> str:  # what a failing example prints: short, and enough to redo it
        return f"Damaged(seed={self.seed!r}, steps={self.steps!r}, meta={self.meta!r:.300})"


Draw = Callable[[st.SearchStrategy[Any]], Any]


def _json_lines(lines: list[bytes]) -> list[int]:
    out = []
    for i, line in enumerate(lines):
        try:
            if isinstance(json.loads(line), dict):
                out.append(i)
        except (ValueError, RecursionError):
            pass
    return out


def _pick_container(draw: Draw, obj: dict[str, Any]) -> dict[str, Any] | list[Any]:
    """A dict or list somewhere in ``obj``: the envelope, its data, or deeper."""
    node: dict[str, Any] | list[Any] = obj
    while draw(st.booleans()):
        children = [v for v in (node.values() if isinstance(node, dict) else node)]
        children = [c for c in children if isinstance(c, dict | list) and c]
        if not children:
            break
        node = draw(st.sampled_from(children))
    return node


def _edit_json(draw: Draw, lines: list[bytes], edit: Callable[[dict[str, Any]], str]) -> str:
    candidates = _json_lines(lines)
    if not candidates:
        return "no JSON line to edit"
    i = draw(st.sampled_from(candidates))
    obj = json.loads(lines[i])
    what = edit(obj)
    end = b"\n" if lines[i].endswith(b"\n") else b""
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    # Nesting too deep for json.dumps goes in as text (see _nest).
    text = _DEEP.sub(lambda m: "[" * int(m[1]) + "]" * int(m[1]), text)
    lines[i] = text.encode("utf-8", "replace") + end
    return f"line {i}: {what}"


def _wrong_type(draw: Draw, obj: dict[str, Any]) -> str:
    if draw(st.booleans()):
        node: dict[str, Any] | list[Any] = obj
        key: Any = draw(st.sampled_from(ENVELOPE_KEYS))
    else:
        node = _pick_container(draw, obj)
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return "empty container"
        key = draw(st.sampled_from(keys))
    value = draw(JSON_VALUES)
    node[key] = value  # type: ignore[index]
    return f"{key!r} = {value!r:.40}"


def _missing(draw: Draw, obj: dict[str, Any]) -> str:
    node = _pick_container(draw, obj)
    if isinstance(node, dict) and node:
        key = draw(st.sampled_from(sorted(node)))
        del node[key]
        return f"deleted {key!r}"
    if isinstance(node, list) and node:
        node.pop(draw(st.integers(0, len(node) - 1)))
        return "deleted an item"
    return "nothing to delete"


def _retype(draw: Draw, obj: dict[str, Any]) -> str:
    new = draw(st.sampled_from(KNOWN_TYPES) | st.text(max_size=20))
    obj["type"] = new
    return f"type = {new!r}"


_DEEP = re.compile(r'"@@deep(\d+)@@"')


def _nest(draw: Draw, obj: dict[str, Any]) -> str:
    depth = draw(st.sampled_from([100, 127, 128, 129, 200, 254, 256, 300, 990, 1000, 3000]))
    value = f"@@deep{depth}@@"
    node = _pick_container(draw, obj)
    if isinstance(node, dict):
        node[draw(st.sampled_from(["deep", *node]))] = value
    else:
        node.append(value)
    return f"nested {depth} deep"


def _surrogate(draw: Draw, obj: dict[str, Any]) -> str:
    node = _pick_container(draw, obj)
    text = draw(st.sampled_from(["\udc00", "a\ud800b", "\udfff\ud800", "x\ud83d"]))
    if isinstance(node, dict):
        node[draw(st.sampled_from(["content", *node]))] = text
    else:
        node.append(text)
    return "lone surrogate"


def _restamp(draw: Draw, obj: dict[str, Any]) -> str:
    stamp = draw(st.sampled_from(ODD_STAMPS))
    key = draw(st.sampled_from(["timestamp", "startTime", "resumeTime"]))
    data = obj.get("data")
    target = data if key != "timestamp" and isinstance(data, dict) else obj
    target[key] = stamp
    return f"{key} = {stamp!r}"


@st.composite
def damaged_logs(draw: Draw) -> Damaged:
    seed, raw = draw(st.sampled_from(CORPUS))
    lines = raw.splitlines(keepends=True)
    steps: list[str] = []
    if draw(st.booleans()):  # a window of the log: smaller, so more examples fit the time
        start = draw(st.integers(0, len(lines) - 1))
        lines = lines[start : start + draw(st.integers(1, 12))]
        steps.append(f"lines {start}+")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(
                [
                    "truncate",
                    "flip",
                    "duplicate",
                    "swap",
                    "drop",
                    "slice",
                    "huge",
                    "utf8",
                    "retype",
                    "wrong_type",
                    "missing",
                    "nest",
                    "nest_raw",
                    "nul",
                    "crlf",
                    "surrogate",
                    "bignum",
                    "odd_line",
                    "timestamp",
                ]
            )
        )
        blob = b"".join(lines)
        n = len(lines)
        match kind:
            case "truncate":
                at = draw(st.integers(0, len(blob)))
                lines = blob[:at].splitlines(keepends=True)
                steps.append(f"truncate at {at}")
            case "flip":
                if blob:
                    data = bytearray(blob)
                    for _ in range(draw(st.integers(1, 3))):
                        at = draw(st.integers(0, len(data) - 1))
                        data[at] ^= draw(st.integers(1, 255))
                    lines = bytes(data).splitlines(keepends=True)
                steps.append("flip")
            case "duplicate" if n:
                i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n))
                lines.insert(j, lines[i])
                steps.append(f"duplicate {i} at {j}")
            case "swap" if n:
                i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
                lines[i], lines[j] = lines[j], lines[i]
                steps.append(f"swap {i} {j}")
            case "drop" if n:
                i = draw(st.integers(0, n - 1))
                del lines[i]
                steps.append(f"drop {i}")
            case "slice" if n:
                i = draw(st.integers(0, n - 1))
                lines = lines[i : i + draw(st.integers(1, 8))]
                steps.append(f"slice from {i}")
            case "huge":
                size = draw(st.sampled_from([70_000, 70_000, 300_000, 1_100_000]))
                if draw(st.booleans()):
                    event = {
                        "type": draw(st.sampled_from(["user.message", "assistant.message"])),
                        "data": {"content": "y" * size, "messageId": "m"},
                        "id": str(uuid.uuid4()),
                        "timestamp": "2025-01-01T00:00:00Z",
                        "parentId": None,
                    }
                    line = json.dumps(event).encode()
                else:
                    line = b"x" * size
                lines.insert(draw(st.integers(0, n)), line + b"\n")
                steps.append(f"huge line ({size})")
            case "utf8":
                junk = draw(
                    st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\xf4\x90"])
                )
                at = draw(st.integers(0, len(blob)))
                lines = (blob[:at] + junk + blob[at:]).splitlines(keepends=True)
                steps.append(f"invalid utf-8 at {at}")
            case "retype":
                steps.append(_edit_json(draw, lines, lambda o: _retype(draw, o)))
            case "wrong_type":
                steps.append(_edit_json(draw, lines, lambda o: _wrong_type(draw, o)))
            case "missing":
                steps.append(_edit_json(draw, lines, lambda o: _missing(draw, o)))
            case "nest":
                steps.append(_edit_json(draw, lines, lambda o: _nest(draw, o)))
            case "nest_raw":
                depth = draw(st.sampled_from([500, 1000, 50_000]))
                opener = draw(st.sampled_from([b"[", b"{", b'{"a":']))
                lines.insert(draw(st.integers(0, n)), opener * depth + b"\n")
                steps.append(f"raw nesting {depth}")
            case "nul":
                at = draw(st.integers(0, len(blob)))
                lines = (blob[:at] + b"\x00" + blob[at:]).splitlines(keepends=True)
                steps.append(f"NUL at {at}")
            case "crlf":
                lines = [line.replace(b"\n", b"\r\n") for line in lines]
                steps.append("CRLF")
            case "surrogate":
                steps.append(_edit_json(draw, lines, lambda o: _surrogate(draw, o)))
            case "bignum":
                digits = draw(st.sampled_from([20, 400, 5000]))
                steps.append(f"a number of {digits} digits")
                lines.insert(
                    draw(st.integers(0, len(lines))),
                    b'{"type":"user.message","data":{"content":"n","n":'
                    + b"9" * digits
                    + b'},"id":"x","timestamp":"t"}\n',
                )
            case "odd_line":
                odd = draw(
                    st.sampled_from(
                        [b"[]", b"null", b"1", b'"s"', b"{}", b" ", b"\t\r", b'{"type":1}']
                    )
                )
                lines.insert(draw(st.integers(0, n)), odd + b"\n")
                steps.append(f"odd line {odd!r}")
            case "timestamp":
                steps.append(_edit_json(draw, lines, lambda o: _restamp(draw, o)))
            case _:
                steps.append(f"{kind}: nothing to do")
    meta = draw(
        st.one_of(
            st.none(),
            st.builds(
                lambda extra: json.dumps(
                    {
                        "id": "x",
                        "cwd": "/tmp",
                        "model": "m",
                        "mode": "autopilot",
                        "startedAt": "2025-01-01T00:00:00Z",
                        "updatedAt": "2025-01-01T00:01:00",
                        "turns": 2,
                        "firstPrompt": "hi",
                        "toolCalls": 1,
                        "outcome": "in progress",
                        "pid": 1,
                        **extra,
                    }
                ).encode("utf-8", "surrogatepass"),
                st.dictionaries(
                    st.sampled_from(
                        ["cwd", "turns", "toolCalls", "startedAt", "updatedAt", "pid", "outcome"]
                    ),
                    JSON_VALUES | st.sampled_from(["a\x00b", "", ".", *ODD_STAMPS]),
                    max_size=3,
                ),
            ),
            st.sampled_from([b"", b"[]", b"null", b"{", b"\xff\xfe", b"[" * 5000]),
        )
    )
    return Damaged(seed, b"".join(lines), meta, steps)


# --- the readers ---------------------------------------------------------------------------


@contextlib.contextmanager
def captured_stdout() -> Iterator[io.StringIO]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield buf


def list_sessions(home: Path) -> None:
    with captured_stdout() as out:
        assert print_sessions(cwd=None, show_all=True) == 0
    out.getvalue().encode("utf-8")
    for summary in SessionStore(home).list_sessions():
        _ = summary.duration


def export_both(log: Path) -> None:
    for fmt in ("md", "html"):
        export_session(log, fmt).encode("utf-8")


def replay_index(log: Path) -> None:
    index = EventIndex.build(log)
    rows = index.read_rows(0, len(index))
    assert len(rows) == len(index)
    fold(rows, replay=True)
    for start in [0, *index.turn_starts[-3:]]:
        index.read_rows(start, start + 50)
        index.turn_of(start)
    for position in range(min(len(index), 50)):
        index.elapsed(position)
        if position:
            pacing(index.times[position - 1], index.times[position], 4.0)


def follow(raw: bytes, folder: Path, cut: int) -> None:
    """What ``watch`` does: poll a file written in two pieces, fold every line read."""
    path = folder / "follow.jsonl"
    path.write_bytes(raw[:cut])
    follower = LogFollower(path)
    transcript = Transcript()
    lines = list(follower.poll())
    _ = follower.pending_partial
    with path.open("ab") as fh:
        fh.write(raw[cut:])
    lines += follower.poll()
    for line in lines:
        try:
            event = event_from_json(line)
        except ValueError:
            continue  # shown as an "unreadable line" mark
        transcript.apply(event)
    transcript.finish_replay()


async def resume(store: SessionStore, sid: str, raw: bytes) -> None:
    session = await Session.resume(store=store, session_id=sid, model=scripted([]))
    try:
        # What the provider would be sent, and what --output-format json prints.
        json.dumps(session.history.with_system("system")).encode("utf-8")
        printer = HeadlessPrinter("json", io.StringIO(), io.StringIO())
        for event in session.backlog:
            printer(event)
        assert isinstance(printer.out, io.StringIO)
        printer.out.getvalue().encode("utf-8")
        # What this run appended: its repairs; opening it is held, unwritten, while the
        # session is not used (agent.session: viewing writes nothing).
        held = {e.id for e in session._held or []}
        added = [e for e in session.backlog[session.restored :] if e.id not in held]
    finally:
        await session.close()
    after = store.events_path(sid).read_bytes()
    whole = raw[: raw.rfind(b"\n") + 1]
    assert after.startswith(whole), "a resume lost bytes that were on disk"
    tail = raw[len(whole) :]
    new = b"".join(e.to_json().encode("utf-8") + b"\n" for e in added)
    assert after.endswith(new)
    middle = after[len(whole) : len(after) - len(new)]
    if middle != tail + b"\n":  # a whole event without its newline stays in place
        assert middle == b""
        if tail:
            (aside,) = store.session_dir(sid).glob("events.torn-*.jsonl")
            assert aside.read_bytes() == tail, "the torn tail was not kept"
    for line in new.splitlines():
        obj = json.loads(line)
        session_event_from_dict(obj)
        assert obj["parentId"] is None or is_event_id(obj["parentId"])


def exercise(home: Path, damaged: Damaged, loop: asyncio.AbstractEventLoop) -> None:
    sid = str(uuid.uuid4())
    folder = home / "session-state" / sid
    folder.mkdir(parents=True)
    try:
        log = folder / "events.jsonl"
        log.write_bytes(damaged.raw)
        if damaged.meta is not None:
            (folder / "session.json").write_bytes(damaged.meta)
        list_sessions(home)
        export_both(log)
        replay_index(log)
        assert log.read_bytes() == damaged.raw, "a reader changed the log"
        follow(damaged.raw, home, len(damaged.raw) // 2)
        loop.run_until_complete(resume(SessionStore(home), sid, damaged.raw))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One loop (and one file-thread pool) for every resume: a new one per example
    would cost more than the readers."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()


@pytest.fixture
def fuzz_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A loopdeck home on a RAM disk when there is one: the file system is not under
    test, and thousands of small writes (and the resume's fsync) would dominate."""
    shm = Path("/dev/shm")
    on_shm = shm.is_dir() and os.access(shm, os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="loopdeck-fuzz-", dir=shm)) if on_shm else tmp_path
    home = base / "home"
    home.mkdir()
    monkeypatch.setenv("LOOPDECK_HOME", str(home))
    try:
        yield home
    finally:
        if on_shm:
            shutil.rmtree(base, ignore_errors=True)


@FUZZ
@given(damaged=damaged_logs())
def test_readers_never_crash_on_damaged_logs(
    fuzz_home: Path, loop: asyncio.AbstractEventLoop, damaged: Damaged
) -> None:
    exercise(fuzz_home, damaged, loop)


@pytest.mark.parametrize("seed", [name for name, _ in CORPUS])
def test_the_undamaged_seeds_pass_every_reader(
    fuzz_home: Path, loop: asyncio.AbstractEventLoop, seed: str
) -> None:
    raw = dict(CORPUS)[seed]
    exercise(fuzz_home, Damaged(seed, raw), loop)


# --- the views ---------------------------------------------------------------------------


async def _view(path: Path, raw: bytes) -> tuple[list[str], list[str]]:
    """Replay ``raw`` (stepping about), then watch it being written in two pieces.
    Returns the warnings each view shows."""
    from app.viewer import ReplayScreen, ViewerApp, WatchScreen

    def warnings(transcript: Transcript) -> list[str]:
        return [b.message for b in transcript.items if isinstance(b, NoticeBlock)]

    path.write_bytes(raw)
    replay = ReplayScreen(path, speed=0)
    async with ViewerApp(replay).run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        for key in ("g", "right", "right", "space", "left", "G"):
            await pilot.press(key)
        await pilot.pause()
        assert pilot.app.is_running
        replayed = warnings(replay.timeline.transcript)
    path.write_bytes(raw[: len(raw) // 2])
    watch = WatchScreen(path)
    async with ViewerApp(watch).run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        with path.open("ab") as fh:
            fh.write(raw[len(raw) // 2 :])
        events = len(EventIndex.build(path))
        while watch.timeline.transcript.events + watch.problems < events:
            await pilot.pause(0.05)  # bounded by the test's timeout if the watch stalls
        assert pilot.app.is_running
        watched = warnings(watch.timeline.transcript)
    return replayed, watched


@settings(FUZZ, max_examples=int(os.environ.get("LOOPDECK_FUZZ_VIEW_EXAMPLES", "4")))
@given(damaged=damaged_logs())
def test_replay_and_watch_draw_damaged_logs(tmp_path: Path, damaged: Damaged) -> None:
    asyncio.run(asyncio.wait_for(_view(tmp_path / "events.jsonl", damaged.raw), 60))


def everything_wrong() -> bytes:
    """The loopdeck fixture with one of each kind of damage, for the views."""
    lines = (FIXTURES / "loopdeck-session" / "events.jsonl").read_bytes().splitlines()
    objs = [json.loads(line) for line in lines]
    objs[1]["parentId"] = 1
    objs[2]["data"]["turnId"] = {"not": "a string"}
    objs[3]["data"]["toolRequests"] = "call them all"
    objs[4]["data"]["arguments"] = {"pattern": "\udc00", "n": 10**30, "deep": [[[[[]]]]]}
    objs[5]["data"].pop("success")
    objs[6]["type"] = "brand.new_type"
    objs[7]["id"] = None
    objs[8]["data"]["content"] = "NUL \x00 and a bell \x07 and [bold]markup[/]"
    damaged = [json.dumps(obj).encode() for obj in objs]
    damaged[9] = damaged[9] + b"\r"
    damaged[10] = damaged[10][:40] + b"\xff\xfe" + damaged[10][40:]
    damaged.insert(
        11, b'{"type":"user.message","data":{"content":' + b"[" * 1000 + b"]" * 1000 + b"}}"
    )
    damaged.insert(
        12, json.dumps({"type": "user.message", "data": {"content": "y" * 300_000}}).encode()
    )
    damaged.insert(13, b"[]")
    damaged.insert(
        14, b'{"type":"session.info","data":{"infoType":"x","message":' + b"9" * 5000 + b"}}"
    )
    return b"\n".join(damaged) + b"\n" + damaged[-1][:50]


def test_replay_and_watch_draw_a_log_with_every_kind_of_damage(tmp_path: Path) -> None:
    raw = everything_wrong()
    replayed, watched = asyncio.run(asyncio.wait_for(_view(tmp_path / "events.jsonl", raw), 60))
    # The nesting, the bare list and the 5,000-digit number: a row each, in place.
    unreadable = [w for w in replayed if "unreadable line" in w]
    assert len(unreadable) == 3, replayed
    assert len([w for w in watched if "unreadable line" in w]) >= 1, watched
