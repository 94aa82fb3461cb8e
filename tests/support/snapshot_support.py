"""Helpers for the SVG snapshot tests: pinned clock and ids, scripted apps, waiting.

A snapshot must come out byte-identical run after run, so everything that could
differ is pinned here:

* every event timestamp comes from :class:`FakeClock`, which advances a fixed step
  per call (turn and tool durations are then a function of the event count only);
* session, event and message ids come from :class:`FakeUuid` (a counter);
* the prompt's cursor does not blink;
* the screenshot is taken only once the session is idle and nothing is streaming,
  spinning or mounting (:func:`settle`; :func:`keys_then_settle` for replay);
* a shot taken mid-turn waits for the reply's text (:func:`text_shown`) and closes the
  session before the app exits (:func:`close_session_on_exit`).
"""

from __future__ import annotations

import asyncio
import types
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot

import agent.events.base
import agent.loop.model_call
import agent.session.session
from agent.events.schema import Mode
from agent.session.session import Session
from app.app import LoopdeckApp
from tests.support.scripting import scripted
from widgets.tool_card import ToolCard
from widgets.turn_view import TurnView

TERMINAL = (100, 34)  # (columns, rows) used by every snapshot unless a test needs more
SETTLE_TIMEOUT = 10.0  # seconds a scripted session may take to go idle


class FakeClock:
    """Stands in for ``agent.events.base.now_iso``: each call is ``step`` later than the last."""

    def __init__(
        self,
        start: datetime = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC),
        step: timedelta = timedelta(milliseconds=140),
    ) -> None:
        self.now = start
        self.step = step
        self.calls = 0

    def __call__(self) -> str:
        stamp = self.now
        self.now += self.step
        self.calls += 1
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class FakeUuid:
    """Stands in for ``uuid.uuid4``: ``5eedcafe-0000-0000-0000-<counter>``."""

    PREFIX = 0x5EEDCAFE

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> uuid.UUID:
        self.count += 1
        return uuid.UUID(int=(self.PREFIX << 96) | self.count)


def pin_determinism(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeClock, FakeUuid]:
    """Patch every clock and id source the session, loop and events read."""
    clock = FakeClock()
    ids = FakeUuid()
    # Event.new looks ``now_iso`` up in agent.events.base at call time; agent.session.session
    # imported the name itself (session start time, metadata).
    monkeypatch.setattr(agent.events.base, "now_iso", clock)
    monkeypatch.setattr(agent.session.session, "now_iso", clock)
    # Only these modules' view of ``uuid`` changes; Textual and the rest keep the real one.
    fake_uuid = types.SimpleNamespace(uuid4=ids, UUID=uuid.UUID)
    for module in (agent.events.base, agent.session.session, agent.loop.model_call):
        monkeypatch.setattr(module, "uuid", fake_uuid)
    return clock, ids


def make_workspace(root: Path) -> Path:
    """A tiny project for the tools to read. Its absolute path is never drawn."""
    ws = root / "ws"
    (ws / "shop").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "shop" / "__init__.py").write_text("")
    (ws / "shop" / "cart.py").write_text(
        '"""A shopping cart."""\n'
        "\n"
        "from shop.pricing import apply_discount\n"
        "\n"
        "\n"
        "class Cart:\n"
        "    def __init__(self) -> None:\n"
        "        self.items: list[tuple[str, int, float]] = []\n"
        "\n"
        "    def add(self, name: str, qty: int, price: float) -> None:\n"
        "        # TODO: reject qty <= 0\n"
        "        self.items.append((name, qty, price))\n"
        "\n"
        "    def total(self, code: str | None = None) -> float:\n"
        "        subtotal = sum(qty * price for _, qty, price in self.items)\n"
        "        return apply_discount(subtotal, code)\n"
    )
    (ws / "shop" / "pricing.py").write_text(
        '"""Discount codes."""\n'
        "\n"
        'CODES = {"SPRING10": 0.10, "VIP25": 0.25}\n'
        "\n"
        "\n"
        "def apply_discount(amount: float, code: str | None) -> float:\n"
        "    # TODO: round to cents\n"
        "    return amount * (1 - CODES.get(code or '', 0.0))\n"
    )
    (ws / "tests" / "test_cart.py").write_text(
        "from shop.cart import Cart\n"
        "\n"
        "\n"
        "def test_total() -> None:\n"
        "    cart = Cart()\n"
        '    cart.add("pen", 2, 1.5)\n'
        "    assert cart.total() == 3.0\n"
        "    # TODO: cover discount codes\n"
    )
    return ws


def make_app(
    workspace: Path,
    turns: list[dict[str, Any]],
    *,
    prompt: str | None = None,
    mode: Mode = "interactive",
    nudge_cap: int | None = None,
) -> LoopdeckApp:
    """The app on a scripted model in ``workspace``, as ``loopdeck`` would open it."""
    model = scripted(turns, label="snapshot")

    async def opener() -> Session:
        return await Session.create(
            model=model,
            cwd=workspace,
            mode=mode,
            max_autopilot_continues=nudge_cap if nudge_cap is not None else 5,
        )

    return LoopdeckApp(opener, initial_prompt=prompt, nudge_cap=nudge_cap)


async def wait_for(
    pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = SETTLE_TIMEOUT
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the app to settle")
        await pilot.pause(0.02)


def settle(expect_turns: int = 0) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A ``run_before`` that waits until the session has run and gone idle.

    ``expect_turns``: how many turns the script plays; 0 waits only for the session
    to open (the empty start screen).
    """

    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, LoopdeckApp)
        app.prompt.cursor_blink = False

        def idle() -> bool:
            session = app.session
            if session is None:
                return False
            transcript = app.timeline.transcript
            return (
                transcript.turns >= expect_turns
                and not session.busy
                and not transcript.busy
                and session.queued == 0
            )

        await wait_for(pilot, idle)
        # Let pending mounts, Markdown updates and stream workers finish.
        await pilot.pause()
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: not _animating(app))
        await pilot.pause()

    return run_before


def _animating(app: LoopdeckApp) -> bool:
    """True while any tool card spins or any turn still streams or has text to flush."""
    from widgets.tool_card import ToolCard
    from widgets.turn_view import TurnView

    spinning = any(card.is_spinning for card in app.query(ToolCard))
    streaming = any(
        turn._flush_timer is not None
        or turn._pending
        or turn._stream is not None
        or getattr(turn, "_replacing", 0)
        for turn in app.query(TurnView)
    )
    return spinning or streaming


def choose_level(
    key: str, then: Callable[[Pilot[Any]], Awaitable[None]] | None = None
) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A ``run_before`` that answers the permission level asked before autopilot with
    ``key`` (1 all tools, 2 edits only, 3 my rules), then runs ``then``."""
    from widgets.permission_level import PermissionLevelScreen

    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await wait_for(
            pilot, lambda: isinstance(app.screen, PermissionLevelScreen) and app.screen.arming.armed
        )
        await pilot.press(key)
        await wait_for(pilot, lambda: not isinstance(app.screen, PermissionLevelScreen))
        if then is not None:
            await then(pilot)

    return run_before


def text_shown(turn: TurnView) -> bool:
    """The turn's streamed reply is all in its Markdown widget (the turn still runs)."""
    stream = turn._stream
    body = turn._body
    return (
        turn._flush_timer is None
        and not turn._pending
        and (stream is None or not stream._pending)
        and body is not None
        and getattr(body, "source", None) == turn.block.text
    )


def close_session_on_exit(app: LoopdeckApp) -> None:
    """The screenshot exits the app mid-turn; close the session first, as quitting does,
    so the waiting turn is aborted while the app still runs (not torn down after it)."""
    exit_now = app.exit

    def exit_after_close(result: Any = None, return_code: int = 0, message: Any = None) -> None:
        async def close_then_exit() -> None:
            if app.session is not None:
                await app.session.close()
            exit_now(result, return_code, message)

        app.call_later(close_then_exit)

    app.exit = exit_after_close  # type: ignore[method-assign]


def _animating_replay(app: App[Any]) -> bool:
    """The replay viewer's :func:`_animating`: a card spins or a turn streams or has text
    to flush."""
    spinning = any(card.is_spinning for card in app.query(ToolCard))
    streaming = any(
        turn._flush_timer is not None or turn._pending or turn._stream is not None
        for turn in app.query(TurnView)
    )
    return spinning or streaming


def keys_then_settle(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A ``run_before`` for replay: press ``keys``, then wait until nothing animates."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while _animating_replay(pilot.app):
            assert loop.time() < deadline, "the timeline kept animating"
            await pilot.pause(0.02)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    return run_before


@pytest.fixture(autouse=True)
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clock and ids pinned for every test of a module that imports this (autouse)."""
    pin_determinism(monkeypatch)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The :func:`make_workspace` project, with HOME its parent: the welcome line shows
    the workspace relative to $HOME, "~/ws" on every machine."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return make_workspace(tmp_path)


def token_usage(prompt: int, completion: int) -> dict[str, int]:
    """A scripted turn's ``usage``."""
    return {"prompt_tokens": prompt, "completion_tokens": completion}
