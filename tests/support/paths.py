"""Where the tests find the project and their fixtures, wherever the test file is."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project's checkout
FIXTURES = ROOT / "tests" / "fixtures"  # the logs and templates the tests read
