"""Sizes of the Markdown and HTML exports of the real Copilot CLI logs.

    python -m benchmarks.export_size            # a table: log size, Markdown, HTML, ratio
    python -m benchmarks.export_size --json     # the same figures as JSON

Sizes, not times: they are exact, so one run says it all. Run it on two commits to
compare them (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.export import export_session

LOGS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "copilot-real"


def measure() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for path in sorted(LOGS.glob("*/events.jsonl")):
        md = export_session(path, "md").encode()
        page = export_session(path, "html").encode()
        rows.append(
            {
                "log": path.parent.name,
                "log_bytes": path.stat().st_size,
                "md_bytes": len(md),
                "html_bytes": len(page),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    rows = measure()
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'log':<48} {'log KB':>8} {'md KB':>8} {'html KB':>8} {'html/md':>8}")
    for row in rows:
        log, md, page = (int(str(row[k])) for k in ("log_bytes", "md_bytes", "html_bytes"))
        print(
            f"{str(row['log'])[:48]:<48} {log / 1024:8.1f} {md / 1024:8.1f}"
            f" {page / 1024:8.1f} {page / md:8.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
