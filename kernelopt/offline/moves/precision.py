"""The 3xTF32 move: a kernel's fp32 products moved from the CUDA cores to the tensor cores at
fp32's accuracy.

A `tl.dot` at `input_precision="ieee"` (or `allow_tf32=False`, as the compiler's GEMM templates
write it) runs its products as FMAs on the CUDA cores: 67 TFLOP/s on an H200. At
`input_precision="tf32x3"` Triton splits each fp32 operand into its TF32 part and a TF32
remainder and adds three tensor-core products (remainder x remainder is dropped): an error near
fp32's own, at up to a third of TF32's 495 TFLOP/s. One TF32 product alone (Triton's default)
errs by about 1e-3 and fails an fp32 tolerance; this move never writes it. The rewritten kernel
is verified like any candidate, so a problem whose tolerance 3xTF32 misses rejects it there.
"""

from __future__ import annotations

import ast
import functools
from types import MappingProxyType

from kernelopt.offline.tuner import replace_spans
from kernelopt.syntax import parse

TF32X3 = "tf32x3"
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) where 3xTF32 beats cuBLAS's SGEMM on the H200:
# at 4096^3 the tile a kernel tuned at ieee (128 x 128 x 32, 8 warps) ran 1.6x slower than
# 128 x 64 x 32 at 4 warps, which beat SGEMM by 8% (RESULTS.md (q)).
TF32X3_TILES = ((128, 64, 32, 4, 4), (64, 64, 32, 4, 4), (128, 64, 16, 4, 4), (64, 128, 32, 4, 3))
# Where both operands' tiles are K-major, on a Hopper (227 KB of shared memory): deep K tiles first, no K of 16.
# Every K-major 3xTF32 matmul of pass c3 (the matmul moves' own kernels) ran 10-11% faster at BLOCK_K 64 (128 x 128
# x 64 at 8 warps, 3 stages, or 128 x 64 x 64 at 8 warps, 4 stages) than at the fp32 table's 128 x 128 x 32, and K
# 16 was the slowest (RESULTS.md (ah)); the level-2 GEMMs' seeds (nn.Linear: x @ W.T, both K-major) stopped at
# 128 x 64 x 32 in pass l2r. Not yet measured on a seed's template.
TF32X3_TILES_DEEP = ((128, 128, 64, 8, 3), (128, 64, 64, 8, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 3),
                     (64, 64, 32, 4, 4))
# A GEMM launch's tile, as the compiler's templates take it
_TILE_KNOBS = frozenset({"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"})
_POSITIONAL_AFTER_ACC = ("input_precision", "allow_tf32", "max_num_imprecise_acc", "out_dtype")


def _is_dot(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dot"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "tl")


def _false_names(function: ast.FunctionDef) -> set[str]:
    """Names a function binds to False: `ALLOW_TF32: tl.constexpr = False` in its body or as a
    parameter's default."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            value, targets = node.value, [node.target]
        elif isinstance(node, ast.Assign):
            value, targets = node.value, [t for t in node.targets if isinstance(t, ast.Name)]
        else:
            continue
        if isinstance(value, ast.Constant) and value.value is False:
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    args = function.args.args
    for arg, default in zip(args[len(args) - len(function.args.defaults):], function.args.defaults, strict=True):
        if isinstance(default, ast.Constant) and default.value is False:
            names.add(arg.arg)
    return names


def _named(call: ast.Call) -> dict[str, ast.expr]:
    """The call's precision arguments by name, positional ones after the accumulator included."""
    named = {k.arg: k.value for k in call.keywords if k.arg}
    for name, value in zip(_POSITIONAL_AFTER_ACC, call.args[3:], strict=False):
        named[name] = value
    return named


def _on_cuda_cores(call: ast.Call, false_names: set[str]) -> bool:
    named = _named(call)
    precision, allow = named.get("input_precision"), named.get("allow_tf32")
    if isinstance(precision, ast.Constant) and precision.value == "ieee":
        return True
    if isinstance(allow, ast.Constant) and allow.value is False:
        return True
    return isinstance(allow, ast.Name) and allow.id in false_names


def fma_dots(source: str) -> list[ast.Call]:
    """The `tl.dot` calls of `source`'s functions that multiply on the CUDA cores (ieee precision)."""
    try:
        tree = parse(source)
    except SyntaxError:
        return []
    found: list[ast.Call] = []
    # A constexpr passed False at a launch (`kernel[grid](..., ALLOW_TF32=False)`) is False inside.
    launched_false = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords
                      if k.arg and isinstance(k.value, ast.Constant) and k.value.value is False}
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        false_names = _false_names(function) | launched_false
        found += [n for n in ast.walk(function) if _is_dot(n) and _on_cuda_cores(n, false_names)]  # type: ignore[misc]
    return list({id(c): c for c in found}.values())  # a nested function's calls are walked twice


def _rewritten(call: ast.Call) -> str:
    named = _named(call)
    keep = {k: v for k, v in named.items() if k not in ("input_precision", "allow_tf32")}
    keywords = [ast.keyword(arg=k, value=v) for k, v in keep.items()]
    keywords.append(ast.keyword(arg="input_precision", value=ast.Constant(TF32X3)))
    return ast.unparse(ast.Call(func=call.func, args=call.args[:3], keywords=keywords))


@functools.lru_cache(maxsize=64)  # a pure function of its text: the moves ask again each round
def to_tf32x3(source: str) -> str | None:
    """`source` with each `tl.dot` that multiplies on the CUDA cores at `input_precision="tf32x3"`,
    or None where there is none."""
    calls = fma_dots(source)
    if not calls:
        return None
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line.encode()))
    data = source.encode()
    edits = []
    for call in calls:
        assert call.end_lineno is not None and call.end_col_offset is not None
        begin = starts[call.lineno - 1] + call.col_offset  # ast offsets count UTF-8 bytes
        end = starts[call.end_lineno - 1] + call.end_col_offset
        edits.append((begin, end, _rewritten(call).encode()))
    for begin, end, text in sorted(edits, reverse=True):
        data = data[:begin] + text + data[end:]
    return data.decode()


def _dot_functions(tree: ast.AST) -> list[ast.FunctionDef]:
    """The functions of `tree` with a `tl.dot` in them."""
    return [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and any(_is_dot(n) for n in ast.walk(f))]


@functools.lru_cache(maxsize=64)  # a pure function of its text: the moves ask again each round
def _dot_constants(source: str) -> tuple[MappingProxyType[str, object], ...]:
    """For each function of `source` with a `tl.dot`, its names bound to a constant (`K = 8192`,
    `stride_ak = 1`); a name bound more than once, or to anything else, maps to None (read-only: shared)."""
    try:
        tree = parse(source)
    except SyntaxError:
        return []
    out = []
    for function in _dot_functions(tree):
        bound: dict[str, object] = {}
        for node in (n for n in ast.walk(function) if isinstance(n, ast.Assign)):
            value = node.value.value if isinstance(node.value, ast.Constant) else None
            for name in (t.id for t in node.targets if isinstance(t, ast.Name)):
                bound[name] = None if name in bound else value
        out.append(MappingProxyType(bound))
    return tuple(out)


def literal_k(source: str) -> set[int]:
    """The Ks the compiler's GEMM templates fix (`K = 8192` in a function with a `tl.dot`); a function whose K
    is not a literal adds none (its K loads are masked). With K fixed, a template may load its K tiles with no
    mask (the compiler decided BLOCK_K divides K): a BLOCK_K that does not divide it would read past each row."""
    return {k for k in (bound.get("K") for bound in _dot_constants(source)) if type(k) is int}  # type: ignore[misc]


def k_major_operands(source: str) -> bool:
    """Whether every function of `source` with a `tl.dot` declares both operands K-major the way the
    compiler's GEMM templates do (`stride_ak = 1` and `stride_bk = 1`, constants in the kernel's body):
    the layout a TF32 product on Hopper's tensor cores takes without a transpose per K step."""
    functions = _dot_constants(source)
    return bool(functions) and all(f.get("stride_ak") == 1 and f.get("stride_bk") == 1 for f in functions)


@functools.lru_cache(maxsize=64)  # a pure function of its text: the moves ask again each round
def one_tile(source: str) -> str:
    """`source` with every launch of a kernel that has a `tl.dot` at the first such launch's tile (BLOCK_M/N/K,
    GROUP_M, num_warps, num_stages, where written as numbers), where every such launch's grid is a function of
    its tile (`lambda meta: ... meta['BLOCK_M'] ...`, as the compiler's templates launch). A seed with two GEMM
    templates (an MLP's two nn.Linear) keeps each one's autotuned tile, and a sweep moves a knob's other places
    by the first's factor: the 3xTF32 table's 128 x 128 x 64 set on the first turned the second's 128 x 64 x 32
    into 256 x 64 x 64, and the rewrite stayed at its own launch (45_Gemm_Sigmoid_LogSumExp, pass c3l2). The
    table's tiles are meant for every GEMM; here each takes them. Unchanged where the first's BLOCK_K does not
    divide a K a kernel fixes."""
    try:
        tree = parse(source)
    except SyntaxError:
        return source
    gemms = {f.name for f in _dot_functions(tree)}
    launches = sorted((c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
                       and isinstance(c.func.value, ast.Name) and c.func.value.id in gemms),
                      key=lambda c: (c.lineno, c.col_offset))
    if len(launches) < 2 or not all(_grid_of_meta(c.func.slice) for c in launches):
        return source  # a grid written with a tile's numbers would not follow a new tile

    def tile(call: ast.Call) -> dict[str, ast.Constant]:
        return {k.arg: k.value for k in call.keywords if k.arg in _TILE_KNOBS and isinstance(k.value, ast.Constant)
                and type(k.value.value) is int}

    first = {name: node.value for name, node in tile(launches[0]).items()}
    if "BLOCK_K" in first and any(k % first["BLOCK_K"] for k in literal_k(source)):
        return source
    edits = [(node.lineno, node.col_offset, node.end_col_offset or node.col_offset, str(first[name]))
             for call in launches[1:] for name, node in tile(call).items()
             if name in first and node.value != first[name] and node.lineno == node.end_lineno]
    return replace_spans(source, edits)


def _grid_of_meta(grid: ast.expr) -> bool:
    """Whether a launch's grid is `lambda meta: ...` reading its tile from `meta` (so a new tile moves it)."""
    if not isinstance(grid, ast.Lambda) or len(grid.args.args) != 1:
        return False
    meta = grid.args.args[0].arg
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == meta
               for n in ast.walk(grid.body))
