"""A finished suite's % of the floor again, at the roof the code holds now (no GPU needed).

Each problem's floor is its counted bytes and FLOPs at the datasheet's ceilings. When the roof changes (as
the fp32 one did: a third of fp16's peak, not TF32's), a suite run before the change still holds the old
floors. This reads each run's counts back from its report.md ("Floor (dtype): B bytes moved at least, F
FLOPs"), recomputes the floor and every figure made from it, and writes results.json / .md / .png again.
Times, speedups and verdicts are as measured; only the floor and the % of it change. Rows whose floor moved
are printed.

    python benchmarks/refloor.py SUITE_OUT_DIR [GPU_KEY]     # GPU_KEY: H200 unless given
"""
from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

from kernelopt.harness import floor_ms_for
from kernelopt.records import FloorEstimate
from kernelopt.suite import PROBLEMS, ProblemResult, _measured, _write_json, finished_results, read_suite, write_results

_FLOOR = re.compile(r"^- Floor \((\w+)\): ([\d,]+) bytes moved at least, ([\d,]+) FLOPs", re.M)


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    gpu = sys.argv[2] if len(sys.argv) > 2 else "H200"
    suite = read_suite(out)
    suite = dataclasses.replace(suite, out_dir=str(out))
    done = finished_results(suite)
    for name, result in sorted(done.items()):
        report = out / "runs" / name / "report.md"
        found = _FLOOR.search(report.read_text()) if report.is_file() else None
        if not found or not result.is_gpu_time:
            continue
        nbytes, flops = (int(found.group(i).replace(",", "")) for i in (2, 3))
        floor_ms = floor_ms_for(FloorEstimate(min_bytes=nbytes, flops=float(flops), dtype=found.group(1)), gpu)
        again: ProblemResult = _measured(result, result.eager_ms, result.compile_ms, floor_ms)
        if result.floor_ms and floor_ms and abs(floor_ms / result.floor_ms - 1) > 1e-6:
            print(f"{name}: floor {result.floor_ms:.4f} -> {floor_ms:.4f} ms, {result.pct_of_floor:.1f}% -> "
                  f"{again.pct_of_floor:.1f}% of the floor")
        _write_json(out / PROBLEMS / f"{name}.json", dataclasses.asdict(again))
        done[name] = again
    data = write_results(suite, suite.specs(), done, plot=True)
    print(json.dumps({k: v for k, v in data["summary"].items() if "geomean" in k or k == "correct"}, indent=1))


if __name__ == "__main__":
    main()
