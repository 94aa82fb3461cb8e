"""Token counts on the status line and turn headers stay short at any size."""

from __future__ import annotations

import pytest

from widgets.format import tokens


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (None, ""),
        (0, ""),
        (999, "999"),
        (4_000, "4.0k"),
        (99_949, "99.9k"),
        (612_000, "612.0k"),
        (999_949, "999.9k"),
        (999_950, "1.0M"),
        (48_956_000, "49.0M"),
    ],
)
def test_token_counts_are_short(count: int | None, shown: str) -> None:
    assert tokens(count) == shown
