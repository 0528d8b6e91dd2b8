"""torch.triu or torch.tril of a product (`triu(A @ B)`): the matmul templates computing only the tiles the
triangle keeps.

A tile wholly outside the kept triangle takes no product: its K loop runs to its start, so its program only
writes zeros. A tile the diagonal crosses multiplies in full and writes zeros where torch would. On a square
product about half the tiles are outside, so half the product's work goes. Nothing is assumed of A or B (a
triangular operand is data, not the reference's work): every kept output is the full product's.

The rewrite is textual on a template's kernels, and takes only kernels whose shape it knows, each program's
tile read from `_tile_ids` (a grouped, persistent, batched, aligned, split or split-K kernel). A kernel that
writes its tile some other way (through a tensor descriptor) is left, and the move that uses it does not apply.
"""

from __future__ import annotations

import ast
import re
from string import Template

from kernelopt.syntax import char_offset, parse, python_lines

_HELPERS = Template('''

@triton.jit
def _live_tile(pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # whether tile (pid_m, pid_n) holds an output torch.$kind keeps (row i, column j: j - i $op $diagonal)
    return $live


@triton.jit
def _triangle(acc, rm, rn):
    # the outputs torch.$kind keeps, zeros elsewhere
    return tl.where(rn[None, :] - rm[:, None] $op $diagonal, acc, 0.0)
''')

_TILE = re.compile(r"^( +)pid_m, pid_n = _tile_ids\(.*\)\n", re.M)
# A product's K bound as each template writes it: _dot_range's (0, K) or split-K's (k_lo, k_hi), the split
# product's Kp, a loop of the kernel's own over K
_BOUNDS = (
    (re.compile(r"pid_m, pid_n, 0, K,"), "pid_m, pid_n, 0, tl.where(live, K, 0),"),
    (re.compile(r"pid_m, pid_n, k_lo, k_hi,"), "pid_m, pid_n, k_lo, tl.where(live, k_hi, k_lo),"),
    (re.compile(r"(_split_product\([^()]*?), Kp, pid_m, pid_n,"), r"\1, tl.where(live, Kp, 0), pid_m, pid_n,"),
    (re.compile(r"for k in range\(0, (Kp?), BLOCK_K\):"), r"for k in range(0, tl.where(live, \1, 0), BLOCK_K):"),
)
_ROWS = re.compile(r"\b(\w+)\[:, None\]")
_COLUMNS = re.compile(r"\b(\w+)\[None, :\]")


def on_triangle(source: str, kind: str, diagonal: int) -> str | None:
    """`source` computing only what torch.`kind` ("triu" or "tril") with `diagonal` keeps of its product; None
    where a kernel that takes a tile is not one this rewrite knows."""
    op = ">=" if kind == "triu" else "<="
    head, sep, rest = source.partition("\n\n@triton.jit\n")
    if not sep:
        return None
    kernels = []
    for kernel in ("@triton.jit\n" + rest).split("\n\n@triton.jit\n"):
        kernel = kernel.removeprefix("@triton.jit\n")
        if _TILE.search(kernel):
            kernel = _rewritten(kernel)
            if kernel is None:
                return None
        kernels.append(kernel)
    helpers = _HELPERS.substitute(kind=kind, op=op, diagonal=diagonal, live=live_tile(kind, diagonal))
    return head + helpers + "".join("\n\n@triton.jit\n" + k for k in kernels)


def live_tile(kind: str, diagonal: int) -> str:
    """The expression of pid_m, pid_n, BLOCK_M and BLOCK_N that is true where the tile holds a kept output."""
    if kind == "triu":  # the tile's largest j - i (its last column, its first row) reaches the diagonal
        return f"(pid_n * BLOCK_N + BLOCK_N - 1) - pid_m * BLOCK_M >= {diagonal}"
    return f"pid_n * BLOCK_N - (pid_m * BLOCK_M + BLOCK_M - 1) <= {diagonal}"  # its smallest, its first column


def _rewritten(kernel: str) -> str | None:
    """A kernel that takes tiles, each tile's product bounded to nothing outside the triangle and its store
    masked; None where its product's bound or its store of `acc` is not found."""
    kernel, tiles = _TILE.subn(lambda m: m.group(0) + f"{m.group(1)}live = _live_tile(pid_m, pid_n, BLOCK_M, "
                                                      "BLOCK_N)\n", kernel)
    bounded = 0
    for pattern, replacement in _BOUNDS:
        kernel, n = pattern.subn(replacement, kernel)
        bounded += n
    kernel, stores = _masked_stores(kernel)
    return kernel if bounded == tiles == stores else None


def _masked_stores(kernel: str) -> tuple[str, int]:
    """Each `tl.store(address, acc...)` of an output tile (rows `r[:, None]`, columns `c[None, :]` in its address)
    storing `_triangle(acc, r, c)...` instead, and how many."""
    lines = python_lines(kernel)
    found = []
    for node in ast.walk(parse(kernel)):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.store" and len(node.args) >= 2):
            continue
        value = node.args[1]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to":
            value = value.func.value
        address = ast.unparse(node.args[0])
        rows, columns = _ROWS.search(address), _COLUMNS.search(address)
        if isinstance(value, ast.Name) and value.id == "acc" and rows and columns:
            found.append((char_offset(lines, value.lineno, value.col_offset), rows.group(1), columns.group(1)))
    for at, rows, columns in sorted(found, reverse=True):
        kernel = kernel[:at] + f"_triangle(acc, {rows}, {columns})" + kernel[at + len("acc"):]
    return kernel, len(found)
