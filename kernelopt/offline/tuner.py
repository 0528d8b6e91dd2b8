"""The offline optimizer: a search over a kernel's launch parameters.

Tunable parameters are read from the kernel's source, never guessed: upper-case integer
constants assigned in the module or in ModelNew's methods (`BLOCK_SIZE = 128`), and integer
keyword arguments of a Triton launch (`BLOCK_K=32`, `num_warps=4`, `num_stages=2`). Each
variant changes one parameter by one step (x2 or /2 for sizes and warps, +-1 for stages), so
the search walks downhill from the current best one verified step at a time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from kernelopt.hardware.roofline import Bound

SIZE_MIN, SIZE_MAX = 16, 8192
WARPS = (1, 2, 4, 8, 16)
STAGES_MIN, STAGES_MAX = 1, 6


@dataclass(frozen=True)
class LaunchParam:
    """One tunable integer in the source, and where its literal sits."""

    name: str
    value: int
    line: int  # 1-based
    col: int  # 0-based start of the literal
    end_col: int


@dataclass(frozen=True)
class Variant:
    """A rewritten source and the one change that made it."""

    source: str
    change: str


def _is_launch(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Subscript)  # kernel[grid](...)


def _int_literal(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def find_launch_params(source: str) -> list[LaunchParam]:
    """Every tunable integer literal in `source`, in source order."""
    tree = ast.parse(source)
    params: list[LaunchParam] = []
    scopes: list[ast.AST] = [tree]
    scopes += [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
    for scope in scopes:
        body = (
            scope.body
            if isinstance(scope, ast.Module)
            else [s for f in scope.body if isinstance(f, ast.FunctionDef) for s in ast.walk(f)]
        )
        for node in body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, _int_literal(node.value)
                if value is not None and name.isupper() and node.value.end_col_offset is not None:
                    params.append(
                        LaunchParam(name, value, node.value.lineno, node.value.col_offset, node.value.end_col_offset)
                    )
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_launch(n)):
        for keyword in call.keywords:
            value = _int_literal(keyword.value) if keyword.arg else None
            if value is None or keyword.value.end_col_offset is None or keyword.arg is None:
                continue
            if keyword.arg.isupper() or keyword.arg in ("num_warps", "num_stages"):
                params.append(
                    LaunchParam(
                        keyword.arg, value, keyword.value.lineno, keyword.value.col_offset, keyword.value.end_col_offset
                    )
                )
    return sorted(set(params), key=lambda p: (p.line, p.col))


def _steps(param: LaunchParam) -> list[int]:
    if param.name == "num_stages":
        return [v for v in (param.value + 1, param.value - 1) if STAGES_MIN <= v <= STAGES_MAX]
    if param.name == "num_warps":
        return [v for v in (param.value * 2, param.value // 2) if v in WARPS]
    return [v for v in (param.value * 2, param.value // 2) if SIZE_MIN <= v <= SIZE_MAX]


def _rewrite(source: str, param: LaunchParam, value: int) -> str:
    lines = source.splitlines(keepends=True)
    line = lines[param.line - 1]
    lines[param.line - 1] = line[: param.col] + str(value) + line[param.end_col :]
    return "".join(lines)


def _priority(param: LaunchParam, value: int, bound: Bound) -> int:
    """Lower first: which moves are most likely to help this kind of bottleneck."""
    grows = value > param.value
    if param.name == "num_stages":
        return 1 if (bound == "compute") == grows else 3
    if param.name == "num_warps":
        return 2 if grows else 3
    if bound == "underutilized":
        return 0 if not grows else 2  # smaller blocks: more programs to fill the GPU
    return 0 if grows else 2  # larger blocks: fewer, longer programs; more reuse per load


def variants(source: str, bound: Bound = "unknown") -> Iterator[Variant]:
    """One-step variants of `source`, most promising first for a kernel with this `bound`."""
    moves = [(param, value) for param in find_launch_params(source) for value in _steps(param)]
    moves.sort(key=lambda move: _priority(move[0], move[1], bound))
    for param, value in moves:
        yield Variant(_rewrite(source, param, value), f"{param.name} {param.value} -> {value}")
