"""Where a roofline profile's wall time goes, on the GPU (the profile node takes 8-10 s a round in
the suite): the profiled program alone, under ncu with one metric (one pass: ncu's fixed cost),
and under ncu with kernelopt's metric list (every pass), for a few KernelBench problems.

    python3 benchmarks/h200/probe_ncu.py [NAME ...]   # NAME: of benchmarks/kernelbench/problems/*.py, or PROBLEM:KERNEL

Prints one line per problem and run; the ncu lines end with what ncu said of its passes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelopt.hardware import ncu
from kernelopt.hardware.ncu_runner import find_ncu
from kernelopt.hardware.specs import detect_gpu_spec
from kernelopt.harness.sandbox.runner import worker_env
from kernelopt.harness.verify import HarnessSettings, Verifier

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "kernelbench"
DEFAULT = ("19_ReLU", "23_Softmax", "45_Average_Pooling_2D", "1_Square_matrix_multiplication_")


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    began = time.monotonic()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    passes = sorted(set(re.findall(r"(\d+) pass", proc.stdout + proc.stderr)))
    stages = "; ".join(line.strip() for line in proc.stdout.splitlines() if re.match(r"\[\s*[\d.]+ s\]", line))
    note = f"rc {proc.returncode}, passes {','.join(passes) or '-'}" + (f"; {stages}" if stages else "")
    if proc.returncode:
        note += " | " + (proc.stderr or proc.stdout).strip().splitlines()[-1][:200]
    return time.monotonic() - began, note


def main(names: list[str]) -> None:
    spec = detect_gpu_spec()
    metrics = ncu.default_metrics(spec.compute_capability if spec else None)
    tool = find_ncu()
    base = [tool, "--clock-control", "none", "--target-processes", "all", "--profile-from-start", "off"]
    for name in names:
        work = Path(tempfile.mkdtemp(prefix="probe-"))
        problem, kernel = (name.split(":") if ":" in name
                           else (ROOT / "problems" / f"{name}.py", ROOT / "kernels" / f"{name}.py"))
        verifier = Verifier(problem, work / "harness", HarnessSettings.detect())
        request = work / "request.json"
        worker = [sys.executable, "-m", "kernelopt.harness.sandbox.worker", str(request)]
        env = worker_env(spec is not None, None)
        runs = (
            ("alone", worker),
            ("ncu, 1 metric", [*base, "--metrics", ncu.GPU_TIME, *worker]),
            (f"ncu, {len(metrics)} metrics", [*base, "--metrics", ",".join(metrics), *worker]),
            (f"ncu, {len(metrics)} metrics, no cache flush", [*base, "--cache-control", "none", "--metrics",
                                                            ",".join(metrics), *worker]),
        )
        for label, argv in runs if tool else runs[:1]:
            # the worker deletes its request before it imports the kernel: one for each run
            request.write_text(json.dumps(verifier.profile_request(kernel, work)))
            seconds, note = timed([str(a) for a in argv], env, work)
            print(f"{name}: {label}: {seconds:.1f} s ({note})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT))
