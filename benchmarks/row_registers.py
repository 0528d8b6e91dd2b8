"""What the row templates' kernels cost a thread on a Hopper, compiled for sm_90 on a machine with no GPU: the
registers (how many programs fit an SM), the SASS instructions, the 16-byte accesses and the 64-bit compares.

    pip install --no-deps --target /tmp/t36 triton==3.6.0        # once: the H200's own Triton
    PYTHONPATH=/tmp/t36 python benchmarks/row_registers.py [--n N] [FAMILY ...]

For each family (default softmax, log_softmax, row_l1_norm; `standardize` is LayerNorm's, InstanceNorm's and
GroupNorm's one-read kernel, with a weight and a bias): `rows.one_read`'s kernel at each launch the planner offers an
H200 for rows of N values (`rowwise.one_read_grid`; default 393,216: KernelBench's softmax; 65,535 is its L1 norm's,
2,097,152 its GroupNorm's, 4,194,304 its LayerNorm's), with the programs an SM holds at those registers, and
`rows.rows_in_registers`'s at a few rows and warps, each three ways: rows off a 16-byte boundary in aligned windows
(VEC=4), the same rows value by value (VEC=1, rows_in_registers's VECTORS=0), and rows whose length divides by 16
(VEC=1; Triton specializes such a length, so its accesses are 16-byte ones too). The pointers are 16-byte aligned,
as Triton specializes a launch on torch's addresses. The compiler is the one imported: Triton 3.6 is the H200's; the
local Triton (3.9 here) allocates registers differently.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from sm90_compile import _usage, cuobjdump  # noqa: E402  (a cubin's registers and stack; cuobjdump's text)

ONE_READ = {"out_ptr": "*fp32", "x_ptr": "*fp32", "m_ptr": "*fp32", "s_ptr": "*fp32", "count_ptr": "*i32",
            "flag_ptr": "*i32", "row_ptr": "*fp32", "n": "i32", "inner": "constexpr", "chunks": "i32",
            "CHUNK": "constexpr", "PIECES": "constexpr", "VEC": "constexpr", "LAST": "constexpr"}
WAYS = ((4, False, "rows off a boundary, VEC 4"), (1, False, "rows off a boundary, VEC 1"), (1, True, "aligned rows"))
STANDARDIZE = {"out_ptr": "*fp32", "x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "mean_ptr": "*fp32",
               "m2_ptr": "*fp32", "count_ptr": "*i32", "flag_ptr": "*i32", "row_ptr": "*fp32", "n": "i32",
               "eps": "fp32", "groups": "i32", "plane": "i32", "chunks": "i32", "CHUNK": "constexpr",
               "PIECES": "constexpr", "has_w": "constexpr", "has_b": "constexpr", "UNIFORM": "constexpr",
               "LAST": "constexpr"}
REGISTERS = {"out_ptr": "*fp32", "x_ptr": "*fp32", "n_rows": "i32", "n": "i32", "inner": "constexpr",
             "ROWS": "constexpr", "BLOCK_N": "constexpr", "VEC": "constexpr"}


def _kernel(source: str, name: str):  # noqa: ANN202 - a JITFunction
    path = Path(tempfile.mkdtemp()) / "kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("row_kernel", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, name)


def _compiled(kernel, signature: dict[str, str], fixed: dict[str, object], warps: int, n_aligned: bool) -> str:  # noqa: ANN001
    import triton
    from triton.backends.compiler import GPUTarget

    names = list(signature)
    attrs = {(i,): [["tt.divisibility", 16]] for i, kind in enumerate(signature.values()) if kind.startswith("*")}
    if n_aligned:
        attrs[(names.index("n"),)] = [["tt.divisibility", 16]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = triton.compiler.ASTSource(kernel, signature, fixed, attrs)
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    regs, stack = _usage(compiled.asm["cubin"])
    ptx = compiled.asm["ptx"]
    sass = _sass_count(compiled.asm["cubin"])
    v4 = len(re.findall(r"\bld\.global\.v4\b", ptx)), len(re.findall(r"\bst\.global\.v4\b", ptx))
    s64 = len(re.findall(r"\bsetp\.\w+\.s64\b", ptx))
    return f"{regs} registers, {stack} B stack, {sass} SASS, v4 loads/stores {v4[0]}/{v4[1]}, 64-bit compares {s64}"


def held(usage: str, warps: int) -> str:
    """`usage` with the programs an H200 SM holds at its registers (moves/resident.py, as the launch reads them)."""
    from kernelopt.offline.moves import resident

    registers = int(usage.split(" registers")[0])
    return f"{usage}; {resident.per_sm(registers, warps)} an SM"


def _sass_count(cubin: bytes) -> int:
    return sum(1 for line in cuobjdump(cubin, "-sass").splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", line))


def main() -> None:
    import triton

    from kernelopt.offline.moves import rows, standardize
    from kernelopt.offline.moves.rowwise import one_read_grid

    args = sys.argv[1:]
    n = 393216
    if args[:1] == ["--n"]:
        n, args = int(args[1]), args[2:]
    families = args or ["softmax", "log_softmax", "row_l1_norm"]
    print(f"compiled for sm_90 by Triton {triton.__version__}, rows of {n}")
    launches = [(c["CHUNK"], c["num_warps"]) for c in one_read_grid(n, 132)]  # the planner's, for the H200
    for family in families:
        if family == "standardize":  # LayerNorm's, InstanceNorm's and GroupNorm's rows (rows of n contiguous)
            one_read = _kernel(standardize.one_read(1, 1e-5, ("x",)), "one_read_kernel")
            for chunk, warps in launches:
                pieces = triton.next_power_of_2(triton.cdiv(n, chunk))
                for norm, uniform, last in (("LayerNorm", False, False), ("GroupNorm", True, False),
                                            ("GroupNorm, LAST_MERGES 1", True, True)):
                    fixed = {"CHUNK": chunk, "PIECES": pieces, "has_w": True, "has_b": True, "UNIFORM": uniform,
                             "LAST": last}
                    signature = STANDARDIZE
                    if not uniform:  # LayerNorm's plane (a weight a value) and groups are 1, made constants by Triton
                        signature = {**STANDARDIZE, "plane": "constexpr", "groups": "constexpr"}
                        fixed |= {"plane": 1, "groups": 1}
                    print(f"standardize.one_read CHUNK {chunk}, {warps} warps ({-(-n // chunk)} pieces), {norm}: "
                          f"{held(_compiled(one_read, signature, fixed, warps, n % 16 == 0), warps)}")
            continue
        one_read = _kernel(rows.one_read(family, 1, ("x",), 1e-5), "one_read_kernel")
        for chunk, warps in launches:
            for vec, aligned, rows_are in WAYS:
                pieces = triton.next_power_of_2(triton.cdiv(n, chunk))
                fixed = {"inner": 1, "CHUNK": chunk, "PIECES": pieces, "VEC": vec, "LAST": False}
                print(f"{family}.one_read CHUNK {chunk}, {warps} warps, {rows_are}: "
                      f"{held(_compiled(one_read, ONE_READ, fixed, warps, aligned), warps)}")
        in_registers = _kernel(rows.rows_in_registers(family, 1, ("x",), 1e-5), "rows_kernel")
        for block_n, count, warps in ((4096, 1, 4), (4096, 2, 8), (1024, 8, 4)):
            for vec, aligned, rows_are in WAYS:
                fixed = {"inner": 1, "ROWS": count, "BLOCK_N": block_n, "VEC": vec}
                print(f"{family}.rows_in_registers BLOCK_N {block_n}, ROWS {count}, {warps} warps, {rows_are}: "
                      f"{_compiled(in_registers, REGISTERS, fixed, warps, aligned)}")


if __name__ == "__main__":
    main()
