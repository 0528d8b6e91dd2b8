"""The `dot.split_f16` rewrite: a compiler seed's GEMM templates on operands split once into fp16 parts.

torch.compile's Triton GEMM template (the seed of a Linear with its epilogue, level 2's GEMMs) multiplies
fp32 tiles as they are loaded: on the CUDA cores, or at 3xTF32 after `dot.tf32x3`, whose every K step splits
both tiles in registers. Here each template's K loop is replaced by the product `matmul.split_f16` runs
(moves/matmul_split_f16.py): before the launch, A's rows and B's columns are scaled by powers of two into
fp16's range and split once into parts and remainders, K-major and padded; the loop runs three fp16 products
a K step, each step's sum added in fp32, and undoes the scales. Everything else in the template stays: its
program order, and its suffix, which stores `acc` or fuses the epilogue (a bias, an activation) into it.

The template's sizes and strides (`M = ks0`, `stride_am = 8192`) are its own lines; the launch's arguments
give each parameter its value in forward, so A and B are viewed there with `torch.as_strided`. A batched
template (a bmm, attention's two products: `idx_q = tl.program_id(1)`, `stride_aq`) is viewed with its batch
first, the batch count its launch grid's second axis; each batch's parts are split in the same passes, and its
programs read them at their batch's offset. A template whose loop, sizes or launch read otherwise is left as it
is, and the rewrite does not apply.
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
# a batched template (its batch `idx_q = tl.program_id(1)`): each batch's parts rows_a (rows_b) x split_kp apart
_BATCH = ("split_ra", "split_rb")
_BATCH_LOOP = (f"    acc = split16_batch_product({', '.join(_PARAMS + _BATCH)}, idx_q, pid_m, pid_n, BLOCK_M, BLOCK_N, "
               "BLOCK_K)\n")

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


@triton.jit
def split16_batch_product(ah_ptr, al_ptr, bh_ptr, bl_ptr, ia_ptr, ib_ptr, Kp, rows_a, rows_b, q, pid_m, pid_n,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # batch q's parts: rows_a (rows_b) padded rows of Kp a batch, a scale's inverse a row
    qa = q.to(tl.int64) * rows_a
    qb = q.to(tl.int64) * rows_b
    return split16_product(ah_ptr + qa * Kp, al_ptr + qa * Kp, bh_ptr + qb * Kp, bl_ptr + qb * Kp, ia_ptr + qa,
                           ib_ptr + qb, Kp, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)


def _split16(x, ld):
    # x (batches x R x C, any strides), rows scaled by powers of two, as fp16 parts and remainders padded to whole
    # 256s (a batch's rows too)
    rows = triton.cdiv(x.shape[1], 256) * 256
    big = torch.zeros((x.shape[0], rows), device=x.device, dtype=torch.int32)
    hi = torch.empty((x.shape[0], rows, ld), device=x.device, dtype=torch.float16)
    lo = torch.empty((x.shape[0], rows, ld), device=x.device, dtype=torch.float16)
    inv = torch.ones((x.shape[0], rows), device=x.device, dtype=torch.float32)  # K = 0: no split program writes it
    row_blocks = triton.cdiv(rows, 32)
    split16_row_max[(x.shape[0] * row_blocks, triton.cdiv(x.shape[2], 128))](
        x, big, x.shape[1], x.shape[2], x.stride(0), x.stride(1), x.stride(2), rows, row_blocks, block_r=32,
        block_c=128, num_warps=4)
    split16_parts[(x.shape[0] * row_blocks, triton.cdiv(ld, 128))](
        x, hi, lo, big, inv, x.shape[1], x.shape[2], x.stride(0), x.stride(1), x.stride(2), rows, ld, row_blocks,
        block_r=32, block_c=128, num_warps=4)
    return hi, lo, inv, rows


def _split16_operands(a, bt):
    # A (M x K) and B's transpose (N x K), or a batch of each (batches x M x K, batches x N x K): each split, K padded
    # to a whole 256 (the compiler's tile may be so deep); a batch's padded rows after the parts where batched
    ld = triton.cdiv(a.shape[-1], 256) * 256
    ah, al, ia, rows_a = _split16(a if a.dim() == 3 else a[None], ld)
    bh, bl, ib, rows_b = _split16(bt if bt.dim() == 3 else bt[None], ld)
    return (ah, al, bh, bl, ia, ib, ld) + ((rows_a, rows_b) if a.dim() == 3 else ())

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


def _sizes(body: str, names: tuple[str, ...]) -> dict[str, str] | None:
    """Each name's value as the template's own line assigns it (`    M = ks0`); None where one is not assigned so."""
    found = {n: re.search(rf"^ {{4}}{n} = ([^\n#]+)$", body, re.M) for n in names}
    return None if None in found.values() else {n: m.group(1).strip() for n, m in found.items() if m}


def _template(source: str, name: str, params_text: str, body: str) -> str | None:
    operands = {k: re.search(rf"^ {{4}}{k} = (\w+)$", body, re.M) for k in ("A", "B")}
    start, end = body.find("    acc = tl.zeros("), body.find("    # rematerialize rm and rn")
    if None in operands.values() or start < 0 or end < start or "pid_m = " not in body[:start]:
        return None
    # a batched template: its batch the launch's second grid axis, read before the loop, A and B a stride apart a batch
    batched = re.search(r"^ {4}idx_q = tl\.program_id\(1\)", body[:start], re.M) is not None
    sizes = _sizes(body, _SIZES + (("stride_aq", "stride_bq") if batched else ()))
    if sizes is None:
        return None
    if re.search(r"program_id\(2\)", body) or (not batched and re.search(r"\bstride_[ab]q\b|program_id\(1\)", body)):
        return None
    if sizes["K"].isdigit() and int(sizes["K"]) < SHORT_K:
        return None
    loop = body[start:end]
    if loop.count("tl.dot(") != 1 or "\n    for " not in loop:
        return None
    params = [p.split(":")[0].strip() for p in params_text.split(",")]
    kernel = body[:start] + (_BATCH_LOOP if batched else _LOOP) + "\n" + body[end:]
    signature = params_text + ", " + ", ".join(_PARAMS + (_BATCH if batched else ()))
    source = source.replace(f"def {name}({params_text}):\n{body}", f"def {name}({signature}):\n{kernel}", 1)
    return _launch(source, name, params, sizes, {k: m.group(1) for k, m in operands.items() if m})


def _batches(call: ast.Call, source: str) -> str | None:
    """The launch's second grid axis (a batched template's batches), as forward writes it; None where the grid
    reads otherwise (not a tuple, or an axis that needs the launch's meta-parameters)."""
    grid = call.func.slice if isinstance(call.func, ast.Subscript) else None
    if isinstance(grid, ast.Lambda):
        grid = grid.body
    if not isinstance(grid, ast.Tuple) or len(grid.elts) < 2:
        return None
    text = ast.get_source_segment(source, grid.elts[1])
    return None if text is None or "meta" in text else text


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
    batch, passed = ("", "", ""), _PARAMS
    if "stride_aq" in got:
        if (batches := _batches(call, source)) is None:
            return None
        batch, passed = (f"{batches}, ", f"{got['stride_aq']}, ", f"{got['stride_bq']}, "), _PARAMS + _BATCH
    view_a = (f"torch.as_strided({a}, ({batch[0]}{got['M']}, {got['K']}), "
              f"({batch[1]}{got['stride_am']}, {got['stride_ak']}))")
    view_bt = (f"torch.as_strided({b}, ({batch[0]}{got['N']}, {got['K']}), "
               f"({batch[2]}{got['stride_bn']}, {got['stride_bk']}))")
    split = f"{indent}{', '.join(passed)} = _split16_operands(\n{indent}    {view_a},\n{indent}    {view_bt})\n"
    before = source[:close].rstrip()
    extra = ("" if before.endswith(",") else ",") + " " + ", ".join(f"{p}={p}" for p in passed)
    return source[:at] + split + before[at:] + extra + source[close:]
