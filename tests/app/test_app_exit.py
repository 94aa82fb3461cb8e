"""However the app ends, its session is closed: the turn ends, the log is whole.

Ctrl+Q / Ctrl+C close the session before exiting; an exit that does not pass there (an
error in a widget, the terminal closing, ``App.exit``) must not leave the running turn
unfinished in the log, events unwritten, or the session's lock held.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from agent.log.lock import in_use_by
from agent.log.store import SessionStore, read_events
from tests.support.app_harness import send
from tests.support.cli import TIMEOUT, write_script
from tests.support.permission_level import Harness, opened
from tests.support.permission_ui import EDIT, GREET, SIZE
from tests.support.pilot import wait_for
from tests.support.pty_app import AppInPty


async def test_an_exit_that_skips_quit_still_ends_the_turn_and_writes_the_log(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text(GREET, encoding="utf-8")
    store = SessionStore(tmp_path / "home")
    h = Harness(workspace, turns=[{"text": "Editing.", "tool_calls": [EDIT]}], store=store)
    async with h.app.run_test(size=SIZE) as pilot:
        await opened(pilot, h)
        await send(pilot, h, "fix the greeting")
        # The turn waits on the user's answer to the edit's permission prompt.
        await wait_for(pilot, lambda: h.recorder.of("permission.requested"), "the prompt")
        session_id = h.session.id
        h.app.exit()

    folder = store.session_dir(session_id)
    kinds = [event.type for event in read_events(folder).events]
    # The prompt is closed unanswered and the turn ends aborted (idle is never written).
    assert kinds[-4:] == [
        "permission.completed",
        "tool.execution_complete",
        "assistant.turn_end",
        "abort",
    ], kinds[-6:]
    assert in_use_by(folder) is None  # the lock is released


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_the_terminal_closing_ends_the_turn_and_releases_the_session(
    signum: int, tmp_path: Path, loopdeck_home: Path
) -> None:
    """SIGHUP (the terminal window closed) or SIGTERM while a prompt waits: the real app
    exits as on Ctrl+Q, so the log says how the turn ended and nobody holds the session."""
    pytest.importorskip("pty")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text(GREET, encoding="utf-8")
    script = write_script(tmp_path / "s.json", [{"text": "Editing.", "tool_calls": [EDIT]}])
    argv = ["-m", "app.cli", "fix the greeting", "--model", f"scripted:{script}"]
    env = {**os.environ, "LOOPDECK_HOME": str(loopdeck_home), "COLUMNS": "100", "LINES": "30"}

    def logs() -> list[Path]:
        return list((loopdeck_home / "session-state").glob("*/events.jsonl"))

    def asking() -> bool:
        return any("permission.requested" in log.read_text(encoding="utf-8") for log in logs())

    with AppInPty(argv, env, workspace) as app:
        app.read_until(lambda _: asking(), TIMEOUT)
        assert asking(), "the app never asked about the edit"
        os.kill(app.pid, signum)
        status = app.wait_exit(TIMEOUT)
    assert status is not None, "the app did not exit"
    [log] = logs()
    kinds = [json.loads(line)["type"] for line in log.read_text(encoding="utf-8").splitlines()]
    assert kinds[-2:] == ["assistant.turn_end", "abort"], kinds[-6:]
    assert in_use_by(log.parent) is None
