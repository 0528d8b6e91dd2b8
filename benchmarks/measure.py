"""Benchmarks of kernelopt's measurements, run on a CUDA host; each prints a Markdown table.

    python3 benchmarks/measure.py agreement   # (a) our median vs NCU's gpu__time_duration
    python3 benchmarks/measure.py stability   # (b) one kernel timed in 5 separate processes
    python3 benchmarks/measure.py overhead    # (c) seconds per round outside the LLM, by stage
    python3 benchmarks/measure.py baselines   # (d) eager, compile, starting kernel, floor efficiency
    python3 benchmarks/measure.py harness [--before DIR] [--examples swish,softmax] [--rounds 3]
                                              # (e) seconds per stage of an offline run, `kernelopt verify`,
                                              #     run-dir size and peak host memory; with --before, the
                                              #     same for another checkout of kernelopt, side by side
    python3 benchmarks/measure.py memory      # (f) host memory of `kernelopt verify` at GPU and small sizes
    python3 benchmarks/measure.py all

Results from the H200 are recorded in benchmarks/RESULTS.md with the command that made them.
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
from typing import Any

from host import PeakMemory, dir_mb, memory, table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NAMES = ("softmax", "swish", "matmul")
# `harness --before DIR` runs this file again with KERNELOPT_BENCH_ROOT=DIR: that checkout's package.
CODE_ROOT = Path(os.environ.get("KERNELOPT_BENCH_ROOT", ROOT)).resolve()
sys.path.insert(0, str(CODE_ROOT))


def _verifier(name: str, work: Path, **settings: Any) -> Any:
    from kernelopt.harness.verify import HarnessSettings, Verifier

    return Verifier(EXAMPLES / name / "problem.py", work, HarnessSettings.detect(**settings))


def agreement(work: Path) -> str:
    """(a) The harness's median against NCU's summed gpu__time_duration for one forward call."""
    from kernelopt.hardware import ncu_runner
    from kernelopt.harness.sandbox.runner import worker_env

    rows = []
    for name in NAMES:
        verifier = _verifier(name, work / name, seeds=1, time_compile=False)
        verdict = verifier.verify(EXAMPLES / name / "kernel.py")
        request = verifier.request("profile", kernel_path=str(EXAMPLES / name / "kernel.py"), work_dir=str(work / name))
        (work / name / "profile.json").write_text(json.dumps(request))
        profile = ncu_runner.run_ncu(
            [sys.executable, "-m", "kernelopt.harness.sandbox.worker", str(work / name / "profile.json")],
            env=worker_env(use_cuda=True),
            timeout_s=300,
            workdir=str(work / name),
        )
        ours_ms = verdict.timing.median_ms if verdict.timing else float("nan")
        ncu_ms = profile.total_time_ns / 1e6 if profile.ok else float("nan")
        diff_pct = (ours_ms - ncu_ms) / ncu_ms * 100 if profile.ok else float("nan")
        status = "" if profile.ok else profile.error
        if not verdict.accepted:
            status = f"rejected: {verdict.reason}"
        rows.append(
            [name, len(profile.kernels), ours_ms, ncu_ms, diff_pct, ncu_ms > 0.05 and abs(diff_pct) <= 5, status]
        )
    return "### (a) agreement with NCU\n\n" + table(
        ["example", "kernels", "our median ms", "NCU gpu__time_duration ms", "diff %", "within 5% (>50 us)", "note"],
        rows,
    )


def stability(work: Path, processes: int = 5) -> str:
    """(b) The same kernel timed in separate processes: spread of the medians."""
    rows = []
    for name in ("swish",):
        medians = []
        for i in range(processes):
            verdict = _verifier(name, work / f"{name}-{i}", seeds=1, time_compile=False).verify(
                EXAMPLES / name / "kernel.py"
            )
            assert verdict.timing is not None, verdict.reason
            medians.append(verdict.timing.median_ms)
        spread = (max(medians) - min(medians)) / statistics.median(medians) * 100
        rows.append([name, processes, " ".join(f"{m:.4f}" for m in medians), spread, spread < 2.0])
    return "### (b) stability across processes\n\n" + table(
        ["example", "processes", "medians ms", "spread (max-min)/median %", "under 2%"], rows
    )


def overhead(work: Path, rounds: int = 2) -> str:
    """(c) Wall seconds per graph node in an offline run (no LLM), by stage."""
    from kernelopt.context import Context
    from kernelopt.graph import build_graph

    rows = []
    for name in ("softmax",):
        graph = build_graph().compile()
        ctx = Context(max_rounds=rounds, patience=rounds + 1, runs_dir=str(work / "runs"))
        inputs = {
            "problem_source": (EXAMPLES / name / "problem.py").read_text(),
            "kernel_source": (EXAMPLES / name / "kernel.py").read_text(),
        }
        seconds: dict[str, list[float]] = {}
        last = time.perf_counter()
        for update in graph.stream(inputs, context=ctx, stream_mode="updates"):
            now = time.perf_counter()
            for node in update:
                seconds.setdefault(node, []).append(now - last)
            last = now
        for node, values in seconds.items():
            rows.append([name, node, len(values), sum(values) / len(values), sum(values)])
    return f"### (c) overhead per stage ({rounds} offline rounds)\n\n" + table(
        ["example", "stage", "calls", "mean s per call", "total s"], rows
    )


def baselines(work: Path) -> str:
    """(d) Eager, torch.compile and the starting kernel, with floor efficiency."""
    from kernelopt.harness import floor_ms_for
    from kernelopt.harness.measure.ceilings import load_or_measure_ceilings
    from kernelopt.records import least_time_ms

    ceilings = load_or_measure_ceilings()
    rows = []
    for name in NAMES:
        verifier = _verifier(name, work / name, seeds=1)
        base = verifier.baselines()
        verdict = verifier.verify(EXAMPLES / name / "kernel.py")
        floor = base.floor
        assert floor is not None
        datasheet_floor_ms = floor_ms_for(floor, None) or float("nan")
        measured_floor_ms = float("nan")
        if ceilings:
            peak = ceilings.peak_tflops.get(floor.dtype) or ceilings.peak_tflops["fp32"]
            measured_floor_ms = least_time_ms(floor, ceilings.bandwidth_gbs, peak)
        eager = base.eager.median_ms if base.eager else float("nan")
        compiled = base.compile.median_ms if base.compile else float("nan")
        kernel = verdict.timing.median_ms if verdict.timing else float("nan")
        rows.append(
            [
                name,
                floor.dtype,
                floor.min_bytes / 1e6,
                floor.flops / 1e9,
                measured_floor_ms,
                eager,
                compiled,
                kernel,
                measured_floor_ms / eager * 100,
                measured_floor_ms / compiled * 100,
                measured_floor_ms / kernel * 100,
                datasheet_floor_ms,
            ]
        )
    note = f"measured ceilings: {json.dumps(ceilings.__dict__) if ceilings else 'none'}"
    return (
        "### (d) baselines and floor efficiency\n\n"
        + note
        + "\n\n"
        + table(
            [
                "example",
                "dtype",
                "min MB",
                "GFLOP",
                "floor ms (measured ceilings)",
                "eager ms",
                "compile ms",
                "start kernel ms",
                "eager eff %",
                "compile eff %",
                "kernel eff %",
                "floor ms (datasheet)",
            ],
            rows,
        )
    )


def harness_one(name: str, rounds: int, work: Path) -> dict[str, Any]:
    """One offline run of an example through the graph, timed per node, in this process."""
    from kernelopt.context import Context
    from kernelopt.graph import build_graph

    memory = PeakMemory()
    graph = build_graph().compile()
    ctx = Context(max_rounds=rounds, patience=rounds + 1, runs_dir=str(work / "runs"))
    inputs = {
        "problem_source": (EXAMPLES / name / "problem.py").read_text(),
        "kernel_source": (EXAMPLES / name / "kernel.py").read_text(),
    }
    seconds: dict[str, list[float]] = {}
    began = last = time.perf_counter()
    final: dict[str, Any] = {}
    for update in graph.stream(inputs, context=ctx, stream_mode="updates"):
        now = time.perf_counter()
        for node, values in update.items():
            seconds.setdefault(node, []).append(now - last)
            final.update(values or {})
        last = now
    best = final.get("best")
    # A round: judge, optimize, verify the candidate, profile a new best (the first verification
    # and the first profile, of the starting kernel, belong to setting up).
    rounds_run = max(len(seconds.get("judger", [])), 1)
    looped = sum(sum(seconds.get(n, [])) for n in ("judger", "optimizer")) + sum(
        seconds.get("verifier", [])[1:]
    ) + sum(seconds.get("profile", [])[1:])
    return {
        "example": name,
        "total_s": time.perf_counter() - began,
        "seconds": seconds,
        "round_s": looped / rounds_run,
        "best_ms": best.timing.median_ms if best else None,
        "clock": best.timing.clock if best else None,
        "stop": final.get("stop_reason"),
        "run_dir_mb": dir_mb(work / "runs"),
        "peak_rss_gb": memory.stop(),
    }


def _verify_cli_s(name: str, work: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", "verify", str(EXAMPLES / name / "problem.py"),
         str(EXAMPLES / name / "kernel.py"), "--json"],
        cwd=work, env=env, capture_output=True, timeout=600, check=False,
    )
    return time.perf_counter() - began


def harness(
    work: Path,
    before: Path | None = None,
    examples: tuple[str, ...] = NAMES,
    rounds: int = 3,
    before_examples: tuple[str, ...] = ("swish",),
) -> str:
    """(e) The harness's cost: an offline run per example (seconds per stage), `kernelopt verify`,
    the run directory's size and the peak host memory; for another checkout too, with --before
    (on `before_examples` only: the old harness is slow)."""
    versions = [("after", ROOT, examples)]
    if before:
        versions.append(("before", before.resolve(), before_examples))
    columns = ["version", "example", "setup s", "verify s (median)", "verifies", "NCU profile s (median)",
               "round s (mean)", "`kernelopt verify` s", "run dir MB", "peak RSS GiB", "best ms", "clock, stop, total"]
    header = f"### (e) harness cost per stage ({rounds} offline rounds)\n\n"
    lines = table(columns, []).splitlines()[:2]
    print(header + "\n".join(lines), flush=True)  # rows follow as they are measured: a cut-off run keeps them

    def add(row: list[Any]) -> None:
        lines.append(table(columns, [row]).splitlines()[-1])
        print(lines[-1], flush=True)

    for version, root, names in versions:
        env = {**os.environ, "KERNELOPT_BENCH_ROOT": str(root), "PYTHONPATH": os.pathsep.join(
            p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
        for name in names:
            folder = work / version / name
            folder.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(
                [sys.executable, __file__, "_harness_one", name, "--rounds", str(rounds), "--out", str(folder)],
                env=env, capture_output=True, text=True, timeout=1800, check=False,
            )
            printed = done.stdout.strip().splitlines()
            if done.returncode != 0 or not printed:
                add([version, name] + ["-"] * 9 + [f"failed: {(done.stderr or done.stdout)[-300:]!r}"])
                continue
            r = json.loads(printed[-1])
            verify = r["seconds"].get("verifier", [])
            profile = r["seconds"].get("profile", [])
            add([
                version, name, r["seconds"].get("setup", [float("nan")])[0],
                statistics.median(verify) if verify else float("nan"), len(verify),
                statistics.median(profile) if profile else float("nan"),
                r["round_s"],
                _verify_cli_s(name, folder, env), r["run_dir_mb"], r["peak_rss_gb"],
                r["best_ms"] or float("nan"), f"{r['clock']}, {r['stop']}, {r['total_s']:.0f} s",
            ])
    return header + "\n".join(lines)


BENCHMARKS = {"agreement": agreement, "stability": stability, "overhead": overhead, "baselines": baselines,
              "harness": harness, "memory": memory}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", choices=[*BENCHMARKS, "all", "_harness_one"])
    parser.add_argument("example", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="also append the tables to this Markdown file")
    parser.add_argument("--before", type=Path, help="harness: another checkout of kernelopt to compare with")
    parser.add_argument("--examples", default=",".join(NAMES), help="harness: comma-separated examples")
    parser.add_argument("--before-examples", default="swish", help="harness: examples run with --before")
    parser.add_argument("--rounds", type=int, default=3, help="harness: offline rounds per run")
    args = parser.parse_args()
    if args.which == "_harness_one":
        print(json.dumps(harness_one(args.example, args.rounds, Path(args.out))))
        return 0
    import torch

    if args.which == "harness":
        with tempfile.TemporaryDirectory(prefix="kernelopt-bench-") as tmp:
            text = harness(
                Path(tmp), args.before, tuple(args.examples.split(",")), args.rounds,
                tuple(args.before_examples.split(",")),
            )
        if args.out:
            with open(args.out, "a") as out:
                out.write(text + "\n")
        return 0
    if not torch.cuda.is_available():
        print("benchmarks need a CUDA GPU; run them on a CUDA host", file=sys.stderr)
        return 2
    names = list(BENCHMARKS) if args.which == "all" else [args.which]
    with tempfile.TemporaryDirectory(prefix="kernelopt-bench-") as tmp:
        for name in names:
            began = time.perf_counter()
            text = BENCHMARKS[name](Path(tmp) / name)
            text += f"\n\n({torch.cuda.get_device_name()}, {time.perf_counter() - began:.0f} s)\n"
            print(text, flush=True)
            if args.out:
                with open(args.out, "a") as out:
                    out.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
