"""One compiler-written kernel made standalone: only `@triton.jit`, helpers written out, and a
GEMM template's tile sizes lifted into constexpr parameters so a launch can set them."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from types import MappingProxyType

from kernelopt.seed import helpers
from kernelopt.seed.output_code import InductorKernel, unknown
from kernelopt.seed.unwrap import unwrap_guarded
from kernelopt.syntax import parse

# A GEMM template's tile knobs: the template sets them inside the body; the seed passes them at the launch.
TEMPLATE_KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")
# A template's index type: the compiler picked int32 for the sizes it compiled, guarding a recompile
# at larger ones; the seed has no such guard, so the launch picks it from its tensors (INDEX_HELPER).
INDEX_DTYPE = "INDEX_DTYPE"
# Module names a kernel module imports from the compiler's runtime, and what they become in the seed file.
_RUNTIME_PREFIX = re.compile(r"\btriton_helpers\.(\w+)")
# libdevice functions Triton's own math module has: written as tl.math so the file also runs under
# the interpreter (which knows no libdevice). sqrt keeps its round-to-nearest precision through a
# helper, which takes fp64 too (tl.math.sqrt_rn takes fp32 only).
_LIBDEVICE_AS_TL_MATH = MappingProxyType(
    {name: name for name in ("exp", "exp2", "log", "log2", "erf", "rsqrt", "sin", "cos", "floor", "ceil")}
)
_LIBDEVICE_AS_HELPER = MappingProxyType({"sqrt": "sqrt_rn"})
_LIBDEVICE_CALL = re.compile(r"\blibdevice\.(\w+)")
_FORBIDDEN = re.compile(r"\b(triton_heuristics|torch\._inductor|async_compile)\b")
# The compiler's size parameters (dynamic shapes): `ks0`, `xnumel`, `r0_numel`, ...
SIZE_PARAM = re.compile(r"ks\d+|[xyz]numel|r\d*_?numel")
SIZE_HELPER = "size_value"


@dataclass(frozen=True)
class StandaloneKernel:
    """A kernel's seed-file source and what its launch needs to know."""

    name: str
    source: str
    helpers: frozenset[str]
    tile_values: dict[str, int] = field(default_factory=dict)  # a template's lifted knobs
    index_dtype: bool = False  # INDEX_DTYPE lifted into a parameter the launch sets
    grid_sizes: dict[str, str] = field(default_factory=dict)  # a template's M and N, in its parameters
    params: tuple[str, ...] = ()  # the parameters a launch passes positionally


def _jit_function(tree: ast.Module, name: str) -> ast.FunctionDef:
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    if not any(ast.unparse(d) in ("triton.jit", "jit") for d in fn.decorator_list):
        raise unknown(f"kernel {name} is not a @triton.jit function")
    return fn


def _other_top_level(tree: ast.Module, name: str, source: str) -> list[str]:
    """Other @triton.jit functions in the kernel's module (a scan's combine function); nothing else."""
    kept = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            called = ast.unparse(node.value.func).rsplit(".", 1)[-1]
            if called in helpers.NOT_NEEDED:
                continue
        if isinstance(node, ast.FunctionDef) and node.name != name:
            _jit_function(tree, node.name)
            kept.append(_segment(source, node))
            continue
        if isinstance(node, ast.FunctionDef):
            continue
        raise unknown(f"a statement beside kernel {name} in its module", node)
    return kept


def _segment(source: str, fn: ast.FunctionDef) -> str:
    lines = source.splitlines()
    start = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
    assert fn.end_lineno is not None
    return "\n".join(lines[start - 1 : fn.end_lineno])


def _lift_template_knobs(fn: ast.FunctionDef, lines: list[str]) -> tuple[dict[str, int], list[int]]:
    """The tile knobs a template assigns in its body (`BLOCK_M : tl.constexpr = 64`), and their lines."""
    values: dict[str, int] = {}
    drop: list[int] = []
    for stmt in fn.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            name = stmt.target.id
            if name in TEMPLATE_KNOBS and isinstance(stmt.value, ast.Constant) and type(stmt.value.value) is int:
                values[name] = stmt.value.value
                drop.append(stmt.lineno)
            elif name == INDEX_DTYPE:
                drop.append(stmt.lineno)
            elif name == "EVEN_K":
                # K divisible by BLOCK_K was decided for the compiled BLOCK_K; a swept BLOCK_K must mask (a
                # template that fixes K may also load with no mask and no EVEN_K at all: torch 2.11's mm; the
                # sweeps and the dot.tf32x3 tiles keep BLOCK_K dividing such a K: offline/moves/precision.literal_k)
                lines[stmt.lineno - 1] = re.sub(r"=\s*True\b", "= False", lines[stmt.lineno - 1])
    return values, drop


def _template_grid_sizes(fn: ast.FunctionDef) -> dict[str, str]:
    sizes = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if stmt.targets[0].id in ("M", "N"):
                sizes[stmt.targets[0].id] = ast.unparse(stmt.value)
    text = ast.unparse(fn)
    if "M" not in sizes or "N" not in sizes or "grid_m" not in text or "NUM_SMS" in text:
        raise unknown(f"template {fn.name} is not a tiled GEMM the seed knows (mm, addmm, bmm)")
    return sizes


def _libdevice_call(match: re.Match[str]) -> str:
    name = match.group(1)
    if name in _LIBDEVICE_AS_HELPER:
        return helpers.PREFIX + _LIBDEVICE_AS_HELPER[name]
    return f"tl.math.{_LIBDEVICE_AS_TL_MATH[name]}" if name in _LIBDEVICE_AS_TL_MATH else match.group(0)


def _specialized(fn: ast.FunctionDef, params: list[str], body: list[str]) -> tuple[list[str], list[str]]:
    """The kernel's size parameters made constexpr, each turned back into a value of the type Triton gives
    a run-time integer at the body's start (so `ks0.to(...)` and int32 wrap-around keep their meaning).

    Triton then compiles the kernel for each shape it is launched at, as the compiler does without dynamic
    shapes, and an index's `// ks0` or `% ks0` becomes a shift or a multiply by a constant. On the H200
    the dynamic-shape BatchNorm seed's statistics kernel ran two 32-bit divisions and two remainders by
    run-time sizes per value read (PTX), and took 5.47 ms where torch.compile's static kernels took 2.96.
    A bounds mask that the launch's size makes all true goes too (`_even_masks`).
    """
    sizes = [a.arg for a in fn.args.args if a.annotation is None and SIZE_PARAM.fullmatch(a.arg)]
    if not sizes:
        return params, body
    indent = re.match(r"\s*", next(line for line in body if line.strip())).group(0)
    params = [f"{p}: tl.constexpr" if p in sizes else p for p in params]
    body, kept = _even_masks(body, sizes)
    kept_lines = [f"{indent}{name}{AT_LAUNCH}: tl.constexpr = {name}  # {MASK_NOTE}" for name in kept]
    return params, kept_lines + [f"{indent}{name} = {helpers.PREFIX}{SIZE_HELPER}({name})" for name in sizes] + body


# `xmask = xindex < xnumel`, `r0_mask = r0_index < r0_numel` (or `rmask`): a block's bounds mask.
_BOUNDS_MASK = re.compile(r"^(\s*)([xr]\d*_?)mask = \2index < \2numel\s*$")
AT_LAUNCH = "_at_launch"  # a size's constexpr value, kept under this suffix where a mask needs it
# Said in the file beside each such size, for whoever edits the kernel (an LLM too): what the all-true mask assumes.
MASK_NOTE = "at a multiple of the block its mask is all true: cdiv(size, block) programs, r loops step it from 0"


def _even_masks(body: list[str], sizes: list[str]) -> tuple[list[str], list[str]]:
    """Each x or r bounds mask as a constant all-true mask when the launch's size is a multiple of its block
    (`xnumel % XBLOCK == 0`, decided when Triton compiles), else the comparison; and the sizes that needs.

    The compiler compiling for one shape writes `tl.full([R0_BLOCK], True, tl.int1)` there: masked loads
    become plain (vector) loads and each `tl.where` on the mask folds away. With the mask kept, the H200
    ran the GroupNorm seed's Welford pass (three `tl.where` per value) at 5.42 ms where torch.compile's
    static kernels took 5.24. The x grid has cdiv(xnumel, XBLOCK) programs and an r loop steps R0_BLOCK up
    to r0_numel, so an even size leaves no index out of bounds. y and z are left alone: a grid too tall
    for CUDA's y limit is folded, and more programs than blocks may run. A size of 0 keeps its mask (a
    persistent block of R0_BLOCK would read past an empty row).
    """
    out, kept = [], []
    for line in body:
        found = _BOUNDS_MASK.match(line)
        size = f"{found.group(2)}numel" if found else ""
        if found is None or size not in sizes:
            out.append(line)
            continue
        indent, dim = found.group(1), found.group(2)
        block = dim.upper().rstrip("_") + ("_BLOCK" if dim.endswith("_") else "BLOCK")
        kept += [size] if size not in kept else []
        out.append(f"{indent}{dim}mask = tl.full({dim}index.shape, True, tl.int1) "
                   f"if {size}{AT_LAUNCH} > 0 and {size}{AT_LAUNCH} % {block} == 0 else {dim}index < {size}")
    return out, kept


# The seed's rewrites of the compiler's kernels, in the order the seed drops them when its check fails.
REWRITES = ("unwrap", "specialize")


def standalone(kernel: InductorKernel, rewrites: Collection[str] = REWRITES) -> StandaloneKernel:
    """The kernel as a seed file holds it, with `rewrites`: "unwrap" takes guarded remainders out of its
    addresses (unwrap.py), "specialize" makes its sizes constexpr (`_specialized`); none: as the compiler wrote it."""
    tree = parse(kernel.source)
    fn = _jit_function(tree, kernel.name)
    lines = kernel.source.splitlines()
    tile_values: dict[str, int] = {}
    grid_sizes: dict[str, str] = {}
    drop: list[int] = []
    if kernel.kind == "template":
        tile_values, drop = _lift_template_knobs(fn, lines)
        grid_sizes = _template_grid_sizes(fn)
    index_dtype = any(lines[number - 1].lstrip().startswith(INDEX_DTYPE) for number in drop)
    params = [ast.unparse(a) for a in fn.args.args]
    params += [f"{name}: tl.constexpr" for name in [*tile_values, *([INDEX_DTYPE] if index_dtype else [])]]
    first, last = fn.body[0].lineno, fn.end_lineno or fn.body[-1].lineno
    body = [lines[number - 1] for number in range(first, last + 1) if number not in drop]
    used: set[str] = set()
    if "unwrap" in rewrites:
        body = unwrap_guarded(body)
    if "specialize" in rewrites:
        params, specialized = _specialized(fn, params, body)
        used |= {SIZE_HELPER} if specialized != body else set()
        body = specialized
    signature = f"def {fn.name}({', '.join(params)}):"
    text = "\n".join(["@triton.jit", signature, *body])
    text = "\n\n\n".join([*_other_top_level(tree, kernel.name, kernel.source), text])
    used |= set(_RUNTIME_PREFIX.findall(text))
    strange = sorted(n for n in used if not helpers.known(n))
    if strange:
        raise unknown(f"triton_helpers.{strange[0]} in kernel {kernel.name}, a helper the seed cannot write out")
    text = _RUNTIME_PREFIX.sub(lambda m: helpers.PREFIX + m.group(1), text)
    used |= {_LIBDEVICE_AS_HELPER[n] for n in _LIBDEVICE_CALL.findall(text) if n in _LIBDEVICE_AS_HELPER}
    text = _LIBDEVICE_CALL.sub(_libdevice_call, text)
    if found := _FORBIDDEN.search(text):
        raise unknown(f"{found.group(0)} inside kernel {kernel.name}")
    positional = tuple(p for p in kernel.params if p not in kernel.constexprs)
    return StandaloneKernel(kernel.name, text, frozenset(used), tile_values, index_dtype, grid_sizes, positional)
