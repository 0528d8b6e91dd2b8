"""`kernelopt suite` for the command line: a folder of problems run (or a stopped suite continued), a line a
problem as each finishes, and the summary. Heavy imports stay inside the function."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from kernelopt.cli_run import interrupt, out_dir, stop_jobs
from kernelopt.context import Context
from kernelopt.records import InputError
from kernelopt.scale.choose import check_placement, choose_executor, describe, timing_device


def suite_command(args: argparse.Namespace) -> int:
    """Run a suite (or the rest of a stopped one); exit 0 when every problem is correct, else 1."""
    from kernelopt import suite as suites
    from kernelopt.report.suite import progress_line, summary_text

    check_placement(args.gpus, args.workers, args.ray)
    if args.resume:
        given = [flag for flag, value in (
            ("PROBLEMS_DIR", args.problems_dir), ("--kernels", args.kernels), ("--optimize", args.optimize),
            ("--model", args.model), ("--base-url", args.base_url), ("--max-rounds", args.max_rounds),
            ("--no-compile", args.no_compile), ("--no-max-autotune", args.no_max_autotune),
            ("--max-autotune-limit-s", args.max_autotune_limit_s != Context.max_autotune_limit_s),
            ("--no-compiler-seed", args.no_compiler_seed), ("--max-wall-s", args.max_wall_s),
            ("--out", args.out), ("--timeout-s", args.timeout_s),
            ("--mem-limit-gb", args.mem_limit_gb)) if value]
        if given:
            raise InputError(f"--resume runs the suite as it was started (its {suites.SUITE_FILE}); "
                             f"drop {', '.join(given)}")
        suite = suites.read_suite(args.resume, timing_device(args.gpus, args.ray))
    else:
        if not args.problems_dir:
            raise InputError("name the folder of problems, or continue a stopped suite with --resume OUT")
        settings = suites.SuiteSettings(
            optimize=args.optimize, max_rounds=args.max_rounds or Context.max_rounds, model=args.model,
            base_url=args.base_url, time_compile=not args.no_compile, timeout_s=args.timeout_s,
            max_autotune=not (args.no_compile or args.no_max_autotune), max_autotune_limit_s=args.max_autotune_limit_s,
            mem_limit_gb=args.mem_limit_gb, compiler_seed=not args.no_compiler_seed, max_wall_s=args.max_wall_s,
        )
        if args.out and (Path(args.out) / suites.SUITE_FILE).exists():
            raise InputError(f"{args.out} already holds a suite; continue it with `kernelopt suite --resume "
                             f"{args.out}` or pass another --out")
        suites.problem_files(args.problems_dir)  # the folders are checked before --out is made
        if args.model:
            from kernelopt.llm import make_chat_model

            make_chat_model(Context(model=args.model, base_url=args.base_url))  # a missing key is bad input
        suite = suites.new_suite(args.problems_dir, args.kernels, settings, out_dir(args.out) if args.out else None,
                                 timing_device(args.gpus, args.ray))
    executor = choose_executor(args.gpus, args.workers, args.ray, Path(suite.out_dir),
                               lambda line: print(f"kernelopt: {line}", file=sys.stderr, flush=True))
    if not args.json:
        finished = len(suites.finished_results(suite))
        print(f"suite: {len(suite.specs())} problems{f', {finished} already finished' if finished else ''}; "
              f"results in {suite.out_dir}", flush=True)
        if placed := describe(executor):
            print(placed, flush=True)

    def show(done: int, total: int, result: suites.ProblemResult) -> None:
        print(progress_line(done, total, result), flush=True)

    signal.signal(signal.SIGINT, interrupt)
    try:
        data = suites.run_suite(suite, executor, on_result=None if args.json else show)
    except KeyboardInterrupt:
        stop_jobs()
        print(f"kernelopt: interrupted; continue with: kernelopt suite --resume {suite.out_dir}", file=sys.stderr)
        return 130
    summary = data["summary"]
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(summary_text(summary, Path(suite.out_dir)))
    return 0 if summary["correct"] == summary["problems"] else 1
