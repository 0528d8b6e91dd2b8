"""The seed file: a KernelBench ModelNew whose forward launches the compiler's Triton kernels.

The constructor is the reference Model's own (same arguments, same parameters in the same
order, so a state_dict or a seeded init matches); forward is the compiler's `call` made
readable as kernelopt's verifier requires: it allocates, takes views and launches, nothing else.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from kernelopt.seed import helpers
from kernelopt.seed.conv import CONV_HELPER
from kernelopt.seed.errors import SeedError
from kernelopt.seed.forward_body import ForwardInputs, LaunchConfig, forward_lines
from kernelopt.seed.init_names import prelude
from kernelopt.seed.kernel_text import REWRITES, standalone
from kernelopt.seed.output_code import parse_output
from kernelopt.syntax import parse

HEADER = '''"""Compiler seed for {problem}: the Triton kernels torch.compile wrote for the reference, made a
standalone kernelopt kernel file (torch {torch}, triton {triton}, {gpu}).

Each launch keeps the configuration the compiler's autotuner picked (block sizes, num_warps,
num_stages); kernelopt's offline sweep tunes them from there. Sizes are read from the inputs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language import math as tl_math
from triton.language.extra import libdevice
'''

GRID_Y_OVERFLOW = '''

def grid_y_overflow(x_blocks, y_blocks):
    """A 2-D grid whose y blocks spill into z past the hardware's y limit (65535)."""
    z_blocks = triton.cdiv(y_blocks, 65535)
    return (x_blocks, 0 if z_blocks == 0 else triton.cdiv(y_blocks, z_blocks), z_blocks)
'''

INDEX_HELPER = '''

def index_dtype(*args):
    """tl.int64 where an element offset into one of a launch's tensors may pass 2**31 - 1, else tl.int32
    (the compiler's pick at the size it compiled, kept where it is safe: int32 offsets are cheaper)."""
    reach = max((sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride())) + 1
                 for t in args if isinstance(t, torch.Tensor) and t.numel()), default=0)
    return tl.int64 if reach > 2**31 - 1 else tl.int32
'''


@dataclass(frozen=True)
class Binding:
    """What one graph input of the compiled reference is: a forward input, a parameter or buffer, a size."""

    kind: str  # "input" | "state" | "size" | "scalar" | "constant" | "number" (a forward input that is a number)
    index: int = -1  # the forward input's position
    # the parameter's or buffer's state_dict name; a scalar's attribute path (`ln.eps`); a number's tensor dtype
    # where the graph takes it as a 0-d tensor (`float64`), else ""
    name: str = ""


@dataclass(frozen=True)
class SeedSource:
    """Everything the seed file is made from."""

    problem_name: str
    problem_source: str
    code: str  # the compiler's output module
    configs: Mapping[str, LaunchConfig]
    bindings: Sequence[Binding]  # one per argument of the compiled graph, in order
    outputs: int
    returns_tuple: bool
    torch_version: str = ""
    triton_version: str = ""
    gpu: str = ""


def state_expression(name: str) -> str:
    """`self.layers[0].weight` for the state_dict name `layers.0.weight`."""
    out = "self"
    for part in name.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def _model_class(problem_source: str) -> ast.ClassDef:
    tree = parse(problem_source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise SeedError("the problem file defines no class Model")
    return model


def _method(model: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _function_source(problem_source: str, tree: ast.Module, model: ast.ClassDef, func: ast.FunctionDef) -> str:
    """A method of the reference's Model as ModelNew's (indented, `super().__init__()`), the module-level names
    its body and its signature read defined where they run now (init_names.py), its decorators kept."""
    text = _model_renamed(ast.get_source_segment(problem_source, func, padded=True) or "", func, model.name)
    needed = prelude(tree, problem_source, func, model.name)
    if needed:  # the module-level names it reads, defined where it runs now (init_names.py)
        first = func.body[1] if ast.get_docstring(func) is not None and len(func.body) > 1 else func.body[0]
        lines = text.splitlines()
        at = first.lineno - func.lineno
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines[at:at] = [f"{indent}# the reference module's own names this {func.name} reads",
                        *(indent + line for line in needed)]
        text = "\n".join(lines)
    decorators = [" " * func.col_offset + "@" + (ast.get_source_segment(problem_source, d) or "")
                  for d in func.decorator_list]
    signature = prelude(tree, problem_source, func, model.name, signature=True)  # what the class body runs
    text = "\n".join([*(["    # the reference module's own names its signature reads", *("    " + line for line in
                                                                                          signature)]
                         if signature else []), *decorators, text])
    return _in_class(re.sub(r"super\(\s*Model\s*,\s*self\s*\)", "super()", text))


def _model_renamed(text: str, func: ast.FunctionDef, model: str) -> str:
    """A method's source (from its `def` line) with the reference class's name, where the method reads it (a static
    helper called as `Model._width(n)`, `isinstance(m, Model)`), made ModelNew's: the reference class is not defined
    where ModelNew runs. `super(Model, self)` is left to become `super()`."""
    in_super = {id(arg) for node in ast.walk(func) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "super" for arg in node.args}
    spots = sorted(((n.lineno - func.lineno, n.col_offset, n.end_col_offset) for n in ast.walk(func)
                    if isinstance(n, ast.Name) and n.id == model and id(n) not in in_super), reverse=True)
    lines = text.splitlines(keepends=True)
    for row, start, end in spots:
        raw = lines[row].encode()  # the AST's columns count UTF-8 bytes
        lines[row] = (raw[:start] + b"ModelNew" + raw[end:]).decode()
    return "".join(lines)


def _in_class(text: str) -> str:
    """A member's source at the class body's indent (four spaces), each line ended."""
    return "\n".join(line if line.startswith("    ") else "    " + line.lstrip() for line in text.splitlines()) + "\n"


def _init_source(problem_source: str, tree: ast.Module, model: ast.ClassDef) -> str:
    init = _method(model, "__init__")
    if init is None:
        return "    def __init__(self):\n        super().__init__()\n"
    return _function_source(problem_source, tree, model, init)


def _members_source(problem_source: str, tree: ast.Module, model: ast.ClassDef) -> str:
    """The Model's own members besides __init__ and forward, as ModelNew's: class attributes and the methods its
    __init__ or forward call (a ResNet block's `expansion = 1`, a dense block's `self._make_layer(...)`)."""
    parts = []
    for node in model.body:
        if isinstance(node, ast.FunctionDef) and node.name not in ("__init__", "forward"):
            parts.append("\n" + _function_source(problem_source, tree, model, node))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            parts.append("\n" + _in_class(ast.get_source_segment(problem_source, node, padded=True) or ""))
    return "".join(parts)


def reference_init(problem_source: str) -> str:
    """The reference Model's __init__ as ModelNew's (indented, `super().__init__()`): the same
    arguments and parameters, so a seeded init or a state_dict matches; then the Model's other members
    (class attributes, helper methods) that it may call."""
    tree = parse(problem_source)
    model = _model_class(problem_source)
    return _init_source(problem_source, tree, model) + _members_source(problem_source, tree, model)


def forward_parameters(problem_source: str) -> list[str]:
    """The names of the reference forward's inputs, in order."""
    forward = _method(_model_class(problem_source), "forward")
    if forward is None:
        raise SeedError("the problem's Model has no forward method")
    return [a.arg for a in forward.args.args[1:]]


LIFTED = ("scalar", "constant")  # Python numbers the tracer lifted into graph inputs
MOST_CHOICES = 6


def binding_choices(bindings: Sequence[Binding], arg_count: int) -> list[list[Binding]]:
    """The ways the traced `bindings` may be the compiled graph's `arg_count` arguments, likeliest first.

    A Python number the tracer lifted into a graph input may be specialized away again, and compilers differ in
    which they keep: torch 2.13 kept a module's own `divide_by` and dropped its InstanceNorm's momentum and eps.
    So each way of dropping lifted numbers to reach the count is a choice (the other inputs stay, in order), those
    keeping the module's own numbers before those keeping its submodules' (`divide_by` before `norm.eps`); the
    seed's check against the reference decides among them. None where no way fits."""
    lifted = [i for i, b in enumerate(bindings) if b.kind in LIFTED]
    keep = arg_count - (len(bindings) - len(lifted))
    if not 0 <= keep <= len(lifted):
        return []
    # the module's own numbers (and globals') before its submodules', then every subset in that order, lazily: a
    # model of many norms lifts many numbers, and all their subsets would not fit in memory
    likeliest = sorted(lifted, key=lambda i: bindings[i].kind == "scalar" and "." in bindings[i].name)
    subsets = itertools.islice(itertools.combinations(likeliest, keep), MOST_CHOICES)
    return [[b for i, b in enumerate(bindings) if b.kind not in LIFTED or i in kept] for kept in subsets]


def write_seed(source: SeedSource, rewrites: Collection[str] = REWRITES) -> str:
    """The seed file's text, each kernel with `rewrites` (kernel_text.standalone: "unwrap", "specialize";
    none: the kernels as the compiler wrote them)."""
    module = parse_output(source.code)
    choices = binding_choices(source.bindings, len(module.arg_names))
    if not choices:
        raise SeedError(f"the compiled graph takes {len(module.arg_names)} arguments but {len(source.bindings)} were "
                        "traced")
    traced = choices[0]
    names = forward_parameters(source.problem_source)
    if not names:
        raise SeedError("the reference's forward takes no inputs; the seed has nothing to read sizes from")
    device = f"{next((names[b.index] for b in traced if b.kind == 'input'), names[0])}.device"
    bindings: dict[str, str] = {}
    scalars: dict[str, str] = {}
    for arg, binding in zip(module.arg_names, traced, strict=True):
        if binding.kind == "input":
            bindings[arg] = names[binding.index]
        elif binding.kind == "state":
            bindings[arg] = state_expression(binding.name)
        elif binding.kind == "number":  # read back with .item() as the number itself, else as the graph took it
            scalars[arg] = names[binding.index]
            bindings[arg] = (f"torch.tensor({names[binding.index]}, dtype=torch.{binding.name}, device={device})"
                             if binding.name else names[binding.index])  # a kernel's pointer: on the inputs' device
        elif binding.kind == "scalar":
            scalars[arg] = state_expression(binding.name)
        elif binding.kind == "constant":  # a global's number, read back as its value
            scalars[arg] = binding.name
    kernels = {name: standalone(kernel, rewrites) for name, kernel in module.kernels.items()}
    body = forward_lines(
        ForwardInputs(
            module=module,
            kernels=kernels,
            configs=source.configs,
            bindings=bindings,
            scalars=scalars,
            device_expr=device,
            outputs=source.outputs,
            returns_tuple=source.returns_tuple,
        )
    )
    used = {h for k in kernels.values() for h in k.helpers}
    model = _model_class(source.problem_source)
    forward = _method(model, "forward")
    assert forward is not None
    signature = f"    def forward({ast.unparse(forward.args)}):"
    parts = [
        HEADER.format(
            problem=source.problem_name,
            torch=source.torch_version or "?",
            triton=source.triton_version or "?",
            gpu=source.gpu or "no GPU",
        ),
        helpers.sources_for(used) if used else "",
        "\n\n\n".join(k.source for k in kernels.values()),
        GRID_Y_OVERFLOW if any("grid_y_overflow" in line for line in body) else "",
        INDEX_HELPER if any("INDEX_DTYPE=index_dtype(" in line for line in body) else "",
        CONV_HELPER if any("conv_triton(" in line for line in body) else "",
        "\n\nclass ModelNew(nn.Module):\n" + reference_init(source.problem_source),
        signature,
        *("        " + line for line in body),
    ]
    return "\n".join(p for p in parts if p) + "\n"
