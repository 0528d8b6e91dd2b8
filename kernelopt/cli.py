"""The `kernelopt` command: optimize a kernel, resume a run, re-render its report, or verify one kernel (cli_verify.py),
run a suite (cli_suite.py), export a kernel, read the knowledge store.

Every argument is checked before torch or LangGraph load: a usage error costs a fraction of a
second and is one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from kernelopt.checkpoint import RUN_FILE, check_db_url, read_run_record
from kernelopt.cli_knowledge import add_knowledge_parser, knowledge_command
from kernelopt.cli_run import exit_now, out_dir, run_graph_to_end, stop_jobs
from kernelopt.cli_suite import suite_command
from kernelopt.cli_verify import limit_settings, prewarm, verify_command
from kernelopt.context import Context
from kernelopt.export.command import add_export_parser, export_command
from kernelopt.hardware.specs import UnknownGPUError, get_gpu_spec
from kernelopt.harness.problem import checked_sources, read_source
from kernelopt.model_specs import MODEL_HELP, model_arg, model_settings
from kernelopt.records import HarnessError, InputError
from kernelopt.scale.choose import RAY_INSTALL, gpu_list

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors as one line: what was wrong, and where the help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"kernelopt: {message} (see `{self.prog} --help`)\n")


def _number(kind: Callable[[str], Any], least: float, strict: bool) -> Callable[[str], Any]:
    """An argparse type: a number of `kind` above `least` (or at least `least`)."""
    words = f"{'a number above' if strict else 'at least'} {least:g}"

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole ' if kind is int else ''}number") from None
        if value < least or (strict and value == least):
            raise argparse.ArgumentTypeError(f"{text} is too small: give {words}")
        return value

    return parse


COUNT = _number(int, 1, strict=False)  # rounds, candidates, patience
TOKENS = _number(int, 0, strict=True)
REPAIRS = _number(int, 0, strict=False)
SECONDS = _number(float, 0, strict=True)
GIB = _number(float, 0, strict=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"kernelopt {version('kernelopt')}"
    except PackageNotFoundError:
        return "kernelopt (not installed)"


def _limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout-s", type=SECONDS,
                        help="time limit of one candidate, seconds (a hanging kernel is stopped then)")
    parser.add_argument("--mem-limit-gb", type=GIB, help=f"host memory cap of one candidate, GiB "
                                                         f"(default {Context.mem_limit_gb:g})")


def _max_autotune(parser: argparse.ArgumentParser, default_on: bool) -> None:
    flag, words = ("--no-max-autotune", "skip") if default_on else ("--max-autotune-baseline", "also time")
    parser.add_argument(flag, action="store_true", help=f'{words} torch.compile(mode="max-autotune"), the strongest '
                        "compiler baseline (compiled once per problem: Inductor's caches stay in the runs folder)")
    parser.add_argument("--max-autotune-limit-s", type=SECONDS, default=Context.max_autotune_limit_s,
                        help="time limit of the max-autotune compile; past it that baseline is marked and skipped")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kernelopt", description="Make Triton kernels fast, to the roofline.",
        epilog="exit status: 0 done (a best kernel; an accepted kernel; every suite problem correct), "
               "1 a negative verdict (kernel rejected, no correct kernel, a suite problem wrong, the model "
               "unreachable mid-run), 2 bad input (arguments, files, a problem that does not run), "
               "3 waiting for an --approve answer, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", required=True)
    opt = commands.add_parser("optimize", help="run the judge-optimize-verify loop on a problem")
    opt.add_argument("problem", help="KernelBench problem file (Model, get_inputs, get_init_inputs)")
    opt.add_argument("--kernel", help="starting kernel file (ModelNew); without it the LLM writes one")
    opt.add_argument("--model", action="append", type=model_arg, metavar="NAME[@URL]", help=MODEL_HELP)
    opt.add_argument("--base-url", help="OpenAI-compatible endpoint (vLLM, Ollama, ...) of the models without @URL")
    opt.add_argument("--max-rounds", type=COUNT, default=Context.max_rounds,
                     help=f"most judge-optimize-verify rounds (default {Context.max_rounds})")
    opt.add_argument("--patience", type=COUNT, default=Context.patience,
                     help=f"stop after this many rounds in a row without a new best (default {Context.patience})")
    opt.add_argument("--gpu", help="target GPU key or name (default: the GPU present; without one the prompts "
                                   "aim at H200 and the report draws no GPU roof)")
    opt.add_argument("--out", help="run directory (default: a new folder under $KERNELOPT_RUNS_DIR, "
                                   "else ~/.cache/kernelopt/runs)")
    opt.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    _max_autotune(opt, default_on=False)
    opt.add_argument("--no-profile", action="store_true", help="skip Nsight Compute profiling")
    opt.add_argument("--no-compiler-seed", action="store_true",
                     help="do not start from (or race against) the Triton kernels torch.compile writes")
    opt.add_argument("--max-repairs", type=REPAIRS, default=Context.max_repairs, help="repairs of a round's failed "
                     f"candidate before the next idea (default {Context.max_repairs}; 0: none)")
    opt.add_argument("--candidates", type=COUNT, default=Context.candidates_per_round,
                     help="candidates written per round (LLM calls concurrent; verified side by side, one per GPU)")
    opt.add_argument("--beam", type=COUNT, default=Context.beam, metavar="K", help="keep the K best distinct "
                     "kernels as parents of each round's candidates (default 1: a chain; LLM runs only)")
    opt.add_argument("--gpus", type=gpu_list, help="GPUs that verify a round's candidates side by side, e.g. 0,1; "
                                                   "the first times the best (default: every visible GPU)")
    opt.add_argument("--sweep-configs", type=COUNT, help="offline: configurations measured per round before the "
                     "best two are verified (default: 48 on a GPU, 6 under the interpreter)")
    opt.add_argument("--max-tokens", type=TOKENS, help="stop when the LLM calls have used this many tokens")
    opt.add_argument("--max-wall-s", type=SECONDS, help="stop when the run has taken this many seconds")
    opt.add_argument("--llm-timeout-s", type=SECONDS, default=Context.llm_timeout_s, help="timeout of one LLM call")
    _limits(opt)
    opt.add_argument("--approve", action="store_true",
                     help="ask before each rewrite is tried (approve / reject / edit) and before a new best is "
                          "taken; answers come from the terminal, or line by line from a piped stdin")
    opt.add_argument("--db", help=DB_HELP)
    opt.add_argument("--no-knowledge", action="store_true", help="leave the knowledge base's patterns and earlier "
                     "gains out of the prompts, and record no gain of this run")
    opt.add_argument("--json", action="store_true", help="print one JSON object at the end, no progress")
    res = commands.add_parser("resume", help="continue a stopped or killed run from its last checkpoint")
    res.add_argument("run_dir", help="the run directory (it holds run.json)")
    res.add_argument("--db", help="PostgreSQL URL of the run's checkpoints (default: the one in run.json)")
    res.add_argument("--json", action="store_true", help="print one JSON object at the end, no progress")
    _limits(res)  # a run stopped on a hanging kernel can go on with a shorter limit
    res.add_argument("--model", action="append", type=model_arg, metavar="NAME[@URL]", help="the chat models from "
                     "here on, as for optimize (a run stopped as llm_unavailable goes on from before the failed call)")
    res.add_argument("--base-url", help="the model's endpoint from here on (to correct a typo, say)")
    rep = commands.add_parser("report", help="re-render report.md and roofline.png of a run")
    rep.add_argument("run_dir", help="the run directory (it holds report.json or run.json)")
    rep.add_argument("--db", help="PostgreSQL URL of the run's checkpoints (default: the one in run.json)")
    ver = commands.add_parser("verify", help="check one kernel against its problem and time it")
    ver.add_argument("problem")
    ver.add_argument("kernel")
    ver.add_argument("--compile", action="store_true", help="also time torch.compile (default mode) as a baseline")
    _max_autotune(ver, default_on=False)
    ver.add_argument("--json", action="store_true", help="print one JSON object")
    _limits(ver)
    sui = commands.add_parser("suite", help="verify (or optimize) every problem of a folder: a table, a plot, fast_p")
    sui.add_argument("problems_dir", nargs="?", help="folder of KernelBench problem files")
    sui.add_argument("--kernels", help="folder of kernels named as the problems (problems/19_ReLU.py -> "
                                       "KERNELS/19_ReLU.py); a problem without one is reported, not fatal")
    sui.add_argument("--optimize", action="store_true", help="optimize each kernel (default: verify and time it)")
    sui.add_argument("--model", help="--optimize: chat model name; without it the offline policy runs")
    sui.add_argument("--base-url", help="OpenAI-compatible endpoint (vLLM, Ollama, ...)")
    sui.add_argument("--max-rounds", type=COUNT, help=f"--optimize: rounds per problem (default {Context.max_rounds})")
    sui.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines (both modes)")
    _max_autotune(sui, default_on=True)
    sui.add_argument("--no-compiler-seed", action="store_true",
                     help="--optimize: do not start from (or race against) the Triton torch.compile writes")
    sui.add_argument("--max-wall-s", type=SECONDS, help="--optimize: each problem stops (time_budget) at the end "
                                                        "of the round that passes this many seconds")
    sui.add_argument("--out", help="results folder (default: a new folder under $KERNELOPT_RUNS_DIR, "
                                   "else ~/.cache/kernelopt/runs)")
    sui.add_argument("--resume", metavar="OUT", help="continue a stopped suite; finished problems are not redone")
    sui.add_argument("--json", action="store_true", help="print results.json at the end, no progress")
    _limits(sui)
    sui.add_argument("--gpus", type=gpu_list, help="run on these GPUs of this host, one worker each, every problem "
                                                   "to whichever is free, e.g. 0,1 (default: every visible GPU)")
    sui.add_argument("--workers", type=COUNT, help="on a host without a GPU: run this many problems at once")
    sui.add_argument("--ray", metavar="ADDRESS", help="run each problem as a task holding one GPU on the Ray "
                                                      f"cluster at ADDRESS (or auto); needs `{RAY_INSTALL}`")
    add_export_parser(commands)
    add_knowledge_parser(commands)
    return parser


DB_HELP = ("keep checkpoints in PostgreSQL (postgresql://user@host:port/db) instead of RUN_DIR/checkpoints.sqlite, "
           "and the knowledge store's gains there too")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"optimize": _optimize, "resume": _resume, "report": _report, "verify": verify_command,
                "suite": suite_command, "export": export_command, "knowledge": knowledge_command}
    try:
        return commands[args.command](args)
    except (InputError, UnknownGPUError) as err:
        print(f"kernelopt: {err}", file=sys.stderr)
        return USAGE_ERROR
    except HarnessError as err:  # kernelopt's bug: said as such, once, and the run can be resumed
        print(f"kernelopt: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        stop_jobs()
        print("kernelopt: interrupted", file=sys.stderr)
        return 130


def _checked_sources(problem: str, kernel: str | None) -> tuple[str, str | None]:
    return checked_sources(
        read_source(problem, "problem"), read_source(kernel, "kernel") if kernel else None,
        Path(problem).name, Path(kernel).name if kernel else "kernel.py",
    )


def _check_gpus(gpus: list[int]) -> None:
    """InputError when --gpus names a GPU this host does not show."""
    from kernelopt.hardware.gpus import missing_gpus, visible_gpu_count

    wrong = missing_gpus(gpus, visible_gpu_count())
    if wrong:
        raise InputError(wrong)


def _optimize(args: argparse.Namespace) -> int:
    problem_source, kernel_source = _checked_sources(args.problem, args.kernel)
    if kernel_source is None and not args.model:
        _check_compiler_seed_possible(args.no_compiler_seed)
    if args.gpu:
        get_gpu_spec(args.gpu)  # an unknown name is bad input, said before anything loads
    db = check_db_url(args.db)
    ctx = Context(
        **model_settings(args.model), base_url=args.base_url, max_rounds=args.max_rounds, patience=args.patience,
        max_repairs=args.max_repairs,
        gpu=args.gpu, time_compile=not args.no_compile, profile=not args.no_profile,
        max_autotune_baseline=args.max_autotune_baseline and not args.no_compile,
        max_autotune_limit_s=args.max_autotune_limit_s,
        candidates_per_round=args.candidates, gpus=args.gpus, beam=args.beam,
        knowledge=not args.no_knowledge, knowledge_db=db,
        sweep_configs=args.sweep_configs or 0, max_tokens=args.max_tokens, max_wall_s=args.max_wall_s,
        llm_timeout_s=args.llm_timeout_s, approve=args.approve, compiler_seed=not args.no_compiler_seed,
        **limit_settings(args),
    )
    if args.gpus:
        _check_gpus(args.gpus)
    if args.model:
        from kernelopt.llm import check_endpoint, make_chat_models

        make_chat_models(ctx)  # a missing key is bad input: say so before any work starts
        check_endpoint(ctx)  # so is an endpoint where nothing listens (a typo in --base-url)
    from kernelopt.checkpoint import new_run_record
    from kernelopt.runs import new_run_dir

    # The folder exists before the graph starts: run.json and the checkpoints live in it.
    run_dir = out_dir(args.out) if args.out else new_run_dir(ctx.runs_dir, problem_source)
    inputs: dict[str, Any] = {
        "problem_source": problem_source, "kernel_source": kernel_source,
        "problem_path": str(Path(args.problem).resolve()),
        "kernel_path": str(Path(args.kernel).resolve()) if args.kernel else None,
        "run_dir": str(run_dir),
    }
    record = new_run_record(run_dir, inputs, ctx, db)
    prewarm()  # every argument is checked: the work starts
    return run_graph_to_end(run_dir, db, record, ctx, args.json)


def _check_compiler_seed_possible(turned_off: bool) -> None:
    """With neither kernel nor model the run starts from the compiler seed: say at once (before torch
    loads) when none can be made here."""
    from kernelopt.seed.obtain import no_gpu_reason

    if turned_off:
        raise InputError("no --kernel, no --model and --no-compiler-seed: nothing to start from; "
                         "pass a starting kernel, name a model, or drop --no-compiler-seed")
    reason = no_gpu_reason()
    if reason:
        raise InputError(f"no --kernel given and no --model, and {reason}")


def _resume(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    record = read_run_record(run_dir)
    db = check_db_url(args.db) or record.db
    endpoint = {"base_url": args.base_url} if args.base_url else {}
    changed = {**limit_settings(args), **model_settings(args.model), **endpoint}
    if changed:  # kept in run.json, so that a later resume keeps them too
        from kernelopt.checkpoint import write_run_record

        record = dataclasses.replace(record, context={**record.context, **changed})
        write_run_record(run_dir, record)
    ctx = record.run_context()
    if args.db and ctx.knowledge_db == record.db:  # the store shares the checkpoints' database, password and all
        ctx = dataclasses.replace(ctx, knowledge_db=db)
    if ctx.model:
        from kernelopt.llm import check_endpoints, make_chat_models

        make_chat_models(ctx)  # the key is not kept in run.json: it must be in the environment again
        down = check_endpoints(ctx)  # of several models, one may be down (and dropped): the others go on
        if len(down) == 1 + len(ctx.models or []):
            raise InputError(next(iter(down.values())))
    return run_graph_to_end(run_dir, db, record, ctx, args.json, resume=True)


def _report(args: argparse.Namespace) -> int:
    from kernelopt.report.summary import REPORT_JSON, load_summary

    run_dir = Path(args.run_dir).resolve()
    if not run_dir.is_dir():
        raise InputError(f"{run_dir} is not a folder; pass the run directory a run printed")
    summary = load_summary(run_dir)
    if summary is None and not (run_dir / RUN_FILE).is_file():
        raise InputError(f"{run_dir} holds neither {REPORT_JSON} nor {RUN_FILE}; pass the run directory a run printed")
    db = check_db_url(args.db)
    from kernelopt.report.run import summarize_run, write_reports

    if summary is None:  # the run never finished: its last checkpoint has the figures so far
        from kernelopt.checkpoint import open_checkpointer
        from kernelopt.graph import build_graph

        record = read_run_record(run_dir)
        with open_checkpointer(run_dir, db or record.db) as saver:
            state = build_graph().compile(checkpointer=saver).get_state(record.config()).values
        if not state:
            raise InputError(f"the run in {run_dir} has no checkpoint yet; nothing to report")
        summary = summarize_run(state, gpu_named=record.run_context().gpu is not None)
    for path in write_reports(summary, run_dir):
        print(path)
    return 0


def console() -> NoReturn:
    """The `kernelopt` command: main(), then an exit without Python's teardown (cli_run.exit_now)."""
    exit_now(main())


if __name__ == "__main__":
    console()
