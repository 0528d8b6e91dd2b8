"""A KernelBench problem under torch.compile with static and with dynamic shapes (inference, as the
baselines time it), and eager: the times, and with TORCH_LOGS=output_code the Triton code of each.

    TORCH_LOGS=output_code python3 benchmarks/h200/static_compile.py 23_Softmax > out.log 2>&1

The compiler seed is made from the dynamic-shape code; the baseline compiles with static shapes.
Where the seed is slower than the baseline, the two codes side by side say why: for 35_GroupNorm_
the static kernels' bounds masks were constant (what the seed now decides at launch, RESULTS (ab)).
"""

import importlib.util
import sys

import torch


def _median_ms(fn, inputs: list, runs: int = 50) -> float:
    for _ in range(5):
        fn(*inputs)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main(name: str) -> None:
    spec = importlib.util.spec_from_file_location("problem", f"benchmarks/kernelbench/problems/{name}.py")
    problem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(problem)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    with torch.no_grad():
        for dynamic in (False, True):
            torch._dynamo.reset()
            print(f"dynamic={dynamic}: {_median_ms(torch.compile(model, dynamic=dynamic), inputs):.4f} ms", flush=True)
        print(f"eager: {_median_ms(model, inputs):.4f} ms", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
