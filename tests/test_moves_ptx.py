"""Structural moves checked in the code Triton compiles for an H200 (sm_90, on the host: ptxas is in
Triton's wheel, no GPU needed): what a template promises about its instructions at real sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_seed_specialize import _COMPILE, INTEGER_DIVISION

from kernelopt.offline.moves import structural_moves
from kernelopt.offline.tuner import with_config

MOVES = Path(__file__).parent / "data" / "moves"


def _count(path: Path, name: str, signature: dict[str, str], fixed: dict[str, object],
           pattern: str = INTEGER_DIVISION.pattern) -> int:
    """How often `pattern` (integer div/rem) matches a line of the kernel's PTX for sm_90."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _COMPILE, pattern],
                          input=json.dumps([(str(path), name, signature, fixed)]), capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(json.loads(done.stdout)[name])


def test_the_flat_pooling_divides_by_no_run_time_size_and_keeps_nans_at_kernelbench_sizes(tmp_path: Path) -> None:
    # Its sizes are constants of each compile: splitting a flat index into plane, row and column
    # divides by constants (multiplications in PTX), with 32-bit offsets (KernelBench's 1-D max
    # pool: 64 x 192 x 65,536) and with 64-bit ones (a 2-D pool of 2**32 values).
    move = next(m for m in structural_moves(MOVES / "max_pool2d.py").instances if m.name == "pooling.flat")
    kernel = tmp_path / "flat.py"
    kernel.write_text(with_config(move.source, {"BLOCK": 1024}))
    one_row = {"TOTAL": 64 * 192 * 65523, "H": 1, "W": 65536, "OH": 1, "OW": 65523, "KH": 1, "KW": 8, "SH": 1,
               "SW": 1, "PH": 0, "PW": 4, "DH": 1, "DW": 3, "WIDE": False}
    planes = {"TOTAL": 1024 * 1023 * 1023, "H": 2048, "W": 2048, "OH": 1023, "OW": 1023, "KH": 3, "KW": 3, "SH": 2,
              "SW": 2, "PH": 0, "PW": 0, "DH": 1, "DW": 1, "WIDE": True}
    for sizes in (one_row, planes):
        fixed = {**sizes, "IS_MAX": True, "COUNT_PAD": True, "BLOCK": 1024}
        signature = {"out_ptr": "*fp32", "x_ptr": "*fp32", **{k: "constexpr" for k in fixed}}
        assert _count(kernel, "pool_kernel", signature, fixed) == 0, sizes
        # a NaN in a max pool's window wins on the GPU too (a plain max.f32 drops it; the interpreter keeps it)
        assert _count(kernel, "pool_kernel", signature, fixed, r"\bmax\.NaN\.f32\b") > 0, sizes
