"""The text of an exported module: where it came from, the kernel, the reference, the op and the drop-in Model."""

from __future__ import annotations

import ast
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernelopt.export.names import RESERVED, op_names
from kernelopt.records import InputError
from kernelopt.syntax import parse

if TYPE_CHECKING:
    from kernelopt.export.facts import ProblemFacts

RUNTIME_FILE = Path(__file__).with_name("runtime.py")
RULE = "# " + "─" * 100


@dataclass(frozen=True)
class Origin:
    """Where the kernel came from and how fast it was, for the module's docstring (times in ms)."""

    problem: str
    kernel: str
    run: str | None = None
    gpu: str | None = None
    best_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    is_gpu_time: bool = False
    autotune: str = ""  # the docstring's line on autotuning (see freeze.autotune_words)


def _hoist(source: str) -> tuple[list[str], list[str], str, str]:
    """(its `from __future__` imports, its other top-level imports, its docstring as comments, the rest):
    so that the exported module's imports all stand at its top."""
    tree = parse(source)
    lines = source.splitlines(keepends=True)
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    futures = [n for n in imports if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    drop = {i for n in imports for i in range(n.lineno - 1, n.end_lineno or n.lineno)}
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        drop |= set(range(first.lineno - 1, first.end_lineno or first.lineno))
        comment = "".join(f"# {line}".rstrip() + "\n" for line in first.value.value.strip().splitlines())
    else:
        comment = ""
    text = lambda n: "".join(lines[n.lineno - 1:n.end_lineno]).rstrip()  # noqa: E731
    body = "".join(line for i, line in enumerate(lines) if i not in drop)
    return [text(n) for n in futures], [text(n) for n in imports if n not in futures], comment, body


def _sorted_imports(lines: list[str]) -> list[str]:
    """Import lines without repeats, the standard library's first, as isort orders them."""
    def key(line: str) -> tuple[bool, bool, str]:
        module = line.split()[1]
        return module.split(".")[0] not in sys.stdlib_module_names, line.startswith("from "), module

    ordered = sorted(dict.fromkeys(lines), key=key)
    third = next((i for i, line in enumerate(ordered) if key(line)[0]), len(ordered))
    return ordered[:third] + ([""] if 0 < third < len(ordered) else []) + ordered[third:]


def _runtime_body() -> tuple[list[str], str]:
    """The runtime's imports and code (its docstring dropped: the section's heading says what it is)."""
    _, imports, _, body = _hoist(RUNTIME_FILE.read_text())  # no __future__: the op's annotations stay real types
    return imports, body


def _string_literal(text: str) -> str:
    """`text` as a readable triple-quoted literal where it can be, else as repr writes it."""
    if "'''" not in text and not text.endswith("\\") and "\r" not in text:
        return "r'''" + text + "'''"
    return repr(text)


def _attr_path(name: str) -> str:
    """self.linear.weight for "linear.weight"; getattr for a part that is no identifier (layers.0.weight)."""
    path = "self"
    for part in name.split("."):
        path = f"{path}.{part}" if part.isidentifier() else f"getattr({path}, {part!r})"
    return path


def _docstring(qualname: str, origin: Origin, facts: ProblemFacts) -> str:
    def ms(value: float | None, baseline: bool = False) -> str:
        if value is None:
            return "not measured"
        speedup = baseline and origin.best_ms and origin.is_gpu_time  # interpreter times are no speed
        return f"{value:.4f} ms" + (f" (speedup {value / origin.best_ms:.2f}x)" if speedup else "")

    clock = "GPU time, CUDA events" if origin.is_gpu_time else "interpreter time on the CPU, not GPU performance"
    backward = {
        True: "the kernel is forward-only; backward runs the problem's reference Model again and differentiates "
              "it (torch.func.vjp), so training works at the reference's speed for the backward pass.",
        False: "none: the reference Model's outputs carry no gradient, so backward through this op raises an error.",
        None: "the reference Model's own, recomputed (whether it has one could not be tried at export time).",
    }[facts.has_backward]
    verified = "\n".join(f"    - {words}" for words in facts.verified_words)
    backward = textwrap.fill(backward, 110, initial_indent="Backward: ", subsequent_indent="    ")
    if facts.train_only:
        backward += ("\nMode: the Model holds batch norm or dropout (or reads self.training), so the kernel was "
                     "verified in\n    training mode only: eval() raises, and running statistics are not updated.")
    return f'''"""{qualname}: the kernel kernelopt found for {Path(origin.problem).name}, as a PyTorch custom op.

Problem: {origin.problem}
Kernel: {origin.kernel}
Run: {origin.run or "none: exported from a problem and a kernel file"}
GPU: {origin.gpu or "unknown"}
Time ({clock if origin.best_ms else "no run"}): kernel {ms(origin.best_ms)}; eager {ms(origin.eager_ms, True)};
    torch.compile {ms(origin.compile_ms, True)}
Autotune: {origin.autotune}
Verified on (constructor arguments {facts.init_args!r}; dtypes other than these are refused):
{verified}
Other sizes: the first call at a size not listed compares the kernel with the reference on those
    inputs and raises if they differ (not under CUDA-graph capture: call once before capturing).
    Inputs are made contiguous before the kernel runs.
{backward}

Use:
    from {op_names(qualname)[1]} import {op_names(qualname)[2]}
    model = {op_names(qualname)[2]}(*init_args)  # the problem's Model: same arguments, same state_dict keys
    model.load_state_dict(reference.state_dict())  # then call it, torch.compile it, capture it in a CUDA graph

Written by `kernelopt export`; the op is torch.ops.{qualname.replace("::", ".")}(*inputs, state, init).
"""'''


def render_module(qualname: str, problem_source: str, kernel_source: str, facts: ProblemFacts,
                  origin: Origin) -> str:
    """The whole exported module's source."""
    namespace, op, cls = op_names(qualname)
    runtime_imports, runtime = _runtime_body()
    kernel_futures, kernel_imports, kernel_doc, kernel = _hoist(kernel_source)
    kernel_names = {n.name for n in parse(kernel).body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    kernel_names |= {t.id for n in parse(kernel).body if isinstance(n, ast.Assign) for t in n.targets
                     if isinstance(t, ast.Name)}
    ours = RESERVED - {"torch", "nn", "triton", "tl", "ModelNew"} | {op, f"{op}_backward", f"_{op}_fake", cls}
    clash = sorted(kernel_names & (ours | {f"_{op}_backward_fake"}))
    if clash:
        raise InputError(f"the kernel defines {', '.join(clash)}, names the exported module uses itself; "
                         "rename them in the kernel, or pick another --name")
    futures = sorted(set(kernel_futures))
    imports = _sorted_imports(["import types", *kernel_imports, *runtime_imports])
    return "\n".join([
        _docstring(qualname, origin, facts), "", *([*futures, ""] if futures else []), *imports, "",
        RULE, f"# The kernel: {origin.kernel}", RULE, kernel_doc, kernel.strip("\n"), "", "",
        RULE, "# The problem's reference Model: its outputs' shapes for the fake kernel, its backward, and the check",
        "# of sizes not verified. Kept as text and run in a module of its own, so its names stay apart.", RULE, "",
        f"REFERENCE_SOURCE = {_string_literal(problem_source)}",
        f"_reference = types.ModuleType({f'{namespace}_{op}_reference'!r})",
        f"exec(compile(REFERENCE_SOURCE, {f'<reference of {qualname}>'!r}, 'exec'), _reference.__dict__)", "", "",
        RULE, "# How the op runs (the same in every exported module)", RULE, "", runtime.strip("\n"), "", "",
        RULE, "# The op, its fake (shapes only) and backward, and the drop-in Model", RULE, "",
        _op_code(qualname, facts, cls),
    ]) + "\n"


def _op_code(qualname: str, facts: ProblemFacts, cls: str) -> str:
    _, op, _ = op_names(qualname)
    args = ", ".join(facts.arg_names)
    listed = f"[{args}]"
    typed = ", ".join(f"{n}: {'torch.Tensor' if k == 'Tensor' else k}"
                      for n, k in zip(facts.arg_names, facts.arg_kinds, strict=True))
    typed = f"{typed}, " if typed else ""
    out = "torch.Tensor" if facts.outputs == 1 else f"tuple[{', '.join(['torch.Tensor'] * facts.outputs)}]"
    state = ", ".join(_attr_path(n) for n in facts.state_names)
    spec = {"name": qualname, "arg_names": facts.arg_names, "arg_dtypes": facts.arg_dtypes,
            "state_names": facts.state_names, "state_dtypes": facts.state_dtypes}
    fields = "".join(f"    {k}={v!r},\n" for k, v in spec.items())
    keys = "".join(f"    {k!r},\n" for k in facts.verified_keys)
    return f'''SPEC = OpSpec(
{fields}    kernel_model=ModelNew,
    reference_model=_reference.Model,
    verified=frozenset({{
{keys}    }}),
    has_backward={facts.has_backward!r},
)


@torch.library.custom_op({qualname!r}, mutates_args=())
def {op}({typed}state: list[torch.Tensor], init: str) -> {out}:
    """The kernel's forward; `state`: the Model's parameters and buffers, `init`: its constructor's arguments."""
    return run_kernel(SPEC, {listed}, state, init)


@{op}.register_fake
def _{op}_fake({args}{", " if args else ""}state, init):  # type: ignore[no-untyped-def]
    return fake_outputs(SPEC, {listed}, state, init)


@torch.library.custom_op({qualname + "_backward"!r}, mutates_args=())
def {op}_backward(grads: list[torch.Tensor], {typed}state: list[torch.Tensor], init: str,
{" " * (len(op) + 14)}needs: list[bool]) -> list[torch.Tensor]:
    """The reference Model's gradients for the tensors marked in `needs` (tensor inputs, then state)."""
    return reference_grads(SPEC, grads, {listed}, state, init, needs)


@{op}_backward.register_fake
def _{op}_backward_fake(grads, {args}{", " if args else ""}state, init, needs):  # type: ignore[no-untyped-def]
    return fake_grads({listed}, state, needs)


{op}.register_autograd(backward_through(SPEC, {op}_backward), setup_context=setup_backward)


class {cls}(_reference.Model):
    """The problem's Model with its forward on the kernel: the same constructor, the same state_dict keys."""

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.kernelopt_init = init_key(SPEC, args, kwargs)

    def forward(self, {args}):  # type: ignore[no-untyped-def]
{_eval_check(facts)}        return {op}({args}{", " if args else ""}[{state}], self.kernelopt_init)
'''


def _eval_check(facts: ProblemFacts) -> str:
    """The drop-in's refusal of eval() where the Model behaves otherwise there (the kernel was judged in train())."""
    if not facts.train_only:
        return ""
    return ('''        if not self.training:
            raise ValueError(f"{SPEC.name}: the kernel was verified in training mode only (the Model holds batch "
                             "norm, dropout or reads self.training); use the reference Model in eval()")
''')


def render_init(namespace: str, modules: list[tuple[str, str, str]], skipped: list[str]) -> str:
    """A suite package's __init__.py: each exported module's drop-in Model, importable by name."""
    lines = [f'"""{namespace}: the kernels of a kernelopt suite, one custom op per correct problem.', ""]
    lines += [f"- {problem}: {namespace}.{module}.{cls}" for problem, module, cls in modules]
    lines += ["", "Not exported: " + ("; ".join(skipped) if skipped else "none"), "",
              "Written by `kernelopt export` from a suite's out folder.", '"""', ""]
    lines += [f"from .{module} import {cls}" for _, module, cls in modules]
    lines += ["", f"__all__ = {[cls for _, _, cls in modules]!r}", ""]
    return "\n".join(lines)

