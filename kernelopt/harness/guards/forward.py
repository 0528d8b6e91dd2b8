"""Checks on the code ModelNew.forward runs: forward itself and the helpers it reaches.

Only this code is held to "no PyTorch compute": the constructor may build parameters with torch,
and @triton.jit bodies are Triton code. Tensor-valued names are tracked so that shape arithmetic
(`n = x.shape[0] * 2`) stays allowed while tensor arithmetic (`x + y`) is caught.
"""

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

from kernelopt.harness.guards import rules as R

if TYPE_CHECKING:
    from kernelopt.harness.guards.base import Checker

_CACHE_WRITERS = frozenset({"setdefault", "update", "__setitem__"})
_CONTAINER_METHODS = frozenset({"sort", "add"})  # list.sort(), set.add(): not tensor compute on a list or set
_STATE_WRITERS = frozenset({"append", "extend", "insert", "register_buffer", "register_parameter", "add"})
_OPERATOR_MESSAGE = "compute must happen in a @triton.jit kernel, not with torch operators"


@dataclass
class Scope:
    """A function reachable from ModelNew.forward and which of its parameters hold tensors."""

    func: ast.FunctionDef
    label: str
    tensor_params: set[str] = field(default_factory=set)


class ForwardScanner:
    """Checks one reachable function; collects the helpers it calls and whether it launches."""

    def __init__(self, checker: "Checker", scope: Scope, methods: dict[str, ast.FunctionDef]) -> None:
        self.checker = checker
        self.scope = scope
        self.methods = methods
        self.label = scope.label
        self.tensors: set[str] = set(scope.tensor_params)
        self.callees: list[Scope] = []
        self.launched = False
        self.nodes = list(checker_walk(checker, scope.func))

    def add(self, rule: str, node: ast.AST, message: str) -> None:
        self.checker.add(rule, node, f"{self.label} {message}")

    def scan(self) -> None:
        self.track_tensor_names()
        for default in self.scope.func.args.defaults + self.scope.func.args.kw_defaults:
            if default is not None:
                self.nodes.extend(ast.walk(default))
        for node in self.nodes:
            self.check_node(node)

    # ----- which names hold tensors -------------------------------------------------------
    def track_tensor_names(self) -> None:
        # Parameters of lambdas and nested functions may receive tensors (`(lambda p, q: p + q)(x, y)`);
        # only a launch grid's parameter is known to be the meta-parameter dict.
        grid_nodes, grid_names = self.grids()
        for node in self.nodes:
            if isinstance(node, ast.Lambda | ast.FunctionDef) and node not in grid_nodes:
                if getattr(node, "name", None) not in grid_names:
                    arguments = node.args
                    self.tensors.update(a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs)
        kinds = ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.For | ast.comprehension
        assigns = [n for n in self.nodes if isinstance(n, kinds)]
        changed = True
        while changed:
            size = len(self.tensors)
            for node in assigns:
                value = node.iter if isinstance(node, ast.For | ast.comprehension) else node.value
                targets = [node.target] if not isinstance(node, ast.Assign) else node.targets
                for target in targets:
                    self.bind(target, value)
            changed = len(self.tensors) != size

    def bind(self, target: ast.expr, value: ast.expr | None) -> None:
        """Mark the names `target` binds as tensors where `value` holds tensors, element by element."""
        if value is None:
            return
        if isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for sub_target, sub_value in zip(target.elts, value.elts, strict=True):
                    self.bind(sub_target, sub_value)
            elif self.is_tensor(value):
                for element in target.elts:
                    self.bind(element, value)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value)
        elif isinstance(target, ast.Name) and self.is_tensor(value):
            self.tensors.add(target.id)

    def grids(self) -> tuple[set[ast.AST], set[str]]:
        """What serves as a launch grid (`kernel[grid](...)`): the expressions and lambdas, and the
        names they go by."""
        nodes: set[ast.AST] = set()
        names: set[str] = set()
        for node in self.nodes:
            if isinstance(node, ast.Subscript) and self.is_launch_target(node):
                nodes.add(node.slice)
                if isinstance(node.slice, ast.Name):
                    names.add(node.slice.id)
        for node in self.nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                if any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
                    nodes.add(node.value)
        return nodes, names

    def is_launch_target(self, node: ast.Subscript) -> bool:
        checker = self.checker
        return (isinstance(node.value, ast.Name) and node.value.id in checker.kernel_names) or (
            checker.dotted(node.value) or ""
        ).split(".")[-1] in checker.kernel_names

    def is_self_attr(self, node: ast.expr, names: set[str] | None = None) -> TypeGuard[ast.Attribute]:
        return (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and (names is None or node.attr in names)
        )

    def is_tensor(self, node: ast.expr) -> bool:
        """Return whether an expression evaluates to a tensor, as far as the AST tells."""
        checker = self.checker
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Attribute):
            if self.is_self_attr(node):
                return node.attr in checker.tensor_attrs
            if self.is_self_attr(node.value, checker.module_attrs):
                return node.attr in ("weight", "bias")
            return node.attr not in R.TENSOR_META_ATTRS and self.is_tensor(node.value)
        if isinstance(node, ast.Subscript | ast.Starred):
            return self.is_tensor(node.value)
        if isinstance(node, ast.BinOp):
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_tensor(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body) or self.is_tensor(node.orelse)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(self.is_tensor(e) for e in node.elts)
        if isinstance(node, ast.Call):
            path = checker.dotted(node.func) or ""
            if path in R.TORCH_METADATA_CALLS or path.startswith("torch.cuda."):
                return False
            if path.startswith("torch."):
                return True
            func = node.func
            return (
                isinstance(func, ast.Attribute)
                and func.attr not in R.TENSOR_META_METHODS
                and self.is_tensor(func.value)
            )
        return False

    # ----- per-node checks --------------------------------------------------------------
    def check_node(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name | ast.Attribute):
            self.check_torch_path(node)
        if isinstance(node, ast.Call):
            self.check_call(node)
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                self.add("operator-in-forward", node, f"uses the @ operator; {_OPERATOR_MESSAGE}")
            elif self.is_tensor(node.left) or self.is_tensor(node.right):
                self.add("operator-in-forward", node, f"computes `{ast.unparse(node)}` with torch; {_OPERATOR_MESSAGE}")
        elif isinstance(node, ast.AugAssign):
            if self.is_tensor(node.target) or self.is_tensor(node.value):
                self.add(
                    "operator-in-forward",
                    node,
                    f"computes `{ast.unparse(node).strip()}` with torch; {_OPERATOR_MESSAGE}",
                )
            self.check_store(node.target, node.value)
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            if self.is_tensor(node.operand):
                self.add("operator-in-forward", node, f"computes `{ast.unparse(node)}` with torch; {_OPERATOR_MESSAGE}")
        elif isinstance(node, ast.Compare):
            self.check_compare(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self.check_store(target, node.value)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if self.is_tensor(node.slice):
                self.add(
                    "operator-in-forward",
                    node,
                    "indexes a tensor with a tensor; gathers must happen in a @triton.jit kernel",
                )
        elif isinstance(node, ast.Try | ast.TryStar):
            self.add("try-except-in-forward", node, "uses try/except; a failing kernel must fail, not fall back")
        elif isinstance(node, ast.Global | ast.Nonlocal):
            self.add(
                "global-write",
                node,
                f"declares {', '.join(node.names)} global; forward must not keep state between calls",
            )

    def check_torch_path(self, node: ast.Name | ast.Attribute) -> None:
        if isinstance(self.checker.parents.get(node), ast.Attribute):
            return
        path = self.checker.dotted(node)
        if path is None or not (path == "torch" or path.startswith("torch.")):
            return
        parent, _, leaf = path.rpartition(".")
        if (
            path in R.TORCH_ALLOWED_IN_FORWARD
            or path in R.STREAM_PATHS
            or (parent == "torch" and leaf in R.TORCH_DTYPES)
        ):
            return
        self.add("torch-compute-in-forward", node, f"uses {path}; compute must happen in a @triton.jit kernel")

    def check_call(self, node: ast.Call) -> None:
        func = node.func
        checker = self.checker
        if isinstance(func, ast.Subscript) and self.is_launch_target(func):
            self.launched = True
        elif isinstance(func, ast.Name):
            self.check_named_call(node, func.id)
        elif isinstance(func, ast.Attribute) and checker.dotted(func) is None:
            self.check_method_call(node, func)

    def check_named_call(self, node: ast.Call, name: str) -> None:
        checker = self.checker
        if name in ("id", "hash"):
            self.add("cache-across-calls", node, f"calls {name}(); outputs must not be looked up by input identity")
        if name == "setattr" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
            if len(node.args) > 2 and self.is_tensor(node.args[2]):
                self.add("cache-across-calls", node, "stores a tensor on self with setattr; every call must compute")
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if (name in R.COMPUTING_BUILTINS or checker.aliases.get(name) == "functools.reduce") and any(
            self.is_tensor(a) for a in arguments
        ):
            self.add("operator-in-forward", node, f"applies {name}() to tensors; {_OPERATOR_MESSAGE}")
        if name in checker.functions:
            self.queue(checker.functions[name], name, node, offset=0)
        elif name in checker.classes:
            self.queue_class(name, node)

    def check_method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        checker = self.checker
        receiver = func.value
        if self.is_self_attr(receiver, checker.module_attrs):  # self.layer.forward(x), self.layer.__call__
            self.add(
                "nn-module-in-forward",
                node,
                f"applies self.{receiver.attr} (an nn layer); use its parameters in a @triton.jit kernel",
            )
        elif self.is_self_attr(func, checker.module_attrs):
            self.add(
                "nn-module-in-forward",
                node,
                f"applies self.{func.attr} (an nn layer); use its parameters in a @triton.jit kernel",
            )
        elif self.is_self_attr(func, set(self.methods)):
            self.queue(self.methods[func.attr], f"self.{func.attr}", node, offset=1)
        elif func.attr in R.TENSOR_CAST_METHODS or (func.attr == "to" and self.is_cast(node)):
            self.add(
                "tensor-method-in-forward",
                node,
                f"casts with .{func.attr}(); dtype conversion is compute and must happen in a @triton.jit kernel",
            )
        elif self.is_tensor(receiver) and func.attr not in R.TENSOR_ALLOWED_METHODS:
            self.add(
                "tensor-method-in-forward",
                node,
                f"calls .{func.attr}() on a tensor; forward may only allocate, view and read metadata "
                "(compute must happen in a @triton.jit kernel)",
            )
        elif func.attr in R.TENSOR_COMPUTE_METHODS - _CONTAINER_METHODS and not self.is_self_attr(receiver):
            self.add(
                "tensor-method-in-forward", node, f"calls .{func.attr}(); compute must happen in a @triton.jit kernel"
            )
        elif func.attr in _STATE_WRITERS and self.is_state(func.value) and any(
            self.is_tensor(a) for a in [*node.args, *(k.value for k in node.keywords)]
        ):
            self.add(
                "cache-across-calls",
                node,
                f"keeps a tensor in {ast.unparse(func.value)} with .{func.attr}(); every call must compute its output",
            )
        elif func.attr in _CACHE_WRITERS and self.is_state(func.value):
            self.add(
                "cache-across-calls",
                node,
                f"writes {ast.unparse(func.value)} with .{func.attr}(); every call must compute its output",
            )
        if func.attr == "data_ptr" and self.used_as_key(node):
            self.add("cache-across-calls", node, "keys by .data_ptr(); outputs must not be looked up by input identity")
        if isinstance(func.value, ast.Name) and func.value.id in checker.classes:
            self.queue_class(func.value.id)

    def is_cast(self, node: ast.Call) -> bool:
        for arg in [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]:
            path = self.checker.dotted(arg) or ""
            if path.rpartition(".")[2] in R.TORCH_DTYPES or (isinstance(arg, ast.Attribute) and arg.attr == "dtype"):
                return True
        return any(k.arg == "dtype" for k in node.keywords)

    def is_state(self, node: ast.expr) -> bool:
        """Return whether a container outlives the call: an attribute of self or a global."""
        return self.is_self_attr(node) or (isinstance(node, ast.Name) and node.id in self.checker.globals)

    def used_as_key(self, node: ast.AST) -> bool:
        parent = self.checker.parents.get(node)
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.Subscript | ast.Dict) or (
                isinstance(parent, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in parent.ops)
            ):
                return True
            parent = self.checker.parents.get(parent)
        return False

    def check_store(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Subscript) and self.is_state(target.value) and self.is_tensor(value):
            self.add(
                "cache-across-calls",
                target,
                f"stores into {ast.unparse(target.value)}; every call must compute its output",
            )
        elif isinstance(target, ast.Subscript) and self.is_tensor(target.value) and self.is_tensor(value):
            self.add("operator-in-forward", target, "copies tensors with indexed assignment; " + _OPERATOR_MESSAGE)
        elif self.is_self_attr(target) and self.is_tensor(value):
            self.add(
                "cache-across-calls",
                target,
                f"stores a tensor on {ast.unparse(target)}; every call must compute its output",
            )

    def check_compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
            return
        if any(self.is_tensor(operand) for operand in [node.left, *node.comparators]):
            self.add("operator-in-forward", node, f"compares tensors in `{ast.unparse(node)}`; " + _OPERATOR_MESSAGE)

    # ----- reachable helpers ------------------------------------------------------------
    def queue(self, func: ast.FunctionDef, name: str, call: ast.Call, offset: int) -> None:
        params = [a.arg for a in func.args.posonlyargs + func.args.args][offset:]
        tensors = {p for p, a in zip(params, call.args, strict=False) if self.is_tensor(a)}
        tensors |= {k.arg for k in call.keywords if k.arg and self.is_tensor(k.value)}
        self.callees.append(Scope(func, f"{name} (reached from forward)", tensors))

    def is_autograd(self, name: str) -> bool:
        bases = [self.checker.dotted(b) or "" for b in self.checker.classes[name].bases]
        return any(b.startswith("torch.autograd") for b in bases)

    def queue_class(self, name: str, call: ast.Call | None = None) -> None:
        if name in ("ModelNew", "Model"):
            return
        for stmt in self.checker.classes[name].body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__" and call is not None:
                self.queue(stmt, f"{name}.__init__", call, offset=1)  # its parameters are what the call passes
            elif isinstance(stmt, ast.FunctionDef) and not (stmt.name == "backward" and self.is_autograd(name)):
                tensors = self.checker.default_tensor_params(stmt, skip=1)
                self.callees.append(Scope(stmt, f"{name}.{stmt.name} (reached from forward)", tensors))


def checker_walk(checker: "Checker", func: ast.FunctionDef) -> list[ast.AST]:
    """Return the nodes of a function body, leaving out nested @triton.jit kernels."""
    nodes: list[ast.AST] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(c for c in ast.iter_child_nodes(node) if c not in checker.kernel_nodes)
    return nodes
