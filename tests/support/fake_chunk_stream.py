"""A provider's streamed reply, as litellm hands it over: an async iterator of chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any


class FakeChunkStream:
    def __init__(self, chunks: list[Any]) -> None:
        self._chunks: Iterator[Any] = iter(chunks)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        for item in self._chunks:
            return item
        raise StopAsyncIteration
