"""Where a forward's GPU time goes, kernel by kernel: the problem's reference, a structural move at its
configurations, or any kernel file, at the problem's own size (a CUDA host).

    python3 benchmarks/h200/kernel_times.py PROBLEM [--move NAME [--kernel BEST] [--configs N | --config JSON]]
                                                    [--file KERNEL ...] [--reference] [--calls N]

Each target is built on the GPU (Model or ModelNew on the problem's init inputs), called three times to compile
and warm up, then timed over N calls with CUDA events (the median) and profiled over N more with torch.profiler:
one Markdown table per target, each kernel's launches per call, its time per call and its share of the kernels'
sum. A move that splits its work (two kernels, a statistics pass and a writing pass) shows which half costs what,
where the sweep and the verifier see only the sum. The timings are not the verifier's (no L2 flush between calls):
they say where the time goes, RESULTS.md's figures come from the verifier.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class KernelTime:
    name: str
    launches: float  # per forward
    us: float  # per forward


def kernel_times(events: list[Any], calls: int) -> list[KernelTime]:
    """The profiler's averaged events (`key_averages()`) as the GPU kernels of one forward, slowest first: each
    kernel's launches and device time per call. Events of no device time (the host's own) are left out."""
    rows = []
    for event in events:
        device_us = getattr(event, "self_device_time_total", None)
        if device_us is None:  # torch before 2.4 names it for CUDA
            device_us = getattr(event, "self_cuda_time_total", 0.0)
        if device_us and device_us > 0:
            rows.append(KernelTime(event.key, event.count / calls, device_us / calls))
    return sorted(rows, key=lambda r: -r.us)


def markdown(title: str, median_ms: float, rows: list[KernelTime]) -> str:
    """One target's table: the forward's median time, then each kernel's launches, time and share."""
    total = sum(r.us for r in rows) or 1.0
    lines = [f"### {title}", "", f"forward: {median_ms:.4f} ms (median of CUDA events); kernels' sum "
             f"{total / 1e3:.4f} ms", "", "| kernel | launches a call | ms a call | share |", "|---|---:|---:|---:|"]
    lines += [f"| `{r.name[:90]}` | {r.launches:g} | {r.us / 1e3:.4f} | {100 * r.us / total:.1f}% |" for r in rows]
    return "\n".join(lines) + "\n"


def _profile(model: Any, inputs: list[Any], calls: int) -> tuple[float, list[KernelTime]]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(calls):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                model(*inputs)
            torch.cuda.synchronize()
    return statistics.median(times), kernel_times(list(prof.key_averages()), calls)


def _targets(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """(title, kernel source) per target; None: the problem's reference Model."""
    targets: list[tuple[str, str | None]] = [("reference (Model)", None)] if args.reference else []
    targets += [(f"file {path.name}", path.read_text()) for path in args.file]
    if args.move:
        from kernelopt.hardware.specs import detect_gpu_spec
        from kernelopt.offline.moves import structural_moves
        from kernelopt.offline.tuner import with_config

        best = args.kernel.read_text() if args.kernel else None
        spec = detect_gpu_spec()  # the host's SMs and L2 choose the grids, as a run's moves on this GPU
        where = {"sm_count": spec.sm_count, "capability": spec.compute_capability, "l2_mb": spec.l2_cache_mb} \
            if spec else {}
        moves = {m.name: m for m in structural_moves(args.problem, source=best, **where).instances}
        if args.move not in moves:
            raise SystemExit(f"{args.move} does not apply to {args.problem.name}; those that do: {', '.join(moves)}")
        move = moves[args.move]
        for config in args.config or list(move.grid[: args.configs]):
            targets.append((f"{args.move} {json.dumps(config)}", with_config(move.source, config)))
    return targets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("--move", help="a structural move's name, e.g. separable.two_pass")
    parser.add_argument("--kernel", type=Path, help="the best kernel so far, for the moves that rewrite it (dot.*)")
    parser.add_argument("--configs", type=int, default=2, help="the move's first N configurations")
    parser.add_argument("--config", action="append", type=json.loads, default=[],
                        help='a configuration of the move as JSON (repeatable)')
    parser.add_argument("--file", action="append", type=Path, default=[], help="a kernel file (repeatable)")
    parser.add_argument("--reference", action="store_true", help="the problem's own Model too")
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error("--calls must be at least 1")

    import torch

    if not torch.cuda.is_available():
        print("kernel_times.py times kernels on a GPU, and this machine has none: run it on the CUDA host")
        return 2
    targets = _targets(args)
    if not targets:
        print("nothing to time: give --move, --file or --reference")
        return 2
    import tempfile

    from kernelopt.harness.problem import import_file

    problem = import_file(args.problem, "kernelopt_times_problem")
    init = problem.get_init_inputs() if hasattr(problem, "get_init_inputs") else []
    torch.manual_seed(0)
    inputs = [v.cuda() if isinstance(v, torch.Tensor) else v for v in problem.get_inputs()]
    print(f"## {args.problem.name} on {torch.cuda.get_device_name()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        for n, (title, source) in enumerate(targets):
            try:
                if source is None:
                    model = problem.Model(*init).cuda()
                else:
                    path = Path(tmp) / f"target{n}.py"
                    path.write_text(source)
                    model = import_file(path, f"kernelopt_times_target{n}").ModelNew(*init).cuda()
                median_ms, rows = _profile(model, inputs, args.calls)
                print(markdown(title, median_ms, rows), flush=True)
            except Exception as err:  # one target's failure is its own line
                first = (str(err).strip().splitlines() or [""])[0][:300]
                print(f"### {title}\n\nfailed: {type(err).__name__}: {first}\n")
            finally:
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
