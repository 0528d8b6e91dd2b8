"""The module-level names a reference's `__init__` reads, for a kernel file that copies that `__init__`.

A problem may size its layers from its own module's names (`nn.Conv1d(C, 6, 3)` with `C = 4` at the top of the
file) rather than from `get_init_inputs`. ModelNew's copy of the `__init__` stands in another file, where `C` is
not defined: building it raised NameError, so the seed, the convolution template and the affine norms' templates
could not be built at all. The statements that define such names (assignments, imports, and the classes or
functions the `__init__` calls), and those they read in turn, are written at the top of the copied `__init__`'s
body, in the order the problem has them: they run there as they ran in the problem's module.
"""

from __future__ import annotations

import ast
import builtins
import textwrap

_DEFINES = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef)


def _bound(stmt: ast.stmt) -> set[str]:
    """The module-level names a statement binds."""
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ClassDef | ast.FunctionDef):
        return {stmt.name}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _read(node: ast.AST) -> set[str]:
    """The names a node reads that it does not bind itself (a function's parameters and locals excluded)."""
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    stores = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)}
    params = {a.arg for n in ast.walk(node) if isinstance(n, ast.arguments)
              for a in (*n.posonlyargs, *n.args, *n.kwonlyargs, *(x for x in (n.vararg, n.kwarg) if x))}
    return loads - stores - params - set(dir(builtins))


def _read_signature(arguments: ast.arguments) -> set[str]:
    """The names a signature's defaults and annotations read (evaluated where the `def` runs: the class body)."""
    parts = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    parts += [a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                     *(x for x in (arguments.vararg, arguments.kwarg) if x)) if a.annotation]
    return set().union(*(_read(p) for p in parts)) if parts else set()


# What every kernel file has already: its imports of torch and nn (a copy would only repeat them)
KERNEL_FILE_NAMES = frozenset({"torch", "nn"})


def prelude(tree: ast.Module, source: str, init: ast.AST, model: str = "Model") -> list[str]:
    """The problem's module-level statements that `init` (the `model` class's `__init__`, or its signature's
    arguments alone) needs, in the problem's order, as source lines; the class itself is not one (its
    `super(Model, self)` becomes `super()`)."""
    defining = {name: stmt for stmt in tree.body if isinstance(stmt, _DEFINES) for name in _bound(stmt)
                if name not in KERNEL_FILE_NAMES | {model}}
    needed: list[ast.stmt] = []
    pending = sorted(_read(init) if not isinstance(init, ast.arguments) else _read_signature(init))
    while pending:
        name = pending.pop()
        stmt = defining.get(name)
        if stmt is None or stmt in needed:
            continue
        needed.append(stmt)
        pending.extend(sorted(_read(stmt) - _bound(stmt)))
    lines: list[str] = []
    for stmt in sorted(needed, key=lambda s: s.lineno):
        text = ast.get_source_segment(source, stmt) or ""
        lines.extend(textwrap.dedent(text).splitlines())
    return lines
