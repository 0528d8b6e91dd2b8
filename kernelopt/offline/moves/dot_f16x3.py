"""The `dot.f16x3` rewrite: a kernel's fp32 products (a `tl.dot` at "ieee" or "tf32x3") as three fp16
products of its own tiles, scaled by powers of two and split in registers each K step (matmul_f16x3.py's loop).

The matmul families have the split as template moves, and `dot.split_f16` (seed_split.py) splits the operands of
a compiler GEMM template once before its launch. Neither reaches a product whose operands no pass can split
first: a convolution's implicit-GEMM tile gathered from its input, a batched template, a K the template fixes
under the split's minimum, any kernel a user or a model wrote. Here the product is rewritten where it stands, so
every such kernel keeps its loads, masks, program order and epilogue. A statement `acc += tl.dot(a, b, ...)` or
`acc = tl.dot(a, b, acc, ...)` becomes

    a_hi, a_lo, a_inv = _fp16_parts(a, 1)        # each row of a's tile scaled into fp16's range, split
    b_hi, b_lo, b_inv = _fp16_parts(b, 0)        # each column of b's tile
    step = tl.dot(a_lo, b_hi); step = tl.dot(a_hi, b_lo, step); step = tl.dot(a_hi, b_hi, step)
    acc += step * (a_inv[:, None] * b_inv[None, :])

Triton's "tf32x3" does the same split each step at TF32's rate; fp16 runs at twice it, with its range made good
by the tiles' scales. The verifier measures the rewritten kernel (16-bit products on fp32 data); a dot whose
statement is of another form is left as it is.
"""

from __future__ import annotations

import ast
import functools
import re

from kernelopt.offline.moves.matmul_f16x3 import PARTS
from kernelopt.offline.moves.precision import TF32X3, _false_names, _is_dot, _named, _on_cuda_cores
from kernelopt.syntax import parse, python_lines


def _fp32_product(call: ast.Call, false_names: set[str]) -> bool:
    """A dot of fp32 operands at fp32's accuracy: on the CUDA cores, or at three TF32 products."""
    precision = _named(call).get("input_precision")
    return _on_cuda_cores(call, false_names) or (isinstance(precision, ast.Constant) and precision.value == TF32X3)


def _site(node: ast.stmt, false_names: set[str]) -> tuple[str, ast.Call] | None:
    """(the accumulator's name, the dot) where `node` is `acc += tl.dot(a, b, ...)` or `acc = tl.dot(a, b, acc,
    ...)` multiplying fp32 at fp32's accuracy."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
        call, acc, operands = node.value, node.target.id, 2
    elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
          and isinstance(node.value, ast.Call) and len(node.value.args) >= 3
          and isinstance(node.value.args[2], ast.Name) and node.value.args[2].id == node.targets[0].id):
        call, acc, operands = node.value, node.targets[0].id, 3
    else:
        return None
    if not (isinstance(call, ast.Call) and _is_dot(call) and len(call.args) == operands
            and not any(k.arg == "acc" for k in call.keywords) and _fp32_product(call, false_names)):
        return None
    return acc, call


def _block(acc: str, call: ast.Call, n: int, indent: str) -> str:
    a, b = (ast.unparse(x) for x in call.args[:2])
    h = f"f16x3_{n}_"
    lines = ["# fp32 products as three fp16 products of the tiles scaled and split in registers (dot.f16x3)",
             f"{h}ah, {h}al, {h}ia = _fp16_parts({a}, -1)", f"{h}bh, {h}bl, {h}ib = _fp16_parts({b}, -2)",
             f"{h}step = tl.dot({h}al, {h}bh)", f"{h}step = tl.dot({h}ah, {h}bl, {h}step)",
             f"{h}step = tl.dot({h}ah, {h}bh, {h}step)",
             f"{acc} += {h}step * (tl.expand_dims({h}ia, -1) * tl.expand_dims({h}ib, -2))"]
    return "".join(indent + line + "\n" for line in lines)


@functools.lru_cache(maxsize=64)  # a pure function of its text: the moves ask again each round
def to_f16x3(source: str) -> str | None:
    """`source` with each fp32 product statement rewritten as three fp16 products of split tiles, or None where
    there is none (or the file has the split's helper already)."""
    if "import triton.language as tl" not in source or not re.search(r"^import triton(?![\w.])", source, re.M):
        return None  # the helper is written `@triton.jit` and `tl.`
    try:
        tree = parse(source)
    except SyntaxError:
        return None
    if any(isinstance(n, ast.FunctionDef) and n.name == "_fp16_parts" for n in ast.walk(tree)):
        return None
    launched_false = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords
                      if k.arg and isinstance(k.value, ast.Constant) and k.value.value is False}
    lines = [line.encode() for line in python_lines(source)]  # ast's columns count UTF-8 bytes
    edits: dict[int, tuple[int, str]] = {}  # first line (0-based) -> (lines replaced, text)
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        false_names = _false_names(function) | launched_false
        for node in ast.walk(function):
            found = _site(node, false_names) if isinstance(node, ast.stmt) else None
            if found is None or node.end_lineno is None or node.end_col_offset is None:
                continue
            indent = lines[node.lineno - 1][: node.col_offset].decode()
            tail = lines[node.end_lineno - 1][node.end_col_offset:].decode().strip()
            if indent.strip() or (tail and not tail.startswith("#")):
                continue  # not alone on its lines: left as it is
            comment = f"{indent}{tail}\n" if tail else ""  # a comment after the statement stays, above its block
            edits[node.lineno - 1] = (node.end_lineno - node.lineno + 1,
                                      comment + _block(*found, len(edits), indent))
    jitted = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.decorator_list]
    if not edits or not jitted:
        return None
    out: list[str] = []
    helper_at = min(d.lineno for d in jitted[0].decorator_list) - 1
    skip = 0
    for index, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        if index == helper_at:
            out.append(PARTS.lstrip("\n") + "\n")
        if index in edits:
            count, text = edits[index]
            out.append(text)
            skip = count - 1
            continue
        out.append(line.decode())
    return "".join(out)
