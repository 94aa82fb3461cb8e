"""The envelope of every event, the base of its data, and the id and timestamp
it is stamped with.

The wire format is the Copilot SDK's (`session-events.schema.json`): an envelope
``{type, data, id, timestamp, parentId, ephemeral?}`` with camelCase keys inside
``data``. Each data model carries its wire ``TYPE``. The models of the data are in
the ``agent/events_*.py`` modules; :mod:`agent.events.schema` gathers them and parses lines.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class EventData(BaseModel):
    """Base of every event's ``data``. Extra keys read from a file are kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=False,
        defer_build=True,
    )
    TYPE: ClassVar[str] = ""
    EPHEMERAL: ClassVar[bool] = False

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class UnknownData(EventData):
    """Data of an event type loopdeck does not know: kept verbatim, shown raw."""

    model_config = ConfigDict(extra="allow")
    raw: dict[str, Any] = Field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        return dict(self.raw)


def now_iso() -> str:
    """ISO 8601 UTC with millisecond precision and a ``Z``, as Copilot writes it.

    Every event is stamped, up to ~100,000 a second while a reply streams: the
    date and time down to the second is formatted once per second, not per event.
    """
    global _stamp_second, _stamp_prefix
    now = time.time()
    second = int(now)
    if second != _stamp_second:
        _stamp_prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _stamp_second = second
    return f"{_stamp_prefix}.{int((now - second) * 1000):03d}Z"


_stamp_second = -1
_stamp_prefix = ""
# One encoder for every line written, as json.dumps would build per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# The fields Event.new sets (model_construct's fields_set for the same call).
_NEW_FIELDS = frozenset(("type", "data", "id", "timestamp", "parent_id", "ephemeral"))
_set_attr = object.__setattr__


def new_event_id() -> str:
    """A fresh event id: a random (version 4) UUID's text.

    Drawn from a per-process random base and a counter, not ``uuid.uuid4()`` per
    event (a urandom call and a UUID object each time): ids stay unique — 74 random
    bits per process, then the counter — and parse as UUIDs, as the official schema
    requires of ``id`` and ``parentId``.
    """
    return f"{_ID_BASE}{next(_id_counter):012x}"


def _id_base() -> str:
    # 8-4-4-4 hex digits of a random UUID v4 (version and variant bits kept); the
    # last 12 digits come from the counter.
    return str(uuid.uuid4())[:24]


def _reseed() -> None:
    global _ID_BASE, _id_counter
    _ID_BASE = _id_base()
    _id_counter = itertools.count(int.from_bytes(os.urandom(4), "big"))


_ID_BASE = ""
_id_counter = itertools.count()
_reseed()
# A forked child must not hand out its parent's next ids.
os.register_at_fork(after_in_child=_reseed)


class Event(BaseModel):
    """One envelope. ``type`` is the wire type; ``data`` its model."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    type: str
    data: EventData
    id: str
    timestamp: str
    parent_id: str | None = None
    ephemeral: bool = False
    # Set on the events of a sub-agent: the id of the run (its tool call's id).
    agent_id: str | None = None
    # Set on an event that belongs in the log but was not written there: the log
    # failed at or before it (agent.log_writer). Shown on the wire as ``"unsaved": true``.
    unsaved: bool = False

    @classmethod
    def new(cls, data: EventData, parent_id: str | None) -> Event:
        # Every field is known good here: no validation (a hot path while streaming),
        # and not model_construct either, whose per-field default handling cost more
        # than building and writing the event. What it would set is set directly
        # (tests/events/test_conformance.py holds the two equal).
        event = cls.__new__(cls)
        _set_attr(
            event,
            "__dict__",
            {
                "type": data.TYPE,
                "data": data,
                "id": new_event_id(),
                "timestamp": now_iso(),
                "parent_id": parent_id,
                "ephemeral": data.EPHEMERAL,
                "agent_id": None,
                "unsaved": False,
            },
        )
        _set_attr(event, "__pydantic_fields_set__", set(_NEW_FIELDS))
        _set_attr(event, "__pydantic_extra__", None)
        _set_attr(event, "__pydantic_private__", None)
        return event

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "data": self.data.wire(),
            "id": self.id,
            "timestamp": self.timestamp,
            "parentId": self.parent_id,
        }
        if self.ephemeral:
            out["ephemeral"] = True
        if self.agent_id is not None:
            out["agentId"] = self.agent_id
        if self.unsaved:
            out["unsaved"] = True
        return out

    def to_json(self) -> str:
        text = _ENCODER.encode(self.wire())
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate (the model can send one as a JSON escape) cannot be
                # written as UTF-8: keep it as the JSON escape it came as.
                text = text.encode("utf-8", "backslashreplace").decode("utf-8")
        return text

    @property
    def known(self) -> bool:
        return not isinstance(self.data, UnknownData)


def is_event_id(value: object) -> bool:
    """Whether ``value`` is an id the official parser accepts (a UUID), so that a
    new event may name it as its ``parentId``."""
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
