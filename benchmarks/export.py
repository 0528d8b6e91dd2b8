"""The exported op against the kernel it came from, on a CUDA host: one Markdown table.

    python3 benchmarks/export.py                      # the examples (softmax, swish, matmul), kernel.py
    python3 benchmarks/export.py RUN_DIR [RUN_DIR ...]  # runs: their best_kernel.py and report.json

Each row exports the kernel, then times the kernel's ModelNew and the exported drop-in Model in
this process with the harness's protocol (CUDA events, L2 flush, median), interleaved twice, and
gives the exported op's time over the kernel's (the issue's bar: at most 1.03) and, for a run,
over the best time its report recorded. Exit status 1 when a ratio to the kernel is above 1.03.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "examples"
LIMIT = 1.03
_namespaces = itertools.count()


def _row(problem: Path, kernel: Path, report: Path | None, work: Path) -> tuple[str, float]:
    import torch

    from kernelopt.export.writer import export_files
    from kernelopt.harness.measure.timing import measure
    from kernelopt.harness.problem import import_file

    namespace = f"bench{next(_namespaces)}"
    module = import_file(export_files(problem, kernel, f"{namespace}::op", work), f"bench_{namespace}")
    device = torch.device("cuda")
    torch.manual_seed(0)
    init = list(module._reference.get_init_inputs())
    with device:
        inputs = list(module._reference.get_inputs())
    reference = module._reference.Model(*init).to(device)
    model = module.Op(*init).to(device)
    model.load_state_dict(reference.state_dict())
    new = module.ModelNew(*init).to(device)
    new.load_state_dict(reference.state_dict())
    kernel_ms, op_ms = [], []
    with torch.no_grad():
        for _ in range(2):
            kernel_ms.append(measure(lambda: new(*inputs), device).median_ms)
            op_ms.append(measure(lambda: model(*inputs), device).median_ms)
    ratio = min(op_ms) / min(kernel_ms)
    best = json.loads(report.read_text()).get("best_time_ms") if report and report.is_file() else None
    vs_run = f"{min(op_ms) / best:.3f}" if best else "-"
    name = problem.parent.name if problem.stem == "problem" else problem.stem
    return (f"| {name} | {'-' if best is None else f'{best:.4f}'} | {min(kernel_ms):.4f} | {min(op_ms):.4f} "
            f"| {ratio:.3f} | {vs_run} |"), ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="run directories (default: the examples)")
    args = parser.parse_args()
    pairs: list[tuple[Path, Path, Path | None]] = [
        (Path(r) / "problem.py", Path(r) / "best_kernel.py", Path(r) / "report.json") for r in args.runs]
    pairs = pairs or [(EXAMPLES / name / "problem.py", EXAMPLES / name / "kernel.py", None)
                      for name in ("softmax", "swish", "matmul")]
    print("| problem | run's best (ms) | kernel now (ms) | exported op (ms) | op / kernel | op / run's best |")
    print("|---|---:|---:|---:|---:|---:|")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="kernelopt-export-bench-") as work:
        for problem, kernel, report in pairs:
            line, ratio = _row(problem, kernel, report, Path(work))
            print(line, flush=True)
            worst = max(worst, ratio)
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
