"""The app, in a fresh interpreter, sending its first message to a real-provider model.

Run as ``python -m tests.support.first_message_probe BASE_URL WORKSPACE RESULT.json [MODEL]`` (a new
process: litellm must not be imported yet, or its import cannot be watched). An import
hook holds the import of litellm until the user's message is drawn; if the import
happens on the UI's thread it is not held (that would freeze the app for good) but
recorded. The event loop's longest stall from Enter to the end of the turn is recorded
too. The result JSON says what was seen; tests/test_first_message.py judges it.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import importlib.machinery
import json
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

HOLD_LIMIT = 60.0  # seconds the import is held at most, so a failing run still ends
WAIT = 60.0  # seconds any wait for the app may take
# The turn itself, against a real server on a loaded machine: a small CPU model reads
# loopdeck's ~3k-token prompt at 35-70 tokens/s. Only a hang should fail here.
TURN_WAIT = 900.0


class FakeImportGate(importlib.abc.MetaPathFinder):
    """Sees the first import of litellm: on which thread, and holds it (off the UI's
    thread) until :attr:`release` is set. Finds nothing itself: the import goes on."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.held = threading.Event()  # the import is waiting at the gate
        self.on_ui_thread: bool | None = None

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "litellm" or self.on_ui_thread is not None:
            return None
        self.on_ui_thread = threading.current_thread() is threading.main_thread()
        if not self.on_ui_thread:
            self.held.set()
            self.release.wait(HOLD_LIMIT)
        return None


async def run(base_url: str, workspace: Path, model: str = "openai/gpt-4o") -> dict[str, Any]:
    from agent.session.session import Session
    from app.app import LoopdeckApp
    from app.model_setup import make_model
    from widgets.message_blocks import UserMessageView
    from widgets.turn_view import TurnView

    gate = FakeImportGate()
    sys.meta_path.insert(0, gate)
    idle = asyncio.Event()

    async def opener() -> Session:
        session = await Session.create(
            model=make_model(model, api_base=base_url), cwd=workspace, store=None
        )
        session.subscribe(lambda event: idle.set() if event.type == "session.idle" else None)
        return session

    result: dict[str, Any] = {}
    app = LoopdeckApp(opener)
    async with app.run_test(size=(100, 36)) as pilot:

        async def until(check: Any, what: str, wait: float = WAIT) -> None:
            deadline = time.monotonic() + wait
            while not check():
                if time.monotonic() > deadline:
                    raise AssertionError(f"timed out waiting for {what}")
                await pilot.pause(0.01)

        await until(lambda: app.session is not None, "the session to open")
        assert "litellm" not in sys.modules, "litellm was imported before the first message"
        lag = 0.0
        ticking = True

        async def ticker() -> None:
            nonlocal lag
            last = time.perf_counter()
            while ticking:
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                lag = max(lag, now - last - 0.01)
                last = now

        ticks = asyncio.create_task(ticker())
        app.prompt.text = "hello there"
        await pilot.press("enter")

        def drawn() -> bool:
            users = list(app.query(UserMessageView))
            return bool(users) and users[0].block.content == "hello there"

        # The message drawn and the turn busy, with litellm's import still held (when
        # it is not on this thread; on it, this wait comes after the import).
        await until(lambda: drawn() or gate.on_ui_thread is not None, "the user's message")
        await until(drawn, "the user's message")
        result["drawn_while_import_held"] = gate.held.is_set() and not gate.release.is_set()
        result["busy_when_drawn"] = app.status.busy
        gate.release.set()
        await until(idle.is_set, "session.idle", TURN_WAIT)
        ticking = False
        await ticks
        result["litellm_imported_on_ui_thread"] = gate.on_ui_thread
        result["max_loop_lag"] = lag
        result["turn_status"] = [str(t.block.status) for t in app.query(TurnView)]
    return result


def main(argv: list[str]) -> int:
    base_url, workspace, out, *model = argv
    result = asyncio.run(run(base_url, Path(workspace), *model))
    Path(out).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
