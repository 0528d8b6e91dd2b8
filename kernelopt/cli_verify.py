"""`kernelopt verify` for the command line: one kernel checked and timed, saying as it goes what it
is doing, and keeping the logs its verdict names. Heavy imports stay inside the functions."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelopt.harness.problem import check_kernel_source, checked_sources, read_source
from kernelopt.records import HarnessError, InputError


def prewarm() -> None:
    """The fork server starts now, its imports beside this process's own (see runner.prewarm)."""
    from kernelopt.harness import prewarm as start_fork_server

    start_fork_server()


def limit_settings(args: argparse.Namespace) -> dict[str, float]:
    """The per-candidate limits given on the command line (the rest keep their defaults)."""
    given = {"timeout_s": args.timeout_s, "mem_limit_gb": args.mem_limit_gb}
    return {name: value for name, value in given.items() if value is not None}


def verify_command(args: argparse.Namespace) -> int:
    """`kernelopt verify`: exit 0 when the kernel is accepted, 1 when rejected, 2 on bad input."""
    checked_sources(read_source(args.problem, "problem"), None, Path(args.problem).name)
    # a kernel that cannot be read, does not parse or has no ModelNew is bad input (exit 2), as in
    # optimize; one that runs and is wrong is a rejection (exit 1)
    check_kernel_source(read_source(args.kernel, "kernel"), Path(args.kernel).name)
    prewarm()
    from kernelopt.harness import floor_ms_for
    from kernelopt.harness.verify import HarnessSettings, Verifier
    from kernelopt.report.figures import baseline_text, figures
    from kernelopt.runs import compile_cache_root

    settings = HarnessSettings.detect(time_compile=args.compile, max_autotune=args.max_autotune_baseline,
                                      compile_cache_dir=compile_cache_root(),
                                      max_autotune_limit_s=args.max_autotune_limit_s, **limit_settings(args))
    say = _Say(quiet=args.json)
    say.warn_if_slow(args.problem, settings.use_cuda)
    with tempfile.TemporaryDirectory(prefix="kernelopt-verify-") as work:
        try:
            verifier = Verifier(args.problem, work, settings)
            say.line("building the reference's cases and timing the baselines")
            baselines = verifier.baselines()
            say.line(f"verifying {Path(args.kernel).name}")
            floor_ms = floor_ms_for(baselines.floor, None)
            verdict = verifier.verify(args.kernel, floor_ms=floor_ms, on_progress=say.progress)
        except (InputError, HarnessError) as err:
            raise type(err)(_logs_kept(str(err), Path(work))) from None
        log_path = _logs_kept(verdict.log_path, Path(work)) if verdict.log_path and not verdict.accepted else None
        verdict = dataclasses.replace(verdict, reason=_logs_kept(verdict.reason, Path(work)), log_path=log_path)
    result: dict[str, Any] = {
        "accepted": verdict.accepted, "reason": verdict.reason, "rule": verdict.rule,
        "time_ms": verdict.timing.median_ms if verdict.timing else None,
        "timing": dataclasses.asdict(verdict.timing) if verdict.timing else None,
        "eager_ms": baselines.eager.median_ms if baselines.eager else None,
        "compile_ms": baselines.compile.median_ms if baselines.compile else None,
        "is_gpu_time": bool(verdict.timing and verdict.timing.is_gpu_time),
        "log_path": verdict.log_path,  # a rejected kernel's worker log, kept
    }
    result.update(figures(baselines, result["time_ms"], floor_ms, result["is_gpu_time"]))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(("ACCEPTED: " if verdict.accepted else f"REJECTED [{verdict.rule}]: ") + verdict.reason)
        if verdict.log_path:
            print(f"log: {verdict.log_path}")
        print(baseline_text(result))
    return 0 if verdict.accepted else 1


class _Say:
    """What `verify` says on stderr while it works (nothing with --json): its stages, and every few
    seconds of a long verification where it is ("case 3/7, 80 s")."""

    EVERY_S = 10.0

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.next_s = self.EVERY_S

    def line(self, text: str) -> None:
        if not self.quiet:
            print(f"kernelopt: {text}", file=sys.stderr, flush=True)

    def progress(self, phase: str, elapsed_s: float) -> None:
        if elapsed_s >= self.next_s:
            self.next_s = elapsed_s + self.EVERY_S
            self.line(f"  still verifying: {phase}, {elapsed_s:.0f} s")

    def warn_if_slow(self, problem: str, use_cuda: bool) -> None:
        """Say up front when a problem sized for a GPU is about to run under Triton's interpreter."""
        if use_cuda:
            return
        from kernelopt.harness import input_bytes
        from kernelopt.harness.problem import load_problem

        given = input_bytes(load_problem(problem), {"seed": 0})
        if given is not None and given > INTERPRETER_WARN_BYTES:
            self.line(
                f"warning: {Path(problem).name}'s inputs take {given / 2**20:.0f} MiB and no CUDA GPU is here: under "
                "Triton's interpreter every case runs element by element on the CPU and can take many minutes. "
                "Run it on a CUDA host, or copy the problem with smaller module-level sizes"
            )


# Inputs above this make a verification under the interpreter slow enough to warn of.
INTERPRETER_WARN_BYTES = 64 << 20


def _logs_kept(text: str, work: Path) -> str:
    """`text` with every log it names inside the temporary work folder (deleted next) copied to the
    runs folder's verify-logs/ and named there instead, so that a path said is a path that exists."""
    from kernelopt.runs import default_runs_dir

    def keep(match: re.Match[str]) -> str:
        log = Path(match.group(0))
        if not log.is_file():
            return match.group(0)
        kept = default_runs_dir() / "verify-logs" / f"{time.strftime('%Y%m%d-%H%M%S')}-{log.parent.name}-{log.name}"
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, kept)
        return str(kept)

    return re.sub(re.escape(str(work)) + r"/[^\s;:()]+\.log", keep, text)
