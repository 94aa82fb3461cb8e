"""Event ids and timestamps: made cheaply, still what the official schema expects."""

from __future__ import annotations

import os
import re
import uuid
from datetime import UTC, datetime

from agent.events.base import new_event_id, now_iso
from agent.events.schema import Event, SessionIdleData
from agent.transcript.blocks import parse_timestamp

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def test_ids_are_unique_version_4_uuids() -> None:
    ids = [new_event_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for text in ids[::997]:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text


def test_a_forked_child_does_not_repeat_the_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next ids and leave at once
        try:
            os.write(write, " ".join(new_event_id() for _ in range(50)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        child = set(pipe.read().decode().split())
    parent = {new_event_id() for _ in range(50)}
    assert len(child) == 50
    assert not child & parent


def test_stamps_are_utc_milliseconds_and_current() -> None:
    before = datetime.now(UTC)
    stamps = [now_iso() for _ in range(2_000)]
    after = datetime.now(UTC)
    for stamp in stamps:
        assert STAMP.match(stamp), stamp
        parsed = parse_timestamp(stamp)
        assert parsed is not None
        # Cut to the millisecond, never rounded up past the clock.
        assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after
    assert stamps == sorted(stamps)


def test_new_events_parse_with_the_official_parser() -> None:
    from copilot.generated.session_events import session_event_from_dict

    event = Event.new(SessionIdleData(), parent_id=new_event_id())
    parsed = session_event_from_dict(event.wire())
    assert str(parsed.id) == event.id
    assert str(parsed.parent_id) == event.parent_id
