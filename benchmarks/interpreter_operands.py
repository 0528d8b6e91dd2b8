"""The interpreter's operand fast paths (harness/sandbox/interpreter.py `_quick_operands`) against Triton's own methods,
on the 3-D max pool's two templates (tests/test_pooling3d.py's dilated window), alternating, process CPU seconds.

    python benchmarks/interpreter_operands.py [--reps 6]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

NAMES = ("broadcast_impl_value", "_cast_to_computation_type", "computation_type_impl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=6)
    args = parser.parse_args()
    import test_pooling3d as pools
    import torch
    from triton.language.semantic import TritonSemantic

    from kernelopt.harness.sandbox.interpreter import quick_interpreter
    from kernelopt.offline.moves import pooling3d

    quick_interpreter()
    quick = {name: getattr(TritonSemantic, name) for name in NAMES}
    own = {name: fn._kernelopt_own for name, fn in quick.items()}
    folder = Path(tempfile.mkdtemp())
    torch.manual_seed(0)
    x = torch.randn(2, 2, 9, 10, 11)
    op, window = "max_pool3d_with_indices", (None, [3, 3, 3], [2, 2, 2], [1, 1, 1], [3, 3, 3])
    models = [pools._module(folder, pools.with_config(pooling3d.written(kind, op, window, "x"), pools.SMALL[kind]),
                            kind).ModelNew() for kind in ("flat", "tiled")]
    for model in models:  # the first call compiles and imports
        model(x)
    times: dict[str, list[float]] = {"Triton's own": [], "fast paths": []}
    outputs = {}
    for _ in range(args.reps):
        for label, methods in (("Triton's own", own), ("fast paths", quick)):
            for name in NAMES:
                setattr(TritonSemantic, name, methods[name])
            began = time.process_time()
            outputs[label] = [(model(x), model(x[0])) for model in models]
            times[label].append(time.process_time() - began)
    same = all(torch.equal(a, b) for pair_a, pair_b in zip(*outputs.values(), strict=True)
               for a, b in zip(pair_a, pair_b, strict=True))
    for label, values in times.items():
        print(f"{label}: min {min(values):.3f} s, median {sorted(values)[len(values) // 2]:.3f} s")
    print(f"outputs bit for bit the same: {same}")


if __name__ == "__main__":
    main()
