"""The body of Inductor's `call(args)` rewritten as ModelNew.forward: sizes read from the
inputs, buffers allocated with torch.empty_strided, views taken with as_strided, and every
kernel launched with `kernel[grid](..., KNOB=value, num_warps=w, num_stages=s)`.

A cuDNN convolution becomes a launch of the seed's own Triton convolution (seed/conv.py).
Anything else in the body (a call into cuBLAS, an ATen fallback, a random op) is work that is
not Triton: SeedError names it and says what to give instead.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kernelopt.seed.conv import CONVOLUTION, convolution_lines
from kernelopt.seed.errors import WHAT_TO_DO, SeedError
from kernelopt.seed.kernel_text import StandaloneKernel
from kernelopt.seed.output_code import InductorKernel, OutputModule, unknown
from kernelopt.syntax import parse_expression

ALLOCATORS = frozenset({"empty_strided_cuda", "empty_strided_cpu", "empty_strided", "empty_strided_xpu"})
SKIPPED_CALLS = frozenset(
    {"args.clear", "assert_size_stride", "assert_alignment", "get_raw_stream", "torch.cuda.set_device"}
)
METADATA_METHODS = frozenset({"size", "stride", "storage_offset", "numel", "dim"})
NOT_TRITON_PREFIXES = ("extern_kernels.", "aten.", "torch.ops.", "torch._ops.", "inductor_ops.", "_quantized.")


@dataclass(frozen=True)
class LaunchConfig:
    """The launch settings the compiler's autotuner picked for one kernel."""

    kwargs: Mapping[str, int]
    num_warps: int
    num_stages: int


@dataclass(frozen=True)
class ForwardInputs:
    """What the translation of `call` needs beside the module itself."""

    module: OutputModule
    kernels: Mapping[str, StandaloneKernel]
    configs: Mapping[str, LaunchConfig]
    bindings: Mapping[str, str]  # call's tensor argument -> its expression in forward (`x`, `self.linear.weight`)
    scalars: Mapping[str, str]  # call's lifted Python numbers -> the module attribute they are (`self.eps`)
    device_expr: str  # where buffers go: the first input's device
    outputs: int  # how many of call's results the reference returns
    returns_tuple: bool


def not_triton(node: ast.AST) -> SeedError:
    call = node.value if isinstance(node, ast.Expr | ast.Assign) else node
    op = ast.unparse(call.func) if isinstance(call, ast.Call) else ast.unparse(node)[:60]
    return SeedError(f"the compiled graph calls {op}, which the compiler did not write in Triton; {WHAT_TO_DO}")


def _flat(body: tuple[ast.stmt, ...] | list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.With):
            out += _flat(stmt.body)  # the device guard: one device here
        else:
            out.append(stmt)
    return out


def size_symbols(body: list[ast.stmt], bindings: Mapping[str, str]) -> dict[str, str]:
    """Each size symbol the asserts name (`s77`), and the input size or stride it is."""
    found: dict[str, str] = {}
    for stmt in body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "assert_size_stride"):
            continue
        tensor = call.args[0]
        if not (isinstance(tensor, ast.Name) and tensor.id in bindings):
            continue
        for what, shape in (("shape", call.args[1]), ("stride", call.args[2])):
            if not isinstance(shape, ast.Tuple):
                continue
            for dim, size in enumerate(shape.elts):
                if isinstance(size, ast.Name) and size.id not in found:
                    read = (
                        f"{bindings[tensor.id]}.shape[{dim}]"
                        if what == "shape"
                        else f"{bindings[tensor.id]}.stride({dim})"
                    )
                    found[size.id] = read
    return found


class _Rename(ast.NodeTransformer):
    def __init__(self, names: Mapping[str, str], scalars: Mapping[str, str] | None = None) -> None:
        self.names = names
        self.scalars = scalars or {}

    def visit_Call(self, node: ast.Call) -> ast.expr:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "item" and isinstance(func.value, ast.Name):
            if func.value.id in self.scalars:  # a lifted Python number, read back: the attribute itself
                return ast.copy_location(parse_expression(self.scalars[func.value.id]), node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.names:
            return ast.copy_location(parse_expression(self.names[node.id]), node)
        return node


def _grid(kernel: InductorKernel, standalone: StandaloneKernel, args: Mapping[str, str], fixed: list[str]) -> str:
    """The launch grid as a function of the launch's constexprs, so swept block sizes keep it right."""

    def cdiv(numel: str, block: str) -> str:
        return f"triton.cdiv({args[numel]}, meta[{block!r}])"

    grid_type = kernel.grid_type
    if grid_type == "Grid1D":
        return f"lambda meta: ({cdiv('xnumel', 'XBLOCK')},)"
    if grid_type == "Grid2D":
        return f"lambda meta: ({cdiv('xnumel', 'XBLOCK')}, {cdiv('ynumel', 'YBLOCK')}, 1)"
    if grid_type == "Grid3D":
        return f"lambda meta: ({cdiv('xnumel', 'XBLOCK')}, {cdiv('ynumel', 'YBLOCK')}, {cdiv('znumel', 'ZBLOCK')})"
    if grid_type == "Grid2DWithYZOverflow":
        return f"lambda meta: grid_y_overflow({cdiv('xnumel', 'XBLOCK')}, {cdiv('ynumel', 'YBLOCK')})"
    if grid_type == "FixedGrid" and standalone.grid_sizes and fixed:
        # tiles over (M, N) along x, as the template's program ids read them; y and z (a batch) kept
        sizes = {k: _Rename(args).visit(parse_expression(v)) for k, v in standalone.grid_sizes.items()}
        m, n = ast.unparse(sizes["M"]), ast.unparse(sizes["N"])
        tiles = f"triton.cdiv({m}, meta['BLOCK_M']) * triton.cdiv({n}, meta['BLOCK_N'])"
        return f"lambda meta: ({tiles}, {fixed[1]}, {fixed[2]})"
    raise unknown(f"grid type {grid_type} of kernel {kernel.name}")


def _launch(call: ast.Call, source: ForwardInputs) -> str:
    assert isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
    name = call.func.value.id
    kernel, standalone = source.module.kernels[name], source.kernels[name]
    passed = [ast.unparse(a) for a in call.args]
    extra = 3 if kernel.grid_type == "FixedGrid" else 0  # a template's grid, passed as three launcher arguments
    if len(passed) != len(standalone.params) + extra:
        raise unknown(f"{name}.run with {len(passed)} arguments for {len(standalone.params)} parameters", call)
    args = dict(zip(standalone.params, passed, strict=False))
    config = source.configs.get(name)
    if config is None and kernel.kind == "template":  # a template's launch settings are its decorator's
        config = LaunchConfig({}, kernel.template_warps or 4, kernel.template_stages or 1)
    if config is None:
        raise SeedError(f"no launch configuration recorded for kernel {name}; generate the seed again")
    knobs = {**standalone.tile_values, **config.kwargs}
    missing = [c for c in kernel.constexprs if c not in knobs]
    if missing:
        raise SeedError(f"kernel {name} has constexpr {missing[0]} with no launch value in its configuration")
    settings = [
        f"{k}={_knob_value(kernel, k, v, args)}"
        for k, v in knobs.items()
        if k in kernel.constexprs or k in standalone.tile_values
    ]
    if standalone.index_dtype:  # int64 where an offset into one of the launch's tensors may pass 2**31 - 1
        settings.append(f"INDEX_DTYPE=index_dtype({', '.join(passed[: len(passed) - extra])})")
    settings += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    grid = _grid(kernel, standalone, args, passed[len(passed) - extra :] if extra else [])
    return f"{name}[{grid}]({', '.join([*passed[: len(passed) - extra], *settings])})"


def _knob_value(kernel: InductorKernel, knob: str, value: int, args: Mapping[str, str]) -> str:
    # a persistent reduction's block must cover the whole row: it follows the row, it is not a knob
    if kernel.kind == "persistent_reduction" and knob.startswith("R") and knob.endswith("BLOCK"):
        numel = knob[:-5].lower() + "numel" if knob != "RBLOCK" else "rnumel"
        if numel in args:
            return f"triton.next_power_of_2({args[numel]})"
    return str(value)


def asserted_layouts(body: list[ast.stmt]) -> dict[str, tuple[ast.expr, ast.expr]]:
    """Each buffer's (size, stride) as `assert_size_stride` states it: the layout Inductor's own
    kernels index a library call's output by."""
    found: dict[str, tuple[ast.expr, ast.expr]] = {}
    for stmt in body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if (isinstance(call, ast.Call) and ast.unparse(call.func) == "assert_size_stride" and len(call.args) >= 3
                and isinstance(call.args[0], ast.Name)):
            found.setdefault(call.args[0].id, (call.args[1], call.args[2]))
    return found


def _statement(stmt: ast.stmt, source: ForwardInputs,
               layouts: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
    """The forward lines for one statement of call (none for asserts, streams and dels)."""
    if isinstance(stmt, ast.Delete | ast.Pass):
        return []
    if isinstance(stmt, ast.Return):
        return [_return(stmt, source)]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = ast.unparse(call.func)
        if func in SKIPPED_CALLS:
            return []
        if isinstance(call.func, ast.Attribute) and call.func.attr == "run" and func[:-4] in source.module.kernels:
            return [_launch(call, source)]
        if func.startswith(NOT_TRITON_PREFIXES):
            raise not_triton(stmt)
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("zero_", "fill_"):
            return [ast.unparse(stmt)]
        raise unknown("a call in the graph's body", stmt)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        target = stmt.targets[0].id
        if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value.func) == CONVOLUTION:
            return convolution_lines(target, stmt.value, (layouts or {}).get(target), source.device_expr)
        return _assignment(target, stmt.value, source)
    raise unknown("a statement in the graph's body", stmt)


def _assignment(target: str, value: ast.expr, source: ForwardInputs) -> list[str]:
    if isinstance(value, ast.Call):
        func = ast.unparse(value.func)
        if func in ALLOCATORS:
            size, stride, dtype = (ast.unparse(a) for a in value.args[:3])
            return [f"{target} = torch.empty_strided({size}, {stride}, dtype={dtype}, device={source.device_expr})"]
        if func == "reinterpret_tensor":
            return [f"{target} = {_as_strided(value)}"]
        if func == "get_raw_stream":
            return []
        if isinstance(value.func, ast.Attribute) and value.func.attr in METADATA_METHODS:
            return [f"{target} = {ast.unparse(value)}"]  # an input's sizes, read as the compiler reads them
        if func.startswith(NOT_TRITON_PREFIXES) or "." in func:
            raise not_triton(value)
        if func not in ("max", "min"):
            raise unknown("an assignment in the graph's body", value)
    return [f"{target} = {ast.unparse(value)}"]  # an alias (`buf3 = buf1`) or an integer size expression


def _as_strided(call: ast.Call) -> str:
    """The compiler's `reinterpret_tensor(base, size, stride, offset)`: a view of base's storage."""
    base, size, stride = (ast.unparse(a) for a in call.args[:3])
    offset = ast.unparse(call.args[3]) if len(call.args) > 3 else "0"
    return f"{base}.as_strided({size}, {stride}, {base}.storage_offset() + {offset})"


def _result(value: ast.expr) -> str:
    """One returned value: a buffer, or a view of one made where it is returned (torch 2.13 writes those)."""
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "reinterpret_tensor":
        return _as_strided(value)
    return ast.unparse(value)


def _return(stmt: ast.Return, source: ForwardInputs) -> str:
    value = stmt.value
    results = list(value.elts) if isinstance(value, ast.Tuple | ast.List) else [value] if value else []
    kept = [_result(r) for r in results[: source.outputs]]
    if len(kept) < source.outputs:
        raise SeedError(f"the compiled graph returns {len(kept)} results where the reference returns {source.outputs}")
    if not source.returns_tuple and len(kept) == 1:
        return f"return {kept[0]}"
    return f"return ({', '.join(kept)},)"


def forward_lines(source: ForwardInputs) -> list[str]:
    """ModelNew.forward's body, one statement a line: sizes first, then call's statements in order."""
    body = _flat(source.module.body)
    symbols = size_symbols(body, source.bindings)
    names = dict(source.bindings)
    lines: list[str] = []
    unread: list[str] = []
    known = {*source.bindings, *source.scalars}
    for stmt in body:
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if isinstance(value, ast.Name) and value.id in source.module.arg_names and value.id not in known:
            target = ast.unparse(stmt.targets[0])  # type: ignore[union-attr]
            if target in symbols:
                lines.append(f"{target} = {symbols[target]}")
            else:
                unread.append(target)  # read another way below, or not needed at all
            names[value.id] = target
    rename = _Rename(names, source.scalars)
    layouts = {name: (ast.unparse(rename.visit(copy.deepcopy(size))), ast.unparse(rename.visit(copy.deepcopy(stride))))
               for name, (size, stride) in asserted_layouts(body).items()}
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id in source.module.arg_names
        ):
            if stmt.value.id not in known:
                continue  # a size, read above
        lines += _statement(rename.visit(copy.deepcopy(stmt)), source, layouts)
    for size in unread:
        uses = [line for line in lines if re.search(rf"\b{size}\b", line)]
        if uses and not any(re.match(rf"{size} = ", line) for line in lines):
            raise SeedError(f"size {size} is not the size or stride of any input; the seed cannot read it")
    return lines
