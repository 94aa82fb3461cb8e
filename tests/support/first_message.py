"""Running the app's first message in a fresh interpreter
(tests/support/first_message_probe.py) and reading what it saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT


def first_message(tmp_path: Path, base_url: str, *model: str) -> dict[str, Any]:
    """What tests/support/first_message_probe.py saw of the app's first message to ``base_url``."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    out = tmp_path / "result.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.first_message_probe",
            base_url,
            str(workspace),
            str(out),
            *model,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,  # the probe's own waits end it first; this only stops a hang
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result
