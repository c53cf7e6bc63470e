"""The house rules a reviewer would otherwise check by hand: no module over 450 lines, and no import cycle
among the modules of exporter/, alerts/ and dashboards/ — imports inside functions included, since a cycle
that only closes at call time still ties the modules together. Imports under `if TYPE_CHECKING:` are left
out: they never run."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 450
SIZED = ("exporter", "alerts", "dashboards", "bench", "fuzz", "tests")
ACYCLIC = ("exporter", "alerts", "dashboards")

Edge = tuple[str, str, int]  # importing module, imported module, line of the import


def python_files(root: Path, packages: Iterable[str]) -> Iterator[Path]:
    for package in packages:
        yield from sorted(p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)


def module_name(root: Path, path: Path) -> str:
    """`exporter/sources/kube_shared.py` -> `exporter.sources.kube_shared`, a package's `__init__.py` -> the
    package (a `*.dashboard.py` file, loaded by path, is named after its path the same way)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (functions, methods, branches), but for `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def import_edges(root: Path, packages: Iterable[str]) -> list[Edge]:
    """The imports among the modules of `packages`: `from a.b import c` is a.b.c when that is a module, else
    a.b; `import a.b` is a.b; imports of anything outside `packages` are dropped, as is a module naming itself."""
    files = {module_name(root, p): p for p in python_files(root, packages)}
    edges: list[Edge] = []
    for module, path in files.items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: from the importing module's package, `level - 1` packages up
                    package = _package_of(module, path).split(".")
                    anchor = package[: len(package) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            edges.extend((module, t, node.lineno) for t in dict.fromkeys(targets) if t in files and t != module)
    return edges


def cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """One cycle, as its edges, through each strongly connected group of modules (Tarjan's algorithm)."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge[0], []).append(edge)
        graph.setdefault(edge[1], [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the number of modules (hundreds)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for _, target, _ in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(graph, group) for group in groups]


def _cycle_in(graph: dict[str, list[Edge]], group: set[str]) -> list[Edge]:
    """The shortest cycle through the group's first module, by breadth-first search inside the group."""
    start = min(group)
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph[node]:
                target = edge[1]
                if target == start:
                    path = [edge]
                    while path[0][0] != start:
                        path.insert(0, came[path[0][0]])
                    return path
                if target in group and target not in came:
                    came[target] = edge
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - a strongly connected group has one


def describe(cycle: list[Edge]) -> str:
    """`a:3 -> b:10 -> a`: each module, with the line where it imports the next."""
    return " -> ".join(f"{a}:{line}" for a, _, line in cycle) + f" -> {cycle[0][0]}"


def test_no_module_is_over_450_lines() -> None:
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in python_files(ROOT, SIZED)
    }
    over = sorted(f"{path} ({lines} lines)" for path, lines in sizes.items() if lines > MAX_LINES)
    assert not over, f"modules over {MAX_LINES} lines, split them by concern: " + ", ".join(over)


def test_no_import_cycle_in_the_house() -> None:
    found = cycles(import_edges(ROOT, ACYCLIC))
    assert not found, (
        "import cycles (module:line of its import of the next; imports inside functions count):\n"
        + "\n".join(describe(c) for c in found)
    )


def test_the_cycle_check_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def late():\n    from ..c import value\n    return value\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\nimport pkg.sub\nvalue = 1\n"
    )
    edges = import_edges(tmp_path, ["pkg"])
    assert sorted(edges) == [("pkg.a", "pkg.sub.b", 1), ("pkg.c", "pkg.sub", 4), ("pkg.sub.b", "pkg.c", 2)]
    assert cycles(edges) == []  # c's import of a is for the type checker only
    (package / "c.py").write_text("import pkg.a\nvalue = 1\n")
    (found,) = cycles(import_edges(tmp_path, ["pkg"]))
    assert describe(found) == "pkg.a:1 -> pkg.sub.b:2 -> pkg.c:1 -> pkg.a"
