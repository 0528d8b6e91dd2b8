"""The `dot.split_f16` rewrite: a compiler seed's GEMM templates on operands split once into fp16 parts.

torch.compile's Triton GEMM template (the seed of a Linear with its epilogue, level 2's GEMMs) multiplies
fp32 tiles as they are loaded: on the CUDA cores, or at 3xTF32 after `dot.tf32x3`, whose every K step splits
both tiles in registers. Here each template's K loop is replaced by the product `matmul.split_f16` runs
(moves/matmul_split_f16.py): before the launch, A's rows and B's columns are scaled by powers of two into
fp16's range and split once into parts and remainders, K-major and padded; the loop runs three fp16 products
a K step, each step's sum added in fp32, and undoes the scales. Everything else in the template stays: its
program order, and its suffix, which stores `acc` or fuses the epilogue (a bias, an activation) into it.

The template's sizes and strides (`M = ks0`, `stride_am = 8192`) are its own lines; the launch's arguments
give each parameter its value in forward, so A and B are viewed there with `torch.as_strided`. A template
whose loop, sizes or launch read otherwise is left as it is, and the rewrite does not apply.
"""

from __future__ import annotations

import ast
import re

from kernelopt import syntax
from kernelopt.offline.moves import matmul_split_f16

_TEMPLATE = re.compile(r"@triton\.jit\ndef (triton_tem_\w+)\(([^)]*)\):\n((?:(?: {4}[^\n]*)?\n)+)")
_SIZES = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn")
# rows and K padded to a multiple of 256: any tile up to 256 x 256 x 256 divides them
SHORT_K = 128  # a K this short is memory-bound: the split's passes cost more than its products save
_PARAMS = ("split_ah", "split_al", "split_bh", "split_bl", "split_ia", "split_ib", "split_kp")
_LOOP = (f"    acc = split16_product({', '.join(_PARAMS)}, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)\n")

_HELPERS = '''

# dot.split_f16: the GEMM templates' operands scaled by rows into fp16's range and split once (forward)
''' + (matmul_split_f16._KERNELS.replace("def row_max_kernel(", "def split16_row_max(")
       .replace("def split_kernel(", "def split16_parts(").replace("def _split_product(", "def _split16_loop(")
       .replace("def _unscaled(", "def _split16_unscaled(").replace("def _unscale(", "def _split16_unscale(")
       .replace("return _unscale(", "return _split16_unscale(")) + '''

@triton.jit
def split16_product(ah_ptr, al_ptr, bh_ptr, bl_ptr, ia_ptr, ib_ptr, Kp, pid_m, pid_n,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    acc = _split16_loop(ah_ptr, al_ptr, bh_ptr, bl_ptr, Kp, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
    return _split16_unscaled(acc, ia_ptr, ib_ptr, pid_m, pid_n, BLOCK_M, BLOCK_N)


def _split16(x, ld):
    # x (R x C, any strides), rows scaled by powers of two, as fp16 parts and remainders padded to whole 256s
    rows = triton.cdiv(x.shape[0], 256) * 256
    big = torch.zeros((1, rows), device=x.device, dtype=torch.int32)
    hi = torch.empty((1, rows, ld), device=x.device, dtype=torch.float16)
    lo = torch.empty((1, rows, ld), device=x.device, dtype=torch.float16)
    inv = torch.ones((1, rows), device=x.device, dtype=torch.float32)  # K = 0: no split program writes it
    row_blocks = triton.cdiv(rows, 32)
    split16_row_max[(row_blocks, triton.cdiv(x.shape[1], 128))](
        x, big, x.shape[0], x.shape[1], 0, x.stride(0), x.stride(1), rows, row_blocks, block_r=32, block_c=128,
        num_warps=4)
    split16_parts[(row_blocks, triton.cdiv(ld, 128))](
        x, hi, lo, big, inv, x.shape[0], x.shape[1], 0, x.stride(0), x.stride(1), rows, ld, row_blocks,
        block_r=32, block_c=128, num_warps=4)
    return hi, lo, inv


def _split16_operands(a, bt):
    # A (M x K) and B's transpose (N x K): each split, K padded to a whole 256 (the compiler's tile may be so deep)
    ld = triton.cdiv(a.shape[1], 256) * 256
    ah, al, ia = _split16(a, ld)
    bh, bl, ib = _split16(bt, ld)
    return ah, al, bh, bl, ia, ib, ld

'''


def to_split_f16(source: str) -> str | None:
    """The kernel file with each GEMM template's K loop on fp16 parts split once before its launch; None where
    no template reads as expected (its sizes, its one loop with one tl.dot, its launch in forward)."""
    out, done = source, 0
    for found in _TEMPLATE.finditer(source):
        rewritten = _template(out, found.group(1), found.group(2), found.group(3))
        if rewritten is None:
            return None
        out, done = rewritten, done + 1
    if not done or "class ModelNew" not in out:
        return None
    at = out.index("class ModelNew")
    return out[:at].rstrip("\n") + "\n" + _HELPERS + "\n" + out[at:]


def _template(source: str, name: str, params_text: str, body: str) -> str | None:
    sizes = {}
    for size in _SIZES:
        found = re.search(rf"^ {{4}}{size} = ([^\n#]+)$", body, re.M)
        if found is None:
            return None
        sizes[size] = found.group(1).strip()
    operands = {k: re.search(rf"^ {{4}}{k} = (\w+)$", body, re.M) for k in ("A", "B")}
    start, end = body.find("    acc = tl.zeros("), body.find("    # rematerialize rm and rn")
    if None in operands.values() or start < 0 or end < start or "pid_m = " not in body[:start]:
        return None
    if re.search(r"\bstride_[ab]q\b|program_id\(1\)", body):  # a batched template: its batch is not read here
        return None
    if sizes["K"].isdigit() and int(sizes["K"]) < SHORT_K:
        return None
    loop = body[start:end]
    if loop.count("tl.dot(") != 1 or "\n    for " not in loop:
        return None
    params = [p.split(":")[0].strip() for p in params_text.split(",")]
    kernel = body[:start] + _LOOP + "\n" + body[end:]
    signature = params_text + ", " + ", ".join(_PARAMS)
    source = source.replace(f"def {name}({params_text}):\n{body}", f"def {name}({signature}):\n{kernel}", 1)
    return _launch(source, name, params, sizes, {k: m.group(1) for k, m in operands.items() if m})


def _launch(source: str, name: str, params: list[str], sizes: dict[str, str], operands: dict[str, str]) -> str | None:
    """forward's launch of the template with the split operands made before it and passed to it."""
    calls = [c for c in ast.walk(syntax.parse(source)) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
             and isinstance(c.func.value, ast.Name) and c.func.value.id == name]
    if len(calls) != 1 or any(isinstance(a, ast.Starred) for a in calls[0].args):
        return None
    call = calls[0]
    values = dict(zip(params, (ast.get_source_segment(source, a) or "" for a in call.args), strict=False))

    def value(text: str) -> str | None:
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", text))
        if not names <= set(values):
            return None
        return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"({values[m.group(0)]})", text)

    a, b = (values.get(operands[k]) for k in ("A", "B"))
    got = {k: value(v) for k, v in sizes.items()}
    if a is None or b is None or None in got.values():
        return None
    lines = source.splitlines(keepends=True)
    at = sum(len(line) for line in lines[:call.lineno - 1])  # the launch's line (the seed's files are ASCII)
    close = sum(len(line) for line in lines[:call.end_lineno - 1]) + call.end_col_offset - 1  # type: ignore[operator]
    indent = re.match(r" *", lines[call.lineno - 1]).group(0)  # type: ignore[union-attr]
    view_a = f"torch.as_strided({a}, ({got['M']}, {got['K']}), ({got['stride_am']}, {got['stride_ak']}))"
    view_bt = f"torch.as_strided({b}, ({got['N']}, {got['K']}), ({got['stride_bn']}, {got['stride_bk']}))"
    split = f"{indent}{', '.join(_PARAMS)} = _split16_operands(\n{indent}    {view_a},\n{indent}    {view_bt})\n"
    before = source[:close].rstrip()
    extra = ("" if before.endswith(",") else ",") + " " + ", ".join(f"{p}={p}" for p in _PARAMS)
    return source[:at] + split + before[at:] + extra + source[close:]
