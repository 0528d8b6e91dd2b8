"""Small questions about the syntax tree the checker asks (module statements, properties,
constants, scalar-only helpers)."""

from __future__ import annotations

import ast

from kernelopt.harness.guards import rules as R


def _module_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, including those inside module-level if/with/try/for blocks."""
    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, ast.If | ast.With | ast.For | ast.While | ast.Try | ast.TryStar):
            for field in ("body", "orelse", "finalbody"):
                found += _module_statements(getattr(stmt, field, []))
            for handler in getattr(stmt, "handlers", []):
                found += _module_statements(handler.body)
    return found


def _is_property(node: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def _is_constant(node: ast.expr | None) -> bool:
    """A literal default (`3`, `-1`, `None`, `"mean"`): the parameter does not hold a tensor."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant)


def _scalar_only(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every parameter annotated int/float/bool/str: a cache on it cannot hold outputs keyed by inputs."""
    arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    return bool(arguments) and all(
        isinstance(a.annotation, ast.Name) and a.annotation.id in R.NON_TENSOR_ANNOTATIONS for a in arguments
    )
