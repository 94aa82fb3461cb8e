"""FakeAcompletion: litellm's ``acompletion`` replaced in-process, for the tests of
requests litellm sends (a reply's room, summaries, refusals), and its fixture."""

from __future__ import annotations

from typing import Any

import pytest

from agent.loop.summary_request import SUMMARY_SYSTEM
from agent.models.litellm_import import import_litellm
from tests.support.fake_chunk_stream import FakeChunkStream


def is_summary(call: dict[str, Any]) -> bool:
    return bool(call["messages"][0]["content"] == SUMMARY_SYSTEM)


class FakeAcompletion:
    """Stands in for litellm.acompletion: answers "ok" (a summary: "THE SUMMARY"), keeps
    every call's kwargs; raises what ``refuse`` holds on the next turns' calls, and
    ``summary_error`` on every summary call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.refuse: list[Exception] = []
        self.summary_error: Exception | None = None

    @property
    def turns(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if not is_summary(c)]

    async def __call__(self, **kwargs: Any) -> FakeChunkStream:
        self.calls.append(kwargs)
        summary = is_summary(kwargs)
        if summary and self.summary_error is not None:
            raise self.summary_error
        if not summary and self.refuse:
            raise self.refuse.pop(0)
        stream_types = import_litellm().types.utils
        text = "THE SUMMARY" if summary else "ok"
        chunk = stream_types.ModelResponseStream(
            choices=[{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]
        )
        return FakeChunkStream([chunk])


@pytest.fixture
def acompletion(monkeypatch: pytest.MonkeyPatch) -> FakeAcompletion:
    fake = FakeAcompletion()
    monkeypatch.setattr(import_litellm(), "acompletion", fake)
    return fake
