"""Seconds per verification of a candidate, in one process, for this checkout and another side by side.

    python3 benchmarks/verify_times.py [--before DIR] [--examples swish,softmax] [--times 4]
    python3 benchmarks/verify_times.py --pair tests/data/add/problem.py tests/data/add/kernel_fast.py   # the CPU

Each version runs in a process of its own (DIR: a checkout's folder holding `kernelopt/`, e.g. `git archive REV
kernelopt | tar -x -C DIR`). It makes one Verifier per example and verifies the example's kernel `times` times, each
time checked and timed in full: the first verification also starts the fork server and the reference process; the
later ones are what each candidate of a run costs. Prints a Markdown table; record H200 figures in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _one(problem: Path, kernel: Path, times: int, work: Path) -> dict[str, object]:
    from kernelopt.harness.verify import HarnessSettings, Verifier

    began = time.perf_counter()
    verifier = Verifier(problem, work, HarnessSettings.detect())
    seconds, reasons = [], []
    for _ in range(times):
        start = time.perf_counter()
        verdict = verifier.verify(kernel)
        seconds.append(time.perf_counter() - start)
        reasons.append(verdict.reason if not verdict.accepted else "")
    return {"seconds": seconds, "total": time.perf_counter() - began, "refused": [r for r in reasons if r][:1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another checkout's folder (holding kernelopt/) to compare with")
    parser.add_argument("--examples", default="swish,softmax", help="comma-separated examples/NAME")
    parser.add_argument("--pair", nargs=2, type=Path, metavar=("PROBLEM", "KERNEL"), help="a problem and kernel")
    parser.add_argument("--times", type=int, default=4, help="verifications per example")
    parser.add_argument("--_one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._one:
        problem, kernel, work = (Path(p) for p in args._one)
        print(json.dumps(_one(problem, kernel, args.times, work)))
        return 0
    pairs = [tuple(p.resolve() for p in args.pair)] if args.pair else [
        (ROOT / "examples" / n / "problem.py", ROOT / "examples" / n / "kernel.py") for n in args.examples.split(",")]
    versions = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    print("| version | problem | first verification s | later verifications s (median) | each s |", flush=True)
    print("|---|---|---:|---:|---|", flush=True)
    for problem, kernel in pairs:
        for version, root in versions:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH"))
                                                                if p)}
            with tempfile.TemporaryDirectory(prefix="kernelopt-verify-times-") as work:
                done = subprocess.run([sys.executable, __file__, "--times", str(args.times), "--_one", str(problem),
                                       str(kernel), work], env=env, cwd=work, capture_output=True, text=True,
                                      timeout=900, check=False)
            lines = done.stdout.strip().splitlines()
            if done.returncode or not lines:
                print(f"| {version} | {problem.parent.name} | failed: {(done.stderr or done.stdout)[-300:]!r} |||")
                continue
            r = json.loads(lines[-1])
            s = r["seconds"]
            later = statistics.median(s[1:]) if len(s) > 1 else float("nan")
            note = f" (refused: {r['refused'][0][:120]})" if r["refused"] else ""
            print(f"| {version} | {problem.parent.name}/{kernel.name} | {s[0]:.2f} | {later:.2f} | "
                  f"{', '.join(f'{x:.2f}' for x in s)}{note} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
