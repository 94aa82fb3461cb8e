"""``@`` completion on a 10,000-file workspace: listing it and matching as you type.

Builds a synthetic tree (``--files`` files in nested folders, a ``.gitignore`` that
excludes a build folder of a further 2,000 files), as a git work tree and as a plain
folder, then times, side by side in one run:

- ``list/git`` and ``list/plain``: :func:`agent.session.file_index.list_workspace` (done once
  per session, off the UI's loop, in a thread);
- ``match/<query>``: :func:`agent.session.file_index.fuzzy` over that list for queries of 1 to
  14 characters, each from scratch;
- ``typed/<query>``: the same query typed a letter at a time through
  :class:`agent.session.file_index.FuzzyIndex` (what the app does on each keystroke after
  ``@``, on the UI's loop): the time per keystroke, averaged over the query's letters.

Reports medians (and min/max) of ``--repeat`` runs in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent.session.file_index import FuzzyIndex, fuzzy, list_workspace

QUERIES = ("m", "mod", "src/mod", "handler_42", "pkg7/sub3/mod_", "zzzzzz")


def build_tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "src" / f"pkg{i % 40}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod_{i}_handler_{i % 97}.py").write_text("", encoding="utf-8")
    build = root / "build"
    build.mkdir()
    for i in range(2_000):
        (build / f"artifact_{i}.o").write_text("", encoding="utf-8")
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")


def type_in(index: FuzzyIndex, query: str) -> None:
    for end in range(1, len(query) + 1):
        index.search(query[:end], 50)


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        git_root, plain_root = Path(tmp) / "git", Path(tmp) / "plain"
        for root in (git_root, plain_root):
            root.mkdir()
            build_tree(root, args.files)
        subprocess.run(["git", "init", "-q"], cwd=git_root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=git_root, check=True)
        results: dict[str, list[float]] = {"list/git": [], "list/plain": []}
        # Interleaved, so a slow moment of a shared machine hits both alike.
        for _ in range(args.repeat):
            results["list/git"] += timed(lambda: list_workspace(git_root), 1)
            results["list/plain"] += timed(lambda: list_workspace(plain_root), 1)
        paths = list_workspace(git_root)
        assert not any(p.startswith("build") for p in paths), "the .gitignore was not honoured"
        for query in QUERIES:
            results[f"match/{query}"] = timed(lambda q=query: fuzzy(q, paths, 50), args.repeat)
        for query in QUERIES:
            per_key = [
                ms / len(query)
                for ms in timed(lambda q=query: type_in(FuzzyIndex(paths), q), args.repeat)
            ]
            results[f"typed/{query}"] = per_key
    print(f"{len(paths):,} entries listed (files and folders), {args.repeat} runs each")
    print(f"{'what':<24}{'median ms':>10}{'min':>9}{'max':>9}")
    for name, values in results.items():
        print(f"{name:<24}{statistics.median(values):>10.1f}{min(values):>9.1f}{max(values):>9.1f}")


if __name__ == "__main__":
    main()
