"""The house's shape: records at the bottom, and no import circle anywhere in the package
(imports inside functions count: a lazy import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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


def _type_only_names(tree: ast.Module) -> set[str]:
    """Names a module imports only under `if TYPE_CHECKING:`."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import | ast.ImportFrom):
                    names |= {(alias.asname or alias.name).split(".")[0] for alias in sub.names}
    return names


def _annotations(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation (never evaluated under `from __future__ import annotations`)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST | None] = []
        if isinstance(node, ast.arg):
            parts.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            parts.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            parts.append(node.annotation)
        for part in parts:
            if part is not None:
                inside |= {id(sub) for sub in ast.walk(part)}
    return inside


def _unimported_uses(tree: ast.Module, type_only: set[str]) -> list[str]:
    """Run-time uses of a type-only name with no import of it in an enclosing function."""
    skip = _annotations(tree)
    found: list[str] = []

    def visit(node: ast.AST, imported: frozenset[str], scope: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            local = {
                (alias.asname or alias.name).split(".")[0]
                for sub in ast.walk(node) if isinstance(sub, ast.Import | ast.ImportFrom)
                for alias in sub.names
            }
            imported, scope = imported | local, node.name
        elif isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return
        if isinstance(node, ast.Name) and node.id in type_only and node.id not in imported and id(node) not in skip:
            found.append(f"{node.id} in {scope}() line {node.lineno}")
        for child in ast.iter_child_nodes(node):
            visit(child, imported, scope)

    visit(tree, frozenset(), "<module>")
    return found


def test_names_imported_only_for_type_checking_are_imported_where_they_run() -> None:
    """A module that imports torch only for its annotations must import it inside each function
    that calls it: otherwise the CUDA-only paths, which CI never runs, fail with a NameError."""
    wrong = {}
    for name, path in _modules().items():
        tree = ast.parse(path.read_text())
        type_only = _type_only_names(tree)
        if type_only and (uses := _unimported_uses(tree, type_only)):
            wrong[name] = uses
    assert not wrong, wrong


# The layers, bottom first: a module imports its own layer or those below, never one above.
# Inside a layer any import goes, as long as no circle forms (test_no_module_imports_in_a_circle).
LAYERS: list[tuple[str, set[str]]] = [
    ("records", {"records", "syntax", "events"}),  # syntax.py: every parse, under one lock; events.py: progress events
    ("hardware", {"hardware"}),
    ("harness", {"harness"}),
    ("services", {"prompts", "knowledge", "offline", "seed", "runs", "context", "budget", "model_specs", "llm",
                  "state", "checkpoint", "report"}),
    ("nodes", {"nodes"}),
    ("graph", {"graph"}),
    ("commands", {"kernelopt", "suite", "scale", "export", "cli", "cli_run", "cli_verify", "cli_suite",
                  "cli_knowledge"}),
]
# The harness's doors: from outside it, only these of its modules may be imported.
HARNESS_DOORS = {"kernelopt.harness", "kernelopt.harness.verify", "kernelopt.harness.problem",
                 "kernelopt.harness.rule_table"}


def _layer(module: str) -> int:
    parts = module.split(".")
    room = parts[1] if len(parts) > 1 else parts[0]
    found = [rank for rank, (_, rooms) in enumerate(LAYERS) if room in rooms]
    assert found, f"{module} is in no layer: add its room to LAYERS (and to docs/ARCHITECTURE.md)"
    return found[0]


def _edges() -> list[tuple[str, str]]:
    modules = _modules()
    return sorted((name, target) for name, path in modules.items() for target in _imports(path, modules))


def _upward(edges: list[tuple[str, str]]) -> list[str]:
    return [f"{a} ({LAYERS[_layer(a)][0]}) imports {b} ({LAYERS[_layer(b)][0]})"
            for a, b in edges if _layer(b) > _layer(a)]


def _past_the_doors(edges: list[tuple[str, str]]) -> list[str]:
    return [f"{a} imports {b}" for a, b in edges
            if b.startswith("kernelopt.harness.") and not a.startswith("kernelopt.harness") and b not in HARNESS_DOORS]


def test_every_import_points_down_the_layers() -> None:
    assert _upward(_edges()) == []


def test_the_harness_is_entered_by_its_doors_only() -> None:
    assert _past_the_doors(_edges()) == []


def test_the_layer_rules_can_fail() -> None:
    # what main had before the layers were kept: hardware re-exporting the harness's ceilings,
    # and nodes reaching into the sandbox for the fork server
    assert _upward([("kernelopt.hardware", "kernelopt.harness.measure.ceilings"),
                    ("kernelopt.harness.verify", "kernelopt.hardware.specs")]) == [
        "kernelopt.hardware (hardware) imports kernelopt.harness.measure.ceilings (harness)"]
    assert _past_the_doors([("kernelopt.nodes.setup", "kernelopt.harness.sandbox.runner"),
                            ("kernelopt.nodes.setup", "kernelopt.harness"),
                            ("kernelopt.harness.verify", "kernelopt.harness.sandbox.runner")]) == [
        "kernelopt.nodes.setup imports kernelopt.harness.sandbox.runner"]
    with pytest.raises(AssertionError, match="in no layer"):
        _layer("kernelopt.newroom.module")


def test_every_room_in_the_layers_exists() -> None:
    rooms = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    rooms |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} | {"kernelopt"}
    assert {room for _, named in LAYERS for room in named} == rooms
