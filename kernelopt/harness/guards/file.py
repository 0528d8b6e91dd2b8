"""Whole-file checks that close the back doors around forward's own rules.

forward is held to "no PyTorch compute", but a call can return something other than what forward
computed (a forward hook, a `__call__` override, `forward = other` in the class body, a wrapping
decorator), a torch function can be carried in a value and called under another name
(`self.op = torch.softmax`, `functools.partial(F.softmax)`), and an operator can be reached by
its dunder (`x.__add__`, `type(x).__mul__`). These rules apply to every line of the file.
"""

import ast
from typing import TYPE_CHECKING

from kernelopt.harness.guards import rules as R

if TYPE_CHECKING:
    from kernelopt.harness.guards.base import Checker

_DUNDER_STRING_CALLS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_METHOD_SLOTS = frozenset({"forward", "__call__", "_call_impl", "_wrapped_call_impl"})
_HOST_COPIES = frozenset({"tolist", "numpy"})
_TYPE_CHECKS = frozenset({"isinstance", "issubclass"})  # allowed in __init__, where parameters are built


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_file(checker: "Checker") -> None:
    """Add the violations of the whole-file rules to `checker`."""
    values = _value_positions(checker.tree)
    for node in ast.walk(checker.tree):
        if isinstance(node, ast.Attribute):
            _check_attribute(checker, node)
        elif isinstance(node, ast.Call):
            _check_call(checker, node)
        elif isinstance(node, ast.ClassDef):
            _check_class(checker, node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node not in checker.kernel_nodes:
            _check_decorators(checker, node)
        if node in values and isinstance(node, ast.Name | ast.Attribute):
            _check_torch_value(checker, node)


def _check_attribute(checker: "Checker", node: ast.Attribute) -> None:
    name = node.attr
    if _is_dunder(name) and name not in R.ALLOWED_DUNDERS and name not in R.DYNAMIC_ATTRS:
        checker.add("dynamic-access", node, f"uses .{name}; call Triton kernels and allowed functions directly")
    elif name in R.HOOK_ATTRS:
        checker.add("forward-override", node, f"uses .{name}; the output must be what forward computes")
    elif name in R.ESCAPE_ATTRS or (name in R.FORBIDDEN_ATTRS and checker.dotted(node) is None):
        path = checker.dotted(node) or ""
        if name in _HOST_COPIES and _enclosing_function(checker, node) == "__init__":
            return  # building parameters from host data; forward never sees these
        if path.startswith("triton.language.") or _descriptor_method(checker, node):  # Triton's own
            return
        checker.add(
            "forbidden-attribute",
            node,
            f"uses .{name} ({ast.unparse(node)}); kernels may not reach the interpreter, the harness "
            "or PyTorch's operator tables",
        )


DESCRIPTOR = "triton.language.make_tensor_descriptor"


def _descriptor_method(checker: "Checker", node: ast.Attribute) -> bool:
    """`d.load` / `d.store` in a @triton.jit kernel where every binding of `d` there is a tensor
    descriptor made by tl.make_tensor_descriptor (a TMA load or store, not torch.load)."""
    if node.attr not in ("load", "store") or not isinstance(node.value, ast.Name):
        return False
    kernel = checker.parents.get(node)
    while kernel is not None and kernel not in checker.kernel_nodes:
        kernel = checker.parents.get(kernel)
    if kernel is None:
        return False
    name = node.value.id
    inside = [n for n in ast.walk(kernel) if n is not kernel]
    if any(isinstance(n, _OTHER_BINDINGS) for n in inside) or name in {a.arg for a in ast.walk(kernel)
                                                                        if isinstance(a, ast.arg)}:
        return False  # a name a parameter, a lambda, a nested function, a match, a handler... could bind
    bound = [n for n in inside if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store | ast.Del)]
    made = [n.value for n in inside if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    return bool(made) and len(made) == len(bound) and all(
        isinstance(v, ast.Call) and checker.dotted(v.func) == DESCRIPTOR for v in made)


# statements that bind names other than by `name = value`: a kernel with any of them gets no descriptor methods
_OTHER_BINDINGS = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match, ast.Global,
                   ast.Nonlocal, ast.Try, ast.ExceptHandler, ast.Import, ast.ImportFrom, ast.With, ast.AsyncWith)


def _enclosing_function(checker: "Checker", node: ast.AST) -> str | None:
    parent = checker.parents.get(node)
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
        parent = checker.parents.get(parent)
    return parent.name if parent is not None else None


def _check_call(checker: "Checker", node: ast.Call) -> None:
    for keyword in node.keywords:
        if keyword.arg in ("pre_hook", "post_hook"):  # Triton would run the candidate's callable for it
            checker.add(
                "forward-override",
                keyword.value,
                f"passes {keyword.arg}=, a callable that runs outside the checks; to clear an accumulator "
                "between autotuning runs use triton.autotune(reset_to_zero=[...])",
            )
    if not (isinstance(node.func, ast.Name) and node.func.id in _DUNDER_STRING_CALLS):
        return
    for arg in node.args[1:2]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if _is_dunder(arg.value) and arg.value not in R.ALLOWED_DUNDERS:
                checker.add("dynamic-access", node, f"{node.func.id}(..., {arg.value!r}) reaches a dunder by name")
            elif arg.value in ("Model", "forward") and not (isinstance(node.args[0], ast.Name)
                                                            and node.args[0].id == "self"):
                checker.add("reference-model", node, f"{node.func.id}(..., {arg.value!r}) looks the reference up")


def _check_class(checker: "Checker", node: ast.ClassDef) -> None:
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in _METHOD_SLOTS - {"forward"}:
            checker.add(
                "forward-override",
                stmt,
                f"class {node.name} defines {stmt.name}; a module is called through nn.Module's own __call__",
            )
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in _METHOD_SLOTS:
                    checker.add(
                        "forward-override",
                        stmt,
                        f"class {node.name} rebinds {target.id}; define forward once, as a method",
                    )


def _check_decorators(checker: "Checker", node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        path = checker.dotted(target) or (target.id if isinstance(target, ast.Name) else ast.unparse(target))
        if path in R.ALLOWED_DECORATORS or path in R.CACHE_DECORATORS or path == "property":
            continue  # caching decorators and properties have their own rules
        checker.add(
            "forward-override",
            decorator,
            f"{node.name} is decorated with {path}; only Triton's decorators, staticmethod, classmethod and "
            "torch.no_grad are allowed",
        )


def _check_torch_value(checker: "Checker", node: ast.Name | ast.Attribute) -> None:
    path = checker.dotted(node)
    if path is None or not (path == "torch" or path.startswith("torch.")):
        return
    parent, _, leaf = path.rpartition(".")
    if path in R.TORCH_ALLOWED_IN_FORWARD or (parent == "torch" and leaf in R.TORCH_DTYPES):
        return
    checker.add(
        "torch-as-value",
        node,
        f"keeps {path} as a value to call it later; compute must happen in a @triton.jit kernel",
    )


def _value_positions(tree: ast.Module) -> set[ast.AST]:
    """Expressions used as values: assigned, passed, returned or stored in a container (not type
    annotations, and not the class argument of isinstance/issubclass)."""
    found: set[ast.AST] = set()
    types: set[ast.AST] = set()
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            annotations.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            annotations.append(node.returns)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _TYPE_CHECKS:
            annotations += node.args[1:2]
        for annotation in annotations:
            types.update(ast.walk(annotation))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.Return | ast.keyword) and node.value:
            found.add(node.value)
        elif isinstance(node, ast.Call):
            found.update(a.value if isinstance(a, ast.Starred) else a for a in node.args)
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            found.update(node.elts)
        elif isinstance(node, ast.Dict):
            found.update(v for v in node.values if v is not None)
        elif isinstance(node, ast.Lambda | ast.IfExp):
            found.update([node.body] if isinstance(node, ast.Lambda) else [node.body, node.orelse])
    return found - types
