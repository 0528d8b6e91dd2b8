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

from kernelopt.syntax import python_lines

_DEFINES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef,
            ast.AsyncFunctionDef)
FUNCTION = "_reference_module_names"  # the function the copied statements run in (their own namespace)


def _bound(stmt: ast.stmt) -> set[str]:
    """The module-level names a statement binds or changes (`C = 4`, `C += 1`, `CONFIG["h"] = 6`, `cfg.x = 1`)."""
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return {stmt.name}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
    bound = set()
    for target in targets:
        while isinstance(target, ast.Subscript | ast.Attribute):  # a change of the value the name holds
            target = target.value
        bound |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return bound


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


def _parameters(arguments: ast.arguments) -> set[str]:
    return {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                            *(x for x in (arguments.vararg, arguments.kwarg) if x))}


# What every kernel file has already: its imports of torch and nn (a copy would only repeat them)
KERNEL_FILE_NAMES = frozenset({"torch", "nn"})


def prelude(tree: ast.Module, source: str, init: ast.FunctionDef, model: str = "Model",
            signature: bool = False) -> list[str]:
    """Source lines that define, where they run, the module-level names the `model` class's `init` reads (its
    body's, or with `signature` its defaults' and annotations'); [] where it reads none.

    Every module-level statement that binds or changes such a name (and those that define what it reads) runs,
    in the problem's order, in a function of its own, so that its own names (a dependency that shares a name with
    one of the `__init__`'s parameters) touch nothing else; only the names read are bound from its result. The
    class itself is not one (its `super(Model, self)` becomes `super()`)."""
    wanted = _read_signature(init.args) if signature else _read(init) - _parameters(init.args)
    statements = [stmt for stmt in tree.body if isinstance(stmt, _DEFINES)]
    binding = {stmt: _bound(stmt) - KERNEL_FILE_NAMES - {model} for stmt in statements}
    needed: set[str] = set()
    pending = set(wanted)
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        for stmt in (s for s in statements if name in binding[s]):
            pending |= _read(stmt) - needed
    chosen = [stmt for stmt in statements if binding[stmt] & needed]
    read = sorted(wanted & {name for stmt in chosen for name in binding[stmt]})
    if not read:
        return []
    lines = [f"def {FUNCTION}():"]
    for stmt in chosen:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
        text = "".join(python_lines(source)[first - 1 : stmt.end_lineno])
        lines.extend("    " + line.rstrip("\r\n") for line in python_lines(textwrap.dedent(text)) if line)
    lines.append(f"    return {', '.join(read)},")
    lines.append(f"{', '.join(read)}, = {FUNCTION}()")
    return lines
