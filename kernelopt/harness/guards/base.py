"""What forward.py and file.py need of the checker that runs them (checker.py's `_Checker`),
as a Protocol: they import this, not the checker, so the guards import in one direction."""

from __future__ import annotations

import ast
from typing import Protocol


class Checker(Protocol):
    tree: ast.Module
    aliases: dict[str, str]
    parents: dict[ast.AST, ast.AST]
    kernel_nodes: set[ast.AST]
    kernel_names: set[str]
    functions: dict[str, ast.FunctionDef]
    classes: dict[str, ast.ClassDef]
    globals: set[str]
    module_attrs: set[str]
    tensor_attrs: set[str]

    def add(self, rule: str, node: ast.AST, message: str) -> None: ...

    def dotted(self, node: ast.AST) -> str | None: ...

    def default_tensor_params(self, func: ast.FunctionDef, skip: int) -> set[str]: ...
