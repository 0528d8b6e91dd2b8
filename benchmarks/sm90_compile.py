"""Compile a structural move's kernels for a Hopper (sm_90) on a machine with no GPU, and say what each launch
costs in shared memory, registers and spills, and whether its products run on wgmma and its loads on TMA: a
move's tiles checked before the H200 spends time on them.

    pip install --no-deps --target /tmp/t36 triton==3.6.0        # once: the H200's own Triton
    PYTHONPATH=/tmp/t36 python benchmarks/sm90_compile.py PROBLEM MOVE [--kernel BEST] [--configs N | --config JSON]

The move's kernel file is instantiated at each configuration of its grid (the first N, or the ones given), and
its forward runs on CPU tensors of the problem's own inputs with every Triton launch turned into a compile for
sm_90 (nothing runs: the outputs are garbage). Each launch prints its kernel, its knobs, the shared memory it
asks for (a Hopper gives a block 227 KB), the registers a thread uses and the bytes it spills (cuobjdump's
resource usage of the cubin), and whether its products run on wgmma and its loads on TMA. The compiler is
the one imported: Triton 3.6 is the H200's; the machine's own may allocate registers differently.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED_LIMIT = 232448  # bytes a block may ask for on an H100/H200 (227 KB)


class _Hopper:
    """Triton's view of a device, for compiling only: an sm_90 with no device behind it."""

    def get_current_target(self):  # noqa: ANN201 - Triton's GPUTarget
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_active_torch_device(self):  # noqa: ANN201 - a torch.device
        import torch

        return torch.device("cpu")


def cuobjdump(cubin: bytes, option: str) -> str:
    """What Triton's own cuobjdump prints for a cubin with `option` ("-res-usage", "-sass")."""
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as out:
        out.write(cubin)
    try:
        return subprocess.run([str(tool), option, out.name], capture_output=True, text=True, check=False).stdout
    finally:
        os.unlink(out.name)


def _usage(cubin: bytes) -> tuple[int | None, int | None]:
    """The registers a thread uses and the bytes of stack (spills) it keeps, from cuobjdump."""
    text = cuobjdump(cubin, "-res-usage")
    regs, stack = re.search(r"REG:(\d+)", text), re.search(r"STACK:(\d+)", text)
    return (int(regs[1]) if regs else None), (int(stack[1]) if stack else None)


def compile_launches(source: str, inputs: list, init: list) -> list[dict]:  # noqa: ANN001
    """Each Triton launch of the kernel file's forward on `inputs` (ModelNew built on `init`), compiled for sm_90
    instead of run."""
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction

    found: list[dict] = []
    real_run = JITFunction.run

    def compile_only(self, *args, grid, warmup, **kwargs):  # noqa: ANN001, ANN202, ARG001
        kernel = real_run(self, *args, grid=grid, warmup=True, **kwargs)
        if hasattr(kernel, "result"):
            kernel = kernel.result()
        regs, stack = _usage(kernel.asm["cubin"])
        knobs = {k: v for k, v in kwargs.items() if k.isupper() or k in ("num_warps", "num_stages")}
        found.append({"kernel": self.fn.__name__, "knobs": knobs, "shared": kernel.metadata.shared,
                      "cubin": kernel.asm["cubin"],
                      "registers": regs, "spilled": stack, "wgmma": "warp_group_dot" in kernel.asm["ttgir"],
                      "tma": "async_tma_copy_global_to_local" in kernel.asm["ttgir"]})
        return kernel

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sm90_kernel.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("kernelopt_sm90_kernel", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        before = driver._active  # noqa: SLF001 - unset on a machine with no GPU, where `default` raises
        driver.set_active(_Hopper())
        JITFunction.run = compile_only
        try:
            module.ModelNew(*init)(*inputs)
        finally:
            JITFunction.run = real_run
            driver._active = before  # noqa: SLF001
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("move", help="a structural move's name, e.g. matmul.split_k_f16x3")
    parser.add_argument("--kernel", type=Path, help="the best kernel so far, for the moves that rewrite it (dot.*)")
    parser.add_argument("--configs", type=int, default=3, help="the first N configurations of the move's grid")
    parser.add_argument("--config", action="append", type=json.loads, default=[],
                        help='a configuration as JSON, e.g. \'{"BLOCK_M": 128, "num_warps": 8}\' (repeatable)')
    parser.add_argument("--sass", type=Path, help="write each launch's SASS into this folder and count its "
                        "instructions and loads, path by path (a path: the instructions up to an EXIT)")
    args = parser.parse_args(argv)

    import torch

    from kernelopt.harness.problem import import_file
    from kernelopt.offline.moves import structural_moves
    from kernelopt.offline.tuner import with_config

    source = args.kernel.read_text() if args.kernel else None
    moves = {m.name: m for m in structural_moves(args.problem, source=source).instances}
    if args.move not in moves:
        print(f"{args.move} does not apply to {args.problem.name}; those that do: {', '.join(moves)}")
        return 2
    move = moves[args.move]
    problem = import_file(args.problem, "kernelopt_sm90_problem")
    torch.manual_seed(0)
    inputs = problem.get_inputs()
    init = problem.get_init_inputs() if hasattr(problem, "get_init_inputs") else []
    import triton

    print(f"{args.problem.name}, {args.move}, compiled for sm_90 by Triton {triton.__version__}")
    for config in args.config or list(move.grid[: args.configs]):
        try:
            launches = compile_launches(with_config(move.source, config), inputs, init)
        except Exception as err:  # a configuration the compiler refuses is a finding, not the end of the list
            print(f"{json.dumps(config)}: does not compile: {type(err).__name__}: {str(err)[:300]}")
            continue
        print(json.dumps(config))
        for row in launches:
            over = "  OVER 227 KB" if row["shared"] > SHARED_LIMIT else ""
            print(f"  {row['kernel']}: shared {row['shared']} B{over}, {row['registers']} registers, "
                  f"{row['spilled']} B spilled, wgmma {'yes' if row['wgmma'] else 'no'}, TMA loads "
                  f"{'yes' if row['tma'] else 'no'}  {json.dumps(row['knobs'], default=str)}")
            if args.sass:
                written = len(list(args.sass.glob("*.sass"))) if args.sass.is_dir() else 0
                print("    " + _sass_counts(row["cubin"], args.sass / f"{row['kernel']}_{written}.sass"))
    return 0


def _sass_counts(cubin: bytes, path: Path) -> str:
    """The SASS written to `path`, and per path (up to each EXIT) its instructions, global loads (16-byte ones)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = cuobjdump(cubin, "-sass")
    path.write_text(text)
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", text)
    paths, current = [], []
    for op in ops:
        current.append(op)
        if op == "EXIT":
            paths.append(current)
            current = []
    described = [f"{len(p)} instructions, {sum(o.startswith('LDG') for o in p)} loads "
                 f"({sum(o.startswith('LDG') and '.128' in o for o in p)} of 16 bytes)" for p in paths if p]
    return f"SASS {path}: " + "; ".join(f"path {n + 1}: {d}" for n, d in enumerate(described))


if __name__ == "__main__":
    sys.exit(main())
