"""The house rules of the code: no import circles, layers import downwards only,
agent/ draws nothing, and every package says what it is (tests/import_graph.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_graph import (
    AGENT_LAYERS,
    ROOT,
    circles,
    graph,
    project_edges,
    project_modules,
    upward_imports,
)


def test_no_import_circles() -> None:
    found = circles(project_edges(graph()))
    assert found == [], "modules that import each other:\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_imports_run_down_the_layers() -> None:
    bad = upward_imports(graph())
    assert bad == [], "imports against the layers (see ARCHITECTURE.md):\n" + "\n".join(bad)


def test_every_agent_package_has_a_layer() -> None:
    packages = {p.parent.name for p in (ROOT / "agent").glob("*/__init__.py")}
    assert {f"agent.{name}" for name in packages} <= set(AGENT_LAYERS)


def test_agent_has_no_loose_modules() -> None:
    loose = sorted(p.name for p in (ROOT / "agent").glob("*.py") if p.name != "__init__.py")
    assert loose == [], "every module of agent/ lives in its layer's package"


@pytest.mark.parametrize(
    "package",
    sorted(
        str(p.parent.relative_to(ROOT))
        for name, p in project_modules(ROOT).items()
        if p.name == "__init__.py"
    ),
)
def test_a_package_says_what_it_is_and_imports_nothing(package: str) -> None:
    tree = ast.parse((ROOT / package / "__init__.py").read_text())
    assert ast.get_docstring(tree), f"{package}/__init__.py: say what the package is"
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    # Importing one module of a package must not import its siblings.
    assert imports == [], f"{package}/__init__.py imports; import from the modules instead"


# --- the checker itself, on small trees made here ---------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_finds_a_circle_through_a_type_only_import(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "agent/__init__.py": '"""x"""',
            "agent/log/__init__.py": '"""x"""',
            "agent/log/a.py": "from agent.log.b import B\n",
            "agent/log/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from agent.log import a\n"
            ),
            "agent/log/c.py": "import agent.log.a\n",
        },
    )
    assert circles(project_edges(graph(root, ("agent",)))) == [["agent.log.a", "agent.log.b"]]


def test_the_checker_finds_an_upward_import_and_ui_in_agent(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "agent/__init__.py": '"""x"""',
            "agent/events/__init__.py": '"""x"""',
            "agent/events/base.py": "def f():\n    from agent.log.store import S\n",
            "agent/log/__init__.py": '"""x"""',
            "agent/log/store.py": "from agent.events import base\nimport textual.app\n",
            "widgets/__init__.py": '"""x"""',
            "widgets/w.py": "from app.main import x\n",
            "app/__init__.py": '"""x"""',
            "app/main.py": "from widgets import w\nfrom agent.log.store import S\n",
        },
    )
    bad = upward_imports(graph(root))
    assert bad == [
        "agent.events.base:2 -> agent.log.store (agent.events may not import agent.log)",
        "agent.log.store:2 -> textual (agent/ draws nothing)",
        "widgets.w:1 -> app.main (widgets may not import app)",
    ]


def test_no_test_module_imports_another() -> None:
    """Helpers two test modules need live in tests/support/, not in one of them."""
    modules = project_modules(ROOT, ("tests",))
    found = graph(ROOT, ("tests",))
    bad = sorted(
        f"{name}:{imp.line} -> {imp.target}"
        for name, imports in found.items()
        for imp in imports
        if imp.target.rpartition(".")[2].startswith("test_") and imp.target in modules
    )
    assert bad == [], "move the shared part to tests/support/:\n" + "\n".join(bad)
