"""The project's import graph, read from the source (nothing is imported), and the
rules it must keep: no circles, and each package importing only the layers below it.

Every import counts: at the top of a module, inside a function, and under
``if TYPE_CHECKING:`` (a circle of types is still a circle for a reader).

``python -m tests.import_graph`` prints the numbers ARCHITECTURE.md and the
notes quote: modules per folder, circles, the deepest import chain, the largest files.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("agent", "app", "widgets")

# What each package of agent/ may import, besides itself and ``agent`` (the
# version). The layers, lowest first, are drawn in ARCHITECTURE.md.
_BELOW_LOOP = {
    "agent.events",
    "agent.system",
    "agent.sandbox",
    "agent.log",
    "agent.models",
    "agent.tools",
    "agent.permissions",
}
AGENT_LAYERS: dict[str, set[str]] = {
    "agent.events": set(),
    "agent.system": set(),
    "agent.sandbox": {"agent.events"},
    "agent.log": {"agent.events", "agent.system"},
    "agent.models": {"agent.events", "agent.sandbox"},
    "agent.tools": {"agent.events", "agent.sandbox", "agent.system"},
    "agent.transcript": {"agent.events", "agent.log"},
    "agent.permissions": {"agent.events", "agent.sandbox", "agent.tools"},
    "agent.loop": _BELOW_LOOP,
    # MCP servers, custom agents, skills: adapters onto the loop's tools and models.
    "agent.extensions": _BELOW_LOOP | {"agent.loop"},
    "agent.session": _BELOW_LOOP
    | {"agent.loop", "agent.transcript", "agent.extensions"},
}
# Beyond agent/: the terminal's widgets draw the engine's transcript; the app wires both.
TOP_LAYERS: dict[str, set[str]] = {
    "agent": set(),
    "widgets": {"agent"},
    "app": {"agent", "widgets"},
}
UI_PACKAGES = ("textual", "rich")  # agent/ draws nothing (rich's markup included)


@dataclass(frozen=True, slots=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (of the project), or the top-level name outside it
    line: int


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path, top: Iterable[str] = TOP) -> dict[str, Path]:
    """Every module of the project's packages, by dotted name."""
    found: dict[str, Path] = {}
    for name in top:
        for path in sorted((root / name).rglob("*.py")):
            found[module_name(path, root)] = path
    return found


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The project module ``name`` is, or is in (``agent.log.store.X``: ``agent.log.store``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: Mapping[str, Path]) -> list[Import]:
    """What ``module`` imports: project modules by name, anything else by its top name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            # ``from pkg import mod`` imports the module pkg.mod when there is one.
            targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
            targets = [t if _owner(t, modules) not in (None, base) else base for t in targets]
        for target in targets:
            owner = _owner(target, modules)
            name = owner if owner is not None else target.split(".")[0]
            if name != module:
                found.append(Import(module, name, node.lineno))
    return found


def graph(root: Path = ROOT, top: Iterable[str] = TOP) -> dict[str, list[Import]]:
    modules = project_modules(root, top)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def project_edges(imports: Mapping[str, list[Import]]) -> dict[str, set[str]]:
    return {m: {i.target for i in found if i.target in imports} for m, found in imports.items()}


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(iter(children), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def package_of(module: str) -> str:
    """The layer a module belongs to: ``agent.<package>``, or the top-level folder."""
    parts = module.split(".")
    if parts[0] == "agent" and len(parts) > 1 and f"agent.{parts[1]}" in AGENT_LAYERS:
        return f"agent.{parts[1]}"
    return parts[0]


def upward_imports(imports: Mapping[str, list[Import]]) -> list[str]:
    """Imports that break the layers: one line each, ``module:line -> target``."""
    bad: list[str] = []
    for module, found in imports.items():
        source = package_of(module)
        for imp in found:
            target = imp.target
            if target.split(".")[0] in UI_PACKAGES and source.startswith("agent"):
                bad.append(f"{module}:{imp.line} -> {target} (agent/ draws nothing)")
                continue
            if target not in imports or target == "agent":
                continue
            dest = package_of(target)
            if dest == source:
                continue
            top_source, top_dest = source.split(".")[0], dest.split(".")[0]
            if top_source != top_dest:
                allowed = top_dest in TOP_LAYERS.get(top_source, set())
            else:
                allowed = dest in AGENT_LAYERS.get(source, set())
            if not allowed:
                bad.append(f"{module}:{imp.line} -> {target} ({source} may not import {dest})")
    return sorted(bad)


def deepest_chain(edges: Mapping[str, set[str]]) -> list[str]:
    """The longest path of imports (on a graph without circles)."""
    memo: dict[str, list[str]] = {}

    def longest(node: str, seen: frozenset[str]) -> list[str]:
        if node in memo:
            return memo[node]
        best: list[str] = []
        for child in edges.get(node, ()):
            if child not in seen:
                path = longest(child, seen | {child})
                if len(path) > len(best):
                    best = path
        memo[node] = [node, *best]
        return memo[node]

    return max((longest(m, frozenset({m})) for m in sorted(edges)), key=len, default=[])


def report(root: Path = ROOT) -> str:
    imports = graph(root)
    edges = project_edges(imports)
    per_folder = Counter(
        str(path.parent.relative_to(root))
        for path in project_modules(root).values()
        if path.name != "__init__.py"
    )
    paths = project_modules(root).values()
    sizes = sorted(
        ((len(p.read_text().splitlines()), str(p.relative_to(root))) for p in paths), reverse=True
    )
    chain = deepest_chain(edges)
    lines = ["modules per folder:"]
    lines += [f"  {folder:<20} {n}" for folder, n in sorted(per_folder.items())]
    found = circles(edges)
    lines.append(f"circles: {len(found)} ({sum(map(len, found))} modules)")
    lines += [f"  {' <-> '.join(c)}" for c in found]
    lines.append(f"deepest import chain: {len(chain)} modules")
    lines.append("  " + " -> ".join(chain))
    lines.append("largest files:")
    lines += [f"  {n:>5} {name}" for n, name in sizes[:8]]
    upward = upward_imports(imports)
    lines.append(f"imports against the layers: {len(upward)}")
    lines += [f"  {line}" for line in upward]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(report(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT) + "\n")
