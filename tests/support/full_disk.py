"""A full disk for real: a driver script run as root in its own mount namespace, where
it mounts a small tmpfs over the session folder (skipped, saying why, where it cannot)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def can_mount_tmpfs() -> str | None:
    """None when a tmpfs can be mounted here; else why not."""
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    if shutil.which("unshare") is None:
        return "needs unshare(1)"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
    )
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a mount namespace: {probe.stderr.decode().strip()}"
    return None


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The loopdeck home, the workspace and where the driver leaves its results."""
    home, workspace, out = tmp_path / "home", tmp_path / "ws", tmp_path / "out"
    for folder in (home, workspace, out):
        folder.mkdir()
    return home, workspace, out


def run_driver(driver: str, home: Path, workspace: Path, out: Path, script: Path) -> None:
    """Run ``driver`` (bash) in a new mount namespace; it reads its folders from the
    environment (HOME_DIR, WS, OUT, SCRIPT, PYTHON)."""
    env = {
        **os.environ,
        "HOME_DIR": str(home),
        "LOOPDECK_HOME": str(home),
        "WS": str(workspace),
        "OUT": str(out),
        "SCRIPT": str(script),
        "PYTHON": sys.executable,
    }
    done = subprocess.run(
        ["unshare", "-m", "bash", "-c", driver], env=env, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()
