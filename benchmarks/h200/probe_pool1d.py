"""Is 1-D pooling's gap to torch.compile real? Times, interleaved on one GPU with kernelopt's own
protocol, eager, torch.compile (static shapes, as the baseline is), and kernel files given for the
problem (the compiler seed, pooling.tiled, the since-replaced pooling.streamed), each checked
against eager first.

    python3 benchmarks/h200/probe_pool1d.py PROBLEM.py KERNEL.py [KERNEL.py ...]
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from kernelopt.harness.measure.timing import measure

ROUNDS = 3


def module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    found = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(found)
    return found


def main(problem_path: str, kernels: list[str]) -> None:
    device = torch.device("cuda")
    problem = module(problem_path)
    init = problem.get_init_inputs()
    model = problem.Model(*init).to(device).eval()
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    with torch.no_grad():
        expected = model(*inputs)
        compiled = torch.compile(model)
        runs = {"eager": lambda: model(*inputs), "torch.compile": lambda: compiled(*inputs)}
        for path in kernels:
            new = module(path).ModelNew(*init).to(device)
            got = new(*inputs)
            error = (got.float() - expected.float()).abs().max().item() if got.shape == expected.shape else None
            print(f"{Path(path).name}: shape {tuple(got.shape)}, max error {error}", flush=True)
            if error is not None and error < 1e-4:
                runs[Path(path).stem] = (lambda n: lambda: n(*inputs))(new)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(ROUNDS):
            for name, fn in runs.items():
                times[name].append(measure(fn, device).median_ms)
    for name, row in times.items():
        print(f"{Path(problem_path).stem} {name}: " + " ".join(f"{t:.4f}" for t in row) + " ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
