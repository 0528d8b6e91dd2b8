"""Static anti-cheat checks on a candidate kernel's source, before anything of it runs.

The candidate is LLM-written: it may compute with PyTorch instead of Triton, hide a fallback,
patch the timer, cache outputs or reach the verifier's memory. These checks read the AST only;
tricks they cannot see (precision, shape specialisation, races) are left to the runtime checks.
Rule ids and their meaning live in guard_rules.RULES.
"""

import ast
from dataclasses import dataclass

from kernelopt.harness.guards import rules as R
from kernelopt.harness.guards.file import check_file
from kernelopt.harness.guards.forward import ForwardScanner, Scope
from kernelopt.harness.guards.syntax import _is_constant, _is_property, _module_statements, _scalar_only
from kernelopt.syntax import parse

_TENSOR_CREATORS = (
    "torch.nn.Parameter",
    "torch.empty",
    "torch.zeros",
    "torch.ones",
    "torch.full",
    "torch.randn",
    "torch.rand",
    "torch.tensor",
    "torch.arange",
)


@dataclass(frozen=True)
class Violation:
    """One broken rule: its id (see guard_rules.RULES), its 1-based line, a sentence for people."""

    rule: str
    line: int
    message: str


def format_violation(violation: Violation, filename: str = "kernel.py") -> str:
    """Return `file:line [rule] message`, the form used in logs and LLM repair feedback."""
    return f"{filename}:{violation.line} [{violation.rule}] {violation.message}"


def check_kernel_source(source: str, filename: str = "kernel.py") -> list[Violation]:
    """Return every rule the kernel source breaks, sorted by line (empty when it looks honest)."""
    try:
        tree = parse(source, filename=filename)
    except SyntaxError as err:
        return [Violation("syntax-error", err.lineno or 1, f"invalid syntax: {err.msg}")]
    checker = _Checker(tree)
    checker.run()
    unique = {(v.line, v.rule, v.message): v for v in checker.violations}
    return [unique[key] for key in sorted(unique)]


def first_violation(source: str, filename: str = "kernel.py") -> tuple[str, str] | None:
    """The first violation's rule id and its line (for a person or an LLM), or None."""
    violations = check_kernel_source(source, filename)
    return (violations[0].rule, format_violation(violations[0], filename)) if violations else None


def first_violation_line(source: str, filename: str = "kernel.py") -> str | None:
    """One line describing the first violation (for a person or an LLM), or None."""
    found = first_violation(source, filename)
    return found[1] if found else None


class _Checker:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.violations: list[Violation] = []
        self.aliases: dict[str, str] = {}
        self.parents: dict[ast.AST, ast.AST] = {
            child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
        }
        self.kernel_nodes: set[ast.AST] = set()
        self.kernel_names: set[str] = set()
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.globals: set[str] = set()
        self.module_attrs: set[str] = set()
        self.tensor_attrs: set[str] = set()

    def add(self, rule: str, node: ast.AST, message: str) -> None:
        self.violations.append(Violation(rule, getattr(node, "lineno", 1), message))

    def dotted(self, node: ast.AST) -> str | None:
        """Return the import-resolved dotted path of a Name/Attribute chain (None if local)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def is_kernel_decorator(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        return self.dotted(target) in R.TRITON_DECORATORS

    # ----- module-wide pass -------------------------------------------------------------
    def run(self) -> None:
        self.collect_module()
        for node in ast.walk(self.tree):
            self.check_module_node(node)
        check_file(self)
        model_new = self.classes.get("ModelNew")
        if model_new is None:
            self.add(
                "no-model-new",
                self.tree,
                "no class ModelNew; define class ModelNew(nn.Module) with the reference's constructor arguments",
            )
        if not self.kernel_names:
            self.add("no-triton-kernel", self.tree, "no @triton.jit function; compute must happen in a Triton kernel")
        if model_new is not None:
            self.check_forward(model_new)

    def collect_module(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for name in node.names:
                    local = name.asname or name.name.split(".")[0]
                    self.aliases[local] = name.name if name.asname else local
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for name in node.names:
                    self.aliases[name.asname or name.name] = f"{node.module}.{name.name}"
        for stmt in _module_statements(self.tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                if any(self.is_kernel_decorator(d) for d in stmt.decorator_list):
                    self.kernel_names.add(stmt.name)
                elif isinstance(stmt, ast.FunctionDef):
                    self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                self.globals.update(names)
                value = stmt.value
                if isinstance(value, ast.Call) and self.is_kernel_decorator(value.func):
                    self.kernel_names.update(names)
                elif value is not None and (path := self.dotted(value)):
                    self.aliases.update(dict.fromkeys(names, path))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                self.is_kernel_decorator(d) for d in node.decorator_list
            ):
                self.kernel_nodes.add(node)
        # A name bound to a module or a torch function inside a function (`t = torch`) is an alias
        # everywhere: resolving it conservatively can only catch more.
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and node.value is not None and (path := self.dotted(node.value)):
                names = [t.id for t in node.targets if isinstance(t, ast.Name) and t.id not in self.aliases]
                self.aliases.update(dict.fromkeys(names, path))

    def check_module_node(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            # every binding, not only an assignment's targets: a for loop's, a with's, an unpacked tuple's,
            # a comprehension's and a walrus's bind too (`for torch.cuda.Event.elapsed_time in (f,): pass`)
            self.check_patch_target(node)
            self.check_dunder_target(node)
        if isinstance(node, ast.Import | ast.ImportFrom):
            self.check_import(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in R.DYNAMIC_NAMES:
                self.add("dynamic-access", node, f"uses {node.id}; call Triton kernels directly")
            elif node.id == "Model":
                self.add(
                    "reference-model",
                    node,
                    "uses the reference Model; ModelNew must compute the result with its own Triton kernels",
                )
        elif isinstance(node, ast.Attribute):
            self.check_attribute(node)
        elif isinstance(node, ast.Call):
            self.check_module_call(node)
        elif isinstance(node, ast.ClassDef):
            if any(k.arg == "metaclass" for k in node.keywords):
                self.add("deferred-output", node, f"class {node.name} has a metaclass; it can run code the checks miss")
            for base in node.bases:
                if self.dotted(base) in R.TENSOR_BASES:
                    self.add(
                        "tensor-subclass",
                        node,
                        f"class {node.name} subclasses {self.dotted(base)}; outputs must be plain tensors computed "
                        "in forward",
                    )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.check_definition(node)

    def check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom):
            if any(alias.name == "Model" for alias in node.names):
                self.add(
                    "reference-model",
                    node,
                    "imports the reference Model; ModelNew must compute the result with its own Triton kernels",
                )
                return
            modules = [("." * node.level) + (node.module or "")]
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            if module not in R.ALLOWED_IMPORTS and not module.startswith(R.ALLOWED_IMPORT_TREES):
                self.add(
                    "forbidden-import",
                    node,
                    f"imports {module}; kernels may import only "
                    f"{', '.join(sorted(R.ALLOWED_IMPORTS - {'__future__'}))}",
                )

    def check_attribute(self, node: ast.Attribute) -> None:
        path = self.dotted(node)
        is_chain_top = not isinstance(self.parents.get(node), ast.Attribute)
        if node.attr in R.DYNAMIC_ATTRS:
            self.add("dynamic-access", node, f"uses .{node.attr}; call Triton kernels directly")
        elif node.attr in R.INTROSPECTION_ATTRS:
            self.add(
                "introspection", node, f"uses .{node.attr}; kernels may not inspect frames or the garbage collector"
            )
        elif node.attr in R.FORBIDDEN_ATTRS and path:
            self.add(
                "forbidden-attribute", node, f"reaches {path}; kernels may not use os/sys/process/network facilities"
            )
        elif node.attr == "Model":
            self.add("reference-model", node, "uses the reference Model")
        elif path and is_chain_top and path.startswith(R.FORBIDDEN_PATH_PREFIXES):
            self.add(
                "forbidden-attribute",
                node,
                f"uses {path}; kernels may not save, load, compile or benchmark through library entry points",
            )
        if path in R.STREAM_PATHS and is_chain_top:
            self.add(
                "cuda-stream", node, f"uses {path}; launch every kernel on the current stream, without graphs or events"
            )

    def check_module_call(self, node: ast.Call) -> None:
        func_path = self.dotted(node.func)
        name = node.func.id if isinstance(node.func, ast.Name) else None
        first = node.args[0] if node.args else None
        first_is_self = isinstance(first, ast.Name) and first.id == "self"
        if name == "getattr" and first is not None:
            attr = node.args[1] if len(node.args) > 1 else None
            on_self = first_is_self or ast.unparse(first).startswith("self.")  # getattr(self.fc, "bias", None)
            if not on_self or not isinstance(attr, ast.Constant):
                self.add(
                    "dynamic-access",
                    node,
                    "getattr looks a name up dynamically; call Triton kernels and allowed functions directly",
                )
        elif name in ("setattr", "delattr") and not first_is_self:
            self.add("monkey-patch", node, f"{name} on an object other than self")
        elif (
            func_path is None
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("object", "type")
            and node.func.attr in ("__setattr__", "__delattr__")
        ):
            self.add(
                "monkey-patch", node, f"{node.func.value.id}.{node.func.attr} bypasses normal attribute assignment"
            )
        elif name == "open":
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            if mode is not None and not (
                isinstance(mode, ast.Constant) and isinstance(mode.value, str) and not set(mode.value) & set("wax+")
            ):
                self.add("file-write", node, "opens a file for writing; kernels write only their output tensors")

    def check_patch_target(self, target: ast.expr) -> None:
        if not isinstance(target, ast.Attribute):
            return
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if target.attr == "__class__":
            self.add("monkey-patch", target, "assigns __class__")
        elif isinstance(root, ast.Name) and root.id in self.aliases:
            self.add(
                "monkey-patch",
                target,
                f"assigns {self.aliases[root.id]}"
                f"{ast.unparse(target)[len(root.id) :]}, which the kernel file does not own",
            )

    def check_dunder_target(self, target: ast.AST) -> None:
        """`__torch_function__ = classmethod(f)` in a class body, or `C.__torch_function__ = f`: the hook
        bound without a def (the definition check sees only defs)."""
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
        if name in R.LAZY_DUNDERS:
            self.add("tensor-subclass", target, f"binds {name}; outputs must be plain tensors")
        elif name in R.DEFERRED_DUNDERS:
            self.add("deferred-output", target, f"binds {name}; outputs must not be computed on access")

    def check_definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in R.LAZY_DUNDERS:
            self.add("tensor-subclass", node, f"defines {node.name}; outputs must be plain tensors")
        elif node.name in R.DEFERRED_DUNDERS:
            self.add("deferred-output", node, f"defines {node.name}; outputs must not be computed on access")
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            path = self.dotted(target)
            if path in R.CACHE_DECORATORS and not _scalar_only(node):
                self.add(
                    "cache-across-calls",
                    decorator,
                    f"{node.name} is decorated with {path}; every call must compute its output",
                )
            elif isinstance(target, ast.Name) and target.id == "property" and not self.is_model_new_method(node):
                self.add(
                    "deferred-output", decorator, f"{node.name} is a property; outputs must not be computed on access"
                )

    def is_model_new_method(self, node: ast.AST) -> bool:
        parent = self.parents.get(node)
        return isinstance(parent, ast.ClassDef) and parent.name == "ModelNew"

    # ----- forward scope -----------------------------------------------------------------
    def check_forward(self, model_new: ast.ClassDef) -> None:
        methods = {s.name: s for s in model_new.body if isinstance(s, ast.FunctionDef)}
        forward = methods.get("forward")
        if forward is None:
            self.add("no-kernel-launch", model_new, "ModelNew has no forward method")
            return
        self.collect_self_attrs(methods.get("__init__"))
        scopes: dict[ast.FunctionDef, Scope] = {}
        pending = [Scope(forward, "forward", self.default_tensor_params(forward, skip=1))]
        # Properties run when forward reads them: held to forward's rules.
        pending += [Scope(m, f"property {m.name}", set()) for m in methods.values() if _is_property(m)]
        launched = False
        while pending:
            scope = pending.pop()
            known = scopes.get(scope.func)
            if known is not None and scope.tensor_params <= known.tensor_params:
                continue
            if known is not None:
                scope.tensor_params |= known.tensor_params
            scopes[scope.func] = scope
            launched |= self.scan_scope(scope, methods, pending)
        if not launched:
            self.add(
                "no-kernel-launch",
                forward,
                "forward never launches a @triton.jit kernel "
                "(kernel[grid](...)); compute must happen in a Triton kernel",
            )

    def default_tensor_params(self, func: ast.FunctionDef, skip: int) -> set[str]:
        args = func.args.posonlyargs + func.args.args
        defaults = dict(zip([a.arg for a in args][::-1], func.args.defaults[::-1], strict=False))
        return {
            a.arg
            for a in args[skip:] + func.args.kwonlyargs
            if not (isinstance(a.annotation, ast.Name) and a.annotation.id in R.NON_TENSOR_ANNOTATIONS)
            and not _is_constant(defaults.get(a.arg))
        }

    def collect_self_attrs(self, init: ast.FunctionDef | None) -> None:
        for node in ast.walk(init) if init else ():
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register_buffer"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                self.tensor_attrs.add(str(node.args[0].value))
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
                continue
            path = self.dotted(node.value.func) or ""
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and path.startswith("torch")
                ):
                    is_tensor = path.startswith(_TENSOR_CREATORS)
                    (self.tensor_attrs if is_tensor else self.module_attrs).add(target.attr)

    def scan_scope(self, scope: Scope, methods: dict[str, ast.FunctionDef], pending: list[Scope]) -> bool:
        """Check one reachable function; queue the helpers it calls; return whether it launches."""
        scanner = ForwardScanner(self, scope, methods)
        scanner.scan()
        pending.extend(scanner.callees)
        return scanner.launched
