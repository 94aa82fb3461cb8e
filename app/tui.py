"""Placeholder until the terminal app lands: says so, and how to run headless."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run_tui(args: argparse.Namespace, cwd: Path) -> int:
    sys.stderr.write(
        "loopdeck: the terminal app is not built yet.\n"
        'Run headless instead:  loopdeck -p "your prompt" [--autopilot]\n'
        'Offline demo:  loopdeck -p "survey" --model scripted:demo --autopilot\n'
    )
    return 2
