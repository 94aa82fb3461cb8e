"""Runs written on disk for the board's snapshots and benchmark: logs with fixed
timestamps, in the shape loopdeck (or Copilot CLI) writes them, and their writers'
locks held by this process where a run is to look alive."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent.log.lock import SessionLock

START = datetime(2025, 3, 14, 9, 0, 0, tzinfo=UTC)
NOW = START + timedelta(minutes=10)  # the board's pinned clock


def stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class LogBuilder:
    """The lines of one log, each a second (or ``gap``) after the last."""

    session_id: str
    started: datetime
    lines: list[dict[str, Any]] = field(default_factory=list)
    at: datetime | None = None
    _count: int = 0

    def add(self, etype: str, data: dict[str, Any], gap: float = 1.0) -> LogBuilder:
        self.at = self.started if self.at is None else self.at + timedelta(seconds=gap)
        self._count += 1
        self.lines.append(
            {
                "type": etype,
                "data": data,
                "id": f"{self.session_id[:8]}-{self._count:04d}",
                "timestamp": stamp(self.at),
                "parentId": None,
            }
        )
        return self

    def start(self, cwd: str, model: str, producer: str = "loopdeck") -> LogBuilder:
        return self.add(
            "session.start",
            {
                "sessionId": self.session_id,
                "version": 1,
                "producer": producer,
                "copilotVersion": "1.0.0",
                "startTime": stamp(self.started),
                "selectedModel": model,
                "context": {"cwd": cwd},
            },
            gap=0,
        )

    def prompt(self, text: str, mode: str = "autopilot", nudge: bool = False) -> LogBuilder:
        data: dict[str, Any] = {"content": text, "agentMode": mode}
        if nudge:
            data["isAutopilotContinuation"] = True
        return self.add("user.message", data)

    def turn(self, n: int, text: str, tool: str | None = None, args: Any = None) -> LogBuilder:
        self.add("assistant.turn_start", {"turnId": str(n)})
        requests = []
        if tool is not None:
            requests = [{"toolCallId": f"call-{n}", "name": tool, "arguments": args or {}}]
        self.add(
            "assistant.message",
            {"messageId": f"m{n}", "content": text, "toolRequests": requests, "turnId": str(n)},
        )
        if tool is not None:
            self.add(
                "tool.execution_start",
                {"toolCallId": f"call-{n}", "toolName": tool, "arguments": args or {}},
            )
        return self

    def tool_done(self, n: int, output: str = "ok") -> LogBuilder:
        return self.add(
            "tool.execution_complete",
            {"toolCallId": f"call-{n}", "success": True, "result": {"content": output}},
        )

    def turn_end(self, n: int) -> LogBuilder:
        return self.add("assistant.turn_end", {"turnId": str(n)})

    def usage(self, model: str, inputs: int, outputs: int, cost: float) -> LogBuilder:
        metrics = {
            "requests": {"cost": cost, "count": 1},
            "usage": {"inputTokens": inputs, "outputTokens": outputs},
        }
        entry = {"modelId": model, "provider": None, "metrics": metrics}
        return self.add("session.usage_checkpoint", {"providerModelMetrics": [entry]}, gap=0)

    def write(self, folder: Path, meta: dict[str, Any] | None = None) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "events.jsonl"
        log.write_text("".join(json.dumps(line) + "\n" for line in self.lines), "utf-8")
        if meta is not None:
            (folder / "session.json").write_text(json.dumps(meta), "utf-8")
        return log


def meta(cap: int = 5, window: int = 128_000) -> dict[str, Any]:
    return {"maxAutopilotContinues": cap, "contextWindow": window}


def sid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


def write_board(loopdeck_root: Path, copilot_root: Path) -> list[SessionLock]:
    """Seven runs: one of each state, one of them Copilot's. Returns the locks held
    for the live ones (release them when done)."""
    locks: list[SessionLock] = []

    def live(log: Path) -> None:
        locks.append(SessionLock.acquire(log.parent, log.parent.name))

    m = "claude-sonnet-4.5"
    ws = "/home/dev/"
    waiting = LogBuilder(sid(1), START + timedelta(minutes=8)).start(ws + "shop", m)
    waiting.prompt("Clean the build folder before the release", "interactive")
    waiting.turn(1, "The old build folder has to go first.", "bash", {"command": "rm -rf build"})
    waiting.add("permission.requested", {"requestId": "p1", "permissionRequest": {"kind": "shell"}})
    live(waiting.write(loopdeck_root / sid(1), meta()))

    failed = LogBuilder(sid(2), START + timedelta(minutes=2)).start(ws + "docs", m)
    failed.prompt("Deploy the docs site to the staging bucket")
    failed.add("assistant.turn_start", {"turnId": "1"})
    failed.add("session.error", {"errorType": "auth", "message": "auth: invalid API key"})
    failed.write(loopdeck_root / sid(2), meta())

    killed = LogBuilder(sid(3), START + timedelta(minutes=1)).start(ws + "orders", "gpt-4.1")
    killed.prompt("Migrate the orders table to the new schema")
    killed.turn(1, "Running the migration on a copy first.", "bash", {"command": "make migrate"})
    killed.usage("gpt-4.1", 9_800, 420, 0.021)
    killed.write(loopdeck_root / sid(3), meta())

    tool = LogBuilder(sid(4), START + timedelta(minutes=3)).start(ws + "shop", m)
    tool.prompt("Fix the flaky checkout test and make the suite pass")
    tool.turn(1, "Reading the test.", "view", {"path": "tests/test_checkout.py"}).tool_done(1)
    tool.usage(m, 12_000, 300, 0.04).turn_end(1)
    tool.turn(2, "The clock is not pinned.", "edit", {"path": "tests/test_checkout.py"})
    tool.tool_done(2).usage(m, 26_500, 700, 0.09).turn_end(2)
    tool.prompt("Continue working on the task.", nudge=True)
    tool.turn(3, "Now the whole suite.\nRunning pytest.", "bash", {"command": "pytest -q"})
    tool.usage(m, 45_000, 950, 0.15)
    live(tool.write(loopdeck_root / sid(4), meta()))

    thinking = LogBuilder(sid(5), START + timedelta(minutes=6)).start(ws + "api", "gpt-4.1")
    thinking.prompt("Add cursor pagination to the /orders endpoint")
    thinking.turn(1, "Looking at the handler.", "grep", {"pattern": "def list_orders"})
    thinking.tool_done(1).usage("gpt-4.1", 8_000, 200, 0.01).turn_end(1)
    thinking.add("assistant.turn_start", {"turnId": "2"})
    live(thinking.write(loopdeck_root / sid(5), meta()))

    done = LogBuilder(sid(6), START).start(ws + "shop", m)
    done.prompt("Bump the dependencies and run the tests")
    done.turn(1, "Updating.", "bash", {"command": "uv lock --upgrade"}).tool_done(1).turn_end(1)
    done.turn(2, "All green.", "task_complete", {"summary": "Dependencies bumped; 212 passed."})
    done.add("session.task_complete", {"summary": "Dependencies bumped; 212 passed."})
    done.tool_done(2).usage(m, 30_000, 800, 0.11).turn_end(2)
    done.write(loopdeck_root / sid(6), meta())

    copilot = LogBuilder(sid(7), START + timedelta(minutes=4)).start(
        ws + "infra", "gpt-5-mini", "copilot-agent"
    )
    copilot.prompt("Explain the retry logic in the uploader", "interactive")
    copilot.turn(1, "It retries three times with a doubling delay.").turn_end(1)
    copilot.add("session.shutdown", {"sessionStartTime": 0})
    copilot.write(copilot_root / sid(7))
    return locks
