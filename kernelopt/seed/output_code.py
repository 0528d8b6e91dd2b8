"""Inductor's output module, read as data: its Triton kernels and the body of its `call`.

The module is parsed, never run. What is taken from it: each `async_compile.triton(NAME,
SOURCE)` kernel with the facts its decorator states (kind, grid type, signature, the launch
settings of a template), and the statements of `call(args)` in order. Anything shaped
differently (another torch version) raises SeedError naming the construct.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from kernelopt.seed.errors import SeedError
from kernelopt.syntax import parse

HEURISTIC_KINDS = frozenset({"pointwise", "reduction", "persistent_reduction", "template"})


@dataclass(frozen=True)
class InductorKernel:
    """One Triton kernel of the output module, as its decorator describes it."""

    name: str
    source: str  # the kernel module's text, decorator included
    kind: str  # pointwise | reduction | persistent_reduction | template
    grid_type: str  # Grid1D | Grid2D | FixedGrid | ...
    params: tuple[str, ...]  # the jit function's parameters, in order
    constexprs: tuple[str, ...]  # the parameters typed constexpr
    template_warps: int | None = None  # a template's launch settings (its decorator's)
    template_stages: int | None = None


@dataclass(frozen=True)
class OutputModule:
    """The kernels by name and the statements of `call`, after its argument unpacking."""

    kernels: dict[str, InductorKernel]
    arg_names: tuple[str, ...]
    body: tuple[ast.stmt, ...] = field(default=())


def _one_line(node: ast.AST) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= 100 else text[:97] + "..."


def unknown(what: str, node: ast.AST | None = None) -> SeedError:
    shown = f": `{_one_line(node)}`" if node is not None else ""
    return SeedError(f"the compiler's output has a construct the seed translator does not know ({what}){shown}")


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _dict_entry(node: ast.expr | None, key: str) -> ast.expr | None:
    if not isinstance(node, ast.Dict):
        return None
    for k, v in zip(node.keys, node.values, strict=True):
        if isinstance(k, ast.Constant) and k.value == key:
            return v
    return None


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def parse_kernel(name: str, source: str) -> InductorKernel:
    """The facts of one kernel module's decorated jit function."""
    try:
        tree = parse(source)
    except SyntaxError as err:
        raise SeedError(f"kernel {name} from the compiler does not parse: {err}") from err
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        raise unknown(f"no function named {name} in its kernel module")
    heuristic = next(
        (
            d
            for d in fn.decorator_list
            if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in HEURISTIC_KINDS
        ),
        None,
    )
    if heuristic is None:
        kinds = [ast.unparse(d).split("(")[0] for d in fn.decorator_list]
        raise unknown(f"kernel {name} is decorated {', '.join(kinds)}; known: {', '.join(sorted(HEURISTIC_KINDS))}")
    assert isinstance(heuristic.func, ast.Attribute)
    kind = heuristic.func.attr
    meta = _keyword(heuristic, "inductor_meta")
    grid_type = _literal(_dict_entry(meta, "grid_type")) or ("FixedGrid" if kind == "template" else "Grid1D")
    constexprs = tuple(
        a.arg for a in fn.args.args if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")
    )
    return InductorKernel(
        name=name,
        source=source,
        kind=kind,
        grid_type=str(grid_type),
        params=tuple(a.arg for a in fn.args.args),
        constexprs=constexprs,
        template_warps=_literal(_keyword(heuristic, "num_warps")),
        template_stages=_literal(_keyword(heuristic, "num_stages")),
    )


def _kernel_of(stmt: ast.stmt) -> tuple[str, str] | None:
    """(name, source) when `stmt` is `NAME = async_compile.triton('NAME', '''SOURCE''', ...)`."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
        return None
    func = stmt.value.func
    if not (isinstance(func, ast.Attribute) and func.attr == "triton"):
        return None
    args = stmt.value.args
    if len(args) < 2 or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args[:2]):
        raise unknown("async_compile.triton without a name and a source string", stmt)
    return str(args[0].value), str(args[1].value)  # type: ignore[union-attr]


def _call_function(tree: ast.Module) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise unknown("no call(args) function")


def parse_output(code: str) -> OutputModule:
    """The kernels and the `call` body of one Inductor output module."""
    try:
        tree = parse(code)
    except SyntaxError as err:
        raise SeedError(f"the compiler's output module does not parse: {err}") from err
    kernels: dict[str, InductorKernel] = {}
    for stmt in tree.body:
        found = _kernel_of(stmt)
        if found:
            kernels[found[0]] = parse_kernel(*found)
    call = _call_function(tree)
    body = list(call.body)
    if not body or not isinstance(body[0], ast.Assign) or ast.unparse(body[0].value) != "args":
        raise unknown("call(args) does not begin by unpacking args", body[0] if body else None)
    target = body[0].targets[0]
    names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
    if not all(isinstance(n, ast.Name) for n in names):
        raise unknown("call(args) unpacks args into something other than names", body[0])
    arg_names = tuple(n.id for n in names if isinstance(n, ast.Name))
    return OutputModule(kernels=kernels, arg_names=arg_names, body=tuple(body[1:]))
