"""The checks of ``benchmarks.local_coder``'s tasks can tell a solved task from an
untouched one: each fails on the repository as made, and passes once a reference
solution is applied (with the answer a right reply would give)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.local_tasks import TASKS, TASKS_BY_NAME, Outcome, make_repository


def _replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(ws: Path) -> None:
        target = ws / path
        text = target.read_text()
        assert old in text, (path, old)
        target.write_text(text.replace(old, new))

    return apply


def _write(path: str, text: str) -> Callable[[Path], None]:
    def apply(ws: Path) -> None:
        (ws / path).write_text(text)

    return apply


def _rename(ws: Path) -> None:
    for path in ("shop/cart.py", "shop/report.py", "main.py"):
        _replace(path, "calc_total", "compute_total")(ws)


def _nothing(ws: Path) -> None:
    pass


# name -> (what a solution does to the workspace, the answer a right reply gives)
SOLUTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "find_def": (_nothing, "It is defined in app/timeutil.py."),
    "read_answer": (_nothing, "The server listens on port 8731."),
    "find_todo": (_nothing, "remove_item has the TODO."),
    "git_log": (_nothing, 'The latest commit is "Raise the retry count".'),
    "run_tests": (_nothing, "Ran 7 tests, all OK."),
    "fix_test": (_replace("stats.py", "(len(values) - 1)", "len(values)"), "Fixed."),
    "fix_name_error": (_replace("app.py", "greting(", "greeting("), "Fixed the typo."),
    "edit_constant": (_replace("settings.py", "TIMEOUT = 30", "TIMEOUT = 45"), "Done."),
    "add_param": (
        _write(
            "names.py",
            'def join_names(names, sep=", "):\n'
            "    return sep.join(name.strip() for name in names)\n",
        ),
        "Done.",
    ),
    "add_function": (
        _replace(
            "text.py",
            'return s.upper() + "!"\n',
            'return s.upper() + "!"\n\n\n'
            "def is_palindrome(s):\n    return s.lower() == s.lower()[::-1]\n",
        ),
        "Done.",
    ),
    "rename": (_rename, "Renamed."),
    "write_script": (
        _write(
            "count_words.py",
            "import sys\n\nprint(len(open(sys.argv[1]).read().split()))\n",
        ),
        "Done.",
    ),
}


def test_every_task_has_a_solution_here() -> None:
    assert set(SOLUTIONS) == set(TASKS_BY_NAME)
    assert len(TASKS) >= 10


@pytest.mark.parametrize("name", sorted(TASKS_BY_NAME))
def test_check_fails_untouched_and_passes_solved(name: str, tmp_path: Path) -> None:
    task = TASKS_BY_NAME[name]
    untouched = tmp_path / "untouched"
    make_repository(task, untouched)
    assert not task.check(Outcome(untouched, "I could not find it.")).ok

    solved = tmp_path / "solved"
    make_repository(task, solved)
    apply, answer = SOLUTIONS[name]
    apply(solved)
    verdict = task.check(Outcome(solved, answer))
    assert verdict.ok, verdict.why


def test_the_repository_is_committed_with_its_history(tmp_path: Path) -> None:
    make_repository(TASKS_BY_NAME["git_log"], tmp_path)
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert log.stdout.splitlines() == ["Raise the retry count", "Initial version"]
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""
