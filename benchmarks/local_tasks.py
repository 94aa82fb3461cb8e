"""The fixed tasks of ``benchmarks.local_coder``: small real repositories, one request
each, and a check of the result that does not trust the model's word where it can run
something instead (the tests pass, the script prints the right number).

Every repository is plain Python with ``unittest`` (no third-party package), made a git
repository with one or two commits, so ``git log`` and ``git diff`` work in it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Verdict:
    ok: bool
    why: str  # what the check saw, said briefly either way


@dataclass(frozen=True)
class Outcome:
    """What a task's check may look at: the workspace after the run, and the answer."""

    workspace: Path
    answer: str  # the task_complete summary and the replies that called no tool


@dataclass(frozen=True)
class Task:
    name: str
    what: str  # a few words for the table
    prompt: str
    files: dict[str, str]
    check: Callable[[Outcome], Verdict]
    # Commits after the first one: (message, files changed), to give git log some history.
    later_commits: list[tuple[str, dict[str, str]]] = field(default_factory=list)


def _dedent(files: dict[str, str]) -> dict[str, str]:
    return {path: textwrap.dedent(text).lstrip("\n") for path, text in files.items()}


def run_python(
    workspace: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def unittest_passes(workspace: Path) -> Verdict:
    done = run_python(workspace, "-m", "unittest", "-q")
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return Verdict(done.returncode == 0, f"unittest: {tail}")


def answer_has(*needles: str) -> Callable[[Outcome], Verdict]:
    def check(outcome: Outcome) -> Verdict:
        missing = [n for n in needles if n.lower() not in outcome.answer.lower()]
        if missing:
            return Verdict(False, f"answer lacks {missing!r}")
        return Verdict(True, f"answer has {list(needles)!r}")

    return check


def unchanged(path: str, text: str) -> Callable[[Outcome], Verdict | None]:
    def check(outcome: Outcome) -> Verdict | None:
        now = (outcome.workspace / path).read_text() if (outcome.workspace / path).exists() else ""
        return (
            None if now == textwrap.dedent(text).lstrip("\n") else Verdict(False, f"{path} changed")
        )

    return check


# --- the tasks ---------------------------------------------------------------------

_TIMEUTIL = {
    "app/__init__.py": "",
    "app/cli.py": """
        from app.timeutil import parse_duration


        def main(argv):
            return parse_duration(argv[0])
    """,
    "app/timeutil.py": """
        UNITS = {"s": 1, "m": 60, "h": 3600}


        def parse_duration(text):
            number, unit = text[:-1], text[-1]
            return int(number) * UNITS[unit]
    """,
    "app/storage.py": """
        import json


        def load(path):
            with open(path) as f:
                return json.load(f)
    """,
    "README.md": "A small tool that waits.\n",
}

_CONFIG = {
    "config.ini": """
        [database]
        host = db.internal
        port = 5432

        [server]
        host = 0.0.0.0
        port = 8731
        workers = 3
    """,
    "server.py": """
        import configparser

        config = configparser.ConfigParser()
        config.read("config.ini")
    """,
}

_STATS = {
    "stats.py": """
        def mean(values):
            return sum(values) / (len(values) - 1)


        def spread(values):
            return max(values) - min(values)
    """,
    "test_stats.py": """
        import unittest

        from stats import mean, spread


        class StatsTest(unittest.TestCase):
            def test_mean(self):
                self.assertEqual(mean([2, 4, 6]), 4)

            def test_spread(self):
                self.assertEqual(spread([3, 9, 5]), 6)


        if __name__ == "__main__":
            unittest.main()
    """,
}


def _fix_test_check(outcome: Outcome) -> Verdict:
    changed = unchanged("test_stats.py", _STATS["test_stats.py"])(outcome)
    return changed or unittest_passes(outcome.workspace)


_NAMES = {
    "names.py": """
        def join_names(names):
            \"\"\"The names in one line, for the report's header.\"\"\"
            return ", ".join(name.strip() for name in names)
    """,
    "report.py": """
        from names import join_names

        print(join_names(["Ada", "Grace"]))
    """,
}


def _add_param_check(outcome: Outcome) -> Verdict:
    probe = (
        "from names import join_names\n"
        "assert join_names(['a', ' b']) == 'a, b', join_names(['a', ' b'])\n"
        "assert join_names(['a', 'b'], sep='-') == 'a-b', join_names(['a', 'b'], sep='-')\n"
        "assert join_names(['a', 'b'], '/') == 'a/b'\n"
    )
    done = run_python(outcome.workspace, "-c", probe)
    if done.returncode != 0:
        return Verdict(False, (done.stderr.strip().splitlines() or ["failed"])[-1][:120])
    return Verdict(True, "join_names(names, sep=...) works, default ', '")


_SHOP = {
    "shop/__init__.py": "",
    "shop/cart.py": """
        def calc_total(prices, discount=0):
            return round(sum(prices) * (1 - discount), 2)
    """,
    "shop/report.py": """
        from shop.cart import calc_total


        def summary(prices):
            return f"{len(prices)} items, total {calc_total(prices)}"
    """,
    "main.py": """
        from shop.cart import calc_total
        from shop.report import summary

        print(summary([1.5, 2.5]))
        print(calc_total([10, 20], discount=0.1))
    """,
}


def _rename_check(outcome: Outcome) -> Verdict:
    left = [
        str(p.relative_to(outcome.workspace))
        for p in outcome.workspace.rglob("*.py")
        if "calc_total" in p.read_text()
    ]
    if left:
        return Verdict(False, f"calc_total still in {left}")
    cart = (outcome.workspace / "shop/cart.py").read_text()
    if "def compute_total" not in cart:
        return Verdict(False, "shop/cart.py does not define compute_total")
    done = run_python(outcome.workspace, "main.py")
    if done.returncode != 0 or done.stdout.split() != ["2", "items,", "total", "4.0", "27.0"]:
        return Verdict(False, f"main.py: {(done.stdout + done.stderr).strip()[:120]!r}")
    return Verdict(True, "renamed in 3 files, main.py runs")


_SAMPLE = "the quick brown fox\njumps over the lazy dog\nand then it rests a while\n"


def _script_check(outcome: Outcome) -> Verdict:
    script = outcome.workspace / "count_words.py"
    if not script.is_file():
        return Verdict(False, "no count_words.py")
    (outcome.workspace / "other.txt").write_text("one two three\nfour five\n")
    first = run_python(outcome.workspace, "count_words.py", "sample.txt")
    second = run_python(outcome.workspace, "count_words.py", "other.txt")
    if first.stdout.split() == ["15"] and second.stdout.split() == ["5"]:
        return Verdict(True, "prints 15 and 5")
    return Verdict(
        False, f"printed {first.stdout.strip()[:40]!r} and {second.stdout.strip()[:40]!r}"
    )


_CALC = {
    "calc.py": """
        def add(a, b):
            return a + b


        def sub(a, b):
            return a - b


        def mul(a, b):
            return a * b
    """,
    "test_calc.py": """
        import unittest

        from calc import add, mul, sub


        class CalcTest(unittest.TestCase):
            def test_add(self):
                self.assertEqual(add(2, 3), 5)

            def test_add_negative(self):
                self.assertEqual(add(-2, -3), -5)

            def test_sub(self):
                self.assertEqual(sub(5, 3), 2)

            def test_mul(self):
                self.assertEqual(mul(4, 3), 12)

            def test_mul_zero(self):
                self.assertEqual(mul(4, 0), 0)

            def test_mul_one(self):
                self.assertEqual(mul(1, 7), 7)

            def test_sub_self(self):
                self.assertEqual(sub(7, 7), 0)


        if __name__ == "__main__":
            unittest.main()
    """,
}

_TEXT = {
    "text.py": """
        def shout(s):
            return s.upper() + "!"
    """,
}


def _palindrome_check(outcome: Outcome) -> Verdict:
    probe = (
        "from text import is_palindrome, shout\n"
        "assert is_palindrome('Level') is True\n"
        "assert is_palindrome('abba') is True\n"
        "assert is_palindrome('abc') is False\n"
        "assert shout('hi') == 'HI!'\n"
    )
    done = run_python(outcome.workspace, "-c", probe)
    if done.returncode != 0:
        return Verdict(False, (done.stderr.strip().splitlines() or ["failed"])[-1][:120])
    return Verdict(True, "is_palindrome works, shout kept")


_APP = {
    "greet.py": """
        def greeting(name):
            return f"Hello, {name}!"
    """,
    "app.py": """
        from greet import greeting

        names = ["Ada", "Linus"]
        for name in names:
            print(greting(name))
    """,
}


def _app_check(outcome: Outcome) -> Verdict:
    done = run_python(outcome.workspace, "app.py")
    if done.returncode == 0 and done.stdout.splitlines() == ["Hello, Ada!", "Hello, Linus!"]:
        return Verdict(True, "app.py prints both greetings")
    return Verdict(False, f"app.py: {(done.stdout + done.stderr).strip()[-120:]!r}")


_SETTINGS = {
    "settings.py": """
        # Seconds a request may take before it is given up.
        TIMEOUT = 30
        RETRIES = 2
        USER_AGENT = "fetcher/1.0"
    """,
    "fetch.py": """
        from settings import RETRIES, TIMEOUT


        def plan():
            return f"{RETRIES} retries of {TIMEOUT} s"
    """,
}


def _settings_check(outcome: Outcome) -> Verdict:
    done = run_python(outcome.workspace, "-c", "import fetch; print(fetch.plan())")
    if done.stdout.strip() == "2 retries of 45 s":
        return Verdict(True, "TIMEOUT = 45, the rest kept")
    return Verdict(False, f"fetch.plan(): {(done.stdout + done.stderr).strip()[-120:]!r}")


_TODO = {
    "inventory.py": """
        def add_item(stock, name, count):
            stock[name] = stock.get(name, 0) + count


        def remove_item(stock, name, count):
            # TODO: refuse to go below zero
            stock[name] = stock.get(name, 0) - count


        def total(stock):
            return sum(stock.values())
    """,
}


TASKS: list[Task] = [
    Task(
        "find_def",
        "where is a function defined",
        "In which file is the function parse_duration defined? Answer with the file's path.",
        _dedent(_TIMEUTIL),
        answer_has("timeutil.py"),
    ),
    Task(
        "read_answer",
        "read a file, answer",
        "Which port does config.ini give the server (the [server] section)? "
        "Answer with the number.",
        _dedent(_CONFIG),
        answer_has("8731"),
    ),
    Task(
        "find_todo",
        "search, answer",
        "Which function in this project has a TODO comment? Answer with its name.",
        _dedent(_TODO),
        answer_has("remove_item"),
    ),
    Task(
        "git_log",
        "git history, answer",
        "What is the message of the most recent git commit in this repository?",
        _dedent(_SETTINGS),
        answer_has("raise the retry count"),
        later_commits=[
            (
                "Raise the retry count",
                {"settings.py": _dedent(_SETTINGS)["settings.py"].replace("= 2", "= 3")},
            ),
        ],
    ),
    Task(
        "run_tests",
        "run the tests, answer",
        "Run this project's tests with `python3 -m unittest` and tell me how many tests ran.",
        _dedent(_CALC),
        answer_has("7"),
    ),
    Task(
        "fix_test",
        "fix a failing unit test",
        "The tests in test_stats.py fail. Find the bug in stats.py and fix it so the "
        "tests pass (do not change the tests). Run `python3 -m unittest` to check.",
        _dedent(_STATS),
        _fix_test_check,
    ),
    Task(
        "fix_name_error",
        "fix a crash",
        "Running `python3 app.py` fails with an error. Fix app.py so it runs.",
        _dedent(_APP),
        _app_check,
    ),
    Task(
        "edit_constant",
        "change a value",
        "Change the default request timeout in settings.py from 30 to 45 seconds.",
        _dedent(_SETTINGS),
        _settings_check,
    ),
    Task(
        "add_param",
        "add a parameter",
        'Add an optional parameter `sep` to join_names in names.py, defaulting to ", ", '
        "and use it instead of the hard-coded separator.",
        _dedent(_NAMES),
        _add_param_check,
    ),
    Task(
        "add_function",
        "add a function",
        "Add a function is_palindrome(s) to text.py that returns True when s reads the "
        "same backwards, ignoring upper and lower case, and False otherwise.",
        _dedent(_TEXT),
        _palindrome_check,
    ),
    Task(
        "rename",
        "rename across files",
        "Rename the function calc_total to compute_total everywhere in this project "
        "(its definition and every use).",
        _dedent(_SHOP),
        _rename_check,
    ),
    Task(
        "write_script",
        "write a small script",
        "Write a Python script count_words.py that prints the number of words in the "
        "text file named by its first command-line argument (just the number).",
        {"sample.txt": _SAMPLE},
        _script_check,
    ),
]
TASKS_BY_NAME = {task.name: task for task in TASKS}


def make_repository(task: Task, workspace: Path) -> None:
    """The task's files in ``workspace``, committed, so git works there."""
    workspace.mkdir(parents=True, exist_ok=True)

    def commit(message: str, files: dict[str, str]) -> None:
        for path, text in files.items():
            target = workspace / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", message)

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com", *args],
            cwd=workspace,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    commit("Initial version", task.files)
    for message, files in task.later_commits:
        commit(message, files)
