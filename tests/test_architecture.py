"""The house's shape: records at the bottom, and no import circle anywhere in the package
(imports inside functions count: a lazy import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kernelopt"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `path` imports, anywhere in it."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module in modules:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                targets.add(sub if sub in modules else node.module)
    return targets


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_no_module_imports_in_a_circle() -> None:
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    # a package's __init__ may re-export its own submodules; that is no circle
    graph = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}
    assert _circles(graph) == []


def test_records_import_nothing_from_kernelopt() -> None:
    modules = _modules()
    assert _imports(PACKAGE / "records.py", modules) == set()
    tree = ast.parse((PACKAGE / "records.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not [m for m in imported if m and m.startswith("kernelopt")]


def test_the_harness_is_three_rooms_and_an_entry_point() -> None:
    harness = PACKAGE / "harness"
    assert {p.name for p in harness.iterdir() if p.is_dir() and p.name != "__pycache__"} == {
        "guards", "sandbox", "measure"
    }
    assert {p.name for p in harness.glob("*.py")} == {"__init__.py", "verify.py", "problem.py", "rule_table.py"}


def test_no_module_is_over_400_lines() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    long = {name: lines for name, lines in sizes.items() if lines > 400}
    assert long == {}
