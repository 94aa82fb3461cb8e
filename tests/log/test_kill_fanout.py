"""A process killed while three sub-agents run, then resumed: every ``task`` card is
closed (its call interrupted, its run with it), nothing is left running, and the log
still passes the official parser."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from copilot.generated.session_events import session_event_from_dict

from agent.log.store import SessionStore
from agent.models.scripted import Script, ScriptedModel
from agent.session.session import Session
from agent.transcript.blocks import TurnBlock
from agent.transcript.fold import fold
from tests.support.subagents import FAN_OUT

TIMEOUT = 60
# Each explorer's first call takes a minute: the three are all running when killed.
HELD = {
    **FAN_OUT,
    "subagents": {
        name: {"turns": [{"text": "Searching.", "delay_ms": 60_000}]}
        for name in FAN_OUT["subagents"]
    },
}


async def test_killed_mid_fan_out_then_resumed_closes_every_card(
    tmp_path: Path, loopdeck_home: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "held.json"
    script.write_text(json.dumps(HELD))
    env = {**os.environ, "LOOPDECK_HOME": str(loopdeck_home), "PYTHONUNBUFFERED": "1"}
    argv = ["-p", "go", "--autopilot", "--output-format", "json", "--model", f"scripted:{script}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *argv],
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    watchdog = threading.Timer(TIMEOUT, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        seen: list[dict[str, object]] = []
        while sum(e["type"] == "subagent.started" for e in seen) < 3:
            line = proc.stdout.readline()
            assert line, "the run ended before its three sub-agents started"
            seen.append(json.loads(line))
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
    finally:
        watchdog.cancel()
    assert proc.returncode == -signal.SIGKILL

    store = SessionStore(loopdeck_home)
    [session_id] = [p.name for p in (loopdeck_home / "session-state").iterdir()]
    model = ScriptedModel(Script.model_validate(HELD), "held")
    session = await Session.resume(store=store, session_id=session_id, model=model)
    try:
        t = fold(session.backlog, finished=True)
    finally:
        await session.close()
    tasks = [
        tool
        for item in t.items
        if isinstance(item, TurnBlock)
        for tool in item.tools
        if tool.name == "task"
    ]
    assert len(tasks) == 3
    for card in tasks:
        assert card.finished and card.status != "done"
        assert card.subagent is not None and card.subagent.status == "interrupted"
    for line in store.events_path(session_id).read_text().splitlines():
        wire = json.loads(line)
        assert session_event_from_dict(wire).type.value == wire["type"]
