"""The `kernelopt` command: optimize a kernel, resume a run, re-render its report, or verify one kernel."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelopt.context import Context
from kernelopt.hardware.specs import UnknownGPUError
from kernelopt.harness.problem import (
    InputError,
    check_kernel_source,
    check_problem_source,
    read_source,
)

if TYPE_CHECKING:
    from kernelopt.checkpoint import RunRecord


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelopt", description="Make Triton kernels fast, to the roofline.")
    commands = parser.add_subparsers(dest="command", required=True)
    opt = commands.add_parser("optimize", help="run the judge-optimize-verify loop on a problem")
    opt.add_argument("problem", help="KernelBench problem file (Model, get_inputs, get_init_inputs)")
    opt.add_argument("--kernel", help="starting kernel file (ModelNew); without it the LLM writes one")
    opt.add_argument("--model", help="chat model name; without it the offline policy runs")
    opt.add_argument("--base-url", help="OpenAI-compatible endpoint (vLLM, Ollama, ...)")
    opt.add_argument("--max-rounds", type=int, default=Context.max_rounds)
    opt.add_argument("--patience", type=int, default=Context.patience)
    opt.add_argument("--gpu", help="target GPU key or name (default: the GPU present, else H200)")
    opt.add_argument("--out", help="run directory (default: a new folder under ./kernelopt_runs)")
    opt.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    opt.add_argument("--no-profile", action="store_true", help="skip Nsight Compute profiling")
    opt.add_argument("--candidates", type=int, default=Context.candidates_per_round,
                     help="candidates written per round (LLM calls concurrent, measured one at a time)")
    opt.add_argument("--max-tokens", type=int, help="stop when the LLM calls have used this many tokens")
    opt.add_argument("--max-wall-s", type=float, help="stop when the run has taken this many seconds")
    opt.add_argument("--llm-timeout-s", type=float, default=Context.llm_timeout_s, help="timeout of one LLM call")
    opt.add_argument("--approve", action="store_true",
                     help="ask before each rewrite is tried (approve / reject / edit) and before a new best is "
                          "taken; answers come from the terminal, or line by line from a piped stdin")
    opt.add_argument("--db", help=DB_HELP)
    opt.add_argument("--json", action="store_true", help="print one JSON object at the end, no progress")
    res = commands.add_parser("resume", help="continue a stopped or killed run from its last checkpoint")
    res.add_argument("run_dir", help="the run directory (it holds run.json)")
    res.add_argument("--db", help="PostgreSQL URL of the run's checkpoints (default: the one in run.json)")
    res.add_argument("--json", action="store_true", help="print one JSON object at the end, no progress")
    rep = commands.add_parser("report", help="re-render report.md and roofline.png of a run")
    rep.add_argument("run_dir", help="the run directory (it holds report.json or run.json)")
    rep.add_argument("--db", help="PostgreSQL URL of the run's checkpoints (default: the one in run.json)")
    ver = commands.add_parser("verify", help="check one kernel against its problem and time it")
    ver.add_argument("problem")
    ver.add_argument("kernel")
    ver.add_argument("--compile", action="store_true", help="also time torch.compile as a baseline")
    ver.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


NO_ANSWER = 3  # --approve and stdin ended before a question was answered: the run waits, resumable
DB_HELP = "keep checkpoints in PostgreSQL (postgresql://user@host:port/db) instead of RUN_DIR/checkpoints.sqlite"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"optimize": _optimize, "resume": _resume, "report": _report, "verify": _verify}
    try:
        return commands[args.command](args)
    except (InputError, UnknownGPUError) as err:
        print(f"kernelopt: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelopt: interrupted", file=sys.stderr)
        return 130


def _checked_sources(problem: str, kernel: str | None) -> tuple[str, str | None]:
    problem_source = read_source(problem, "problem")
    check_problem_source(problem_source, Path(problem).name)
    kernel_source = None
    if kernel:
        kernel_source = read_source(kernel, "kernel")
        check_kernel_source(kernel_source, Path(kernel).name)
    return problem_source, kernel_source


def _optimize(args: argparse.Namespace) -> int:
    problem_source, kernel_source = _checked_sources(args.problem, args.kernel)
    # Imported after the input checks: bad input is reported before torch and langchain load.
    from kernelopt.checkpoint import RUN_FILE, check_db_url, new_run_record
    from kernelopt.llm import make_chat_model
    from kernelopt.runs import new_run_dir

    ctx = Context(
        model=args.model, base_url=args.base_url, max_rounds=args.max_rounds, patience=args.patience,
        gpu=args.gpu, time_compile=not args.no_compile, profile=not args.no_profile,
        candidates_per_round=args.candidates, max_tokens=args.max_tokens, max_wall_s=args.max_wall_s,
        llm_timeout_s=args.llm_timeout_s, approve=args.approve,
    )
    if args.candidates < 1:
        raise InputError(f"--candidates {args.candidates}: give at least 1 candidate per round")
    if kernel_source is None and not args.model:
        raise InputError("no --kernel given and no --model to write one; pass a starting kernel or name a model")
    make_chat_model(ctx)  # a missing key is bad input: say so before any work starts
    db = check_db_url(args.db)
    # The folder exists before the graph starts: run.json and the checkpoints live in it.
    if args.out:
        run_dir = Path(args.out).resolve()
        if (run_dir / RUN_FILE).exists():
            raise InputError(f"{run_dir} already holds a run; continue it with `kernelopt resume {run_dir}` "
                             "or pass another --out")
        run_dir.mkdir(parents=True, exist_ok=True)
    else:
        run_dir = new_run_dir(ctx.runs_dir, problem_source)
    inputs: dict[str, Any] = {
        "problem_source": problem_source, "kernel_source": kernel_source,
        "problem_path": str(Path(args.problem).resolve()),
        "kernel_path": str(Path(args.kernel).resolve()) if args.kernel else None,
        "run_dir": str(run_dir),
    }
    record = new_run_record(run_dir, inputs, ctx, db)
    return _run(run_dir, db, record, ctx, args.json)


def _resume(args: argparse.Namespace) -> int:
    from kernelopt.checkpoint import check_db_url, read_run_record
    from kernelopt.llm import make_chat_model

    run_dir = Path(args.run_dir).resolve()
    record = read_run_record(run_dir)
    ctx = record.run_context()
    make_chat_model(ctx)  # the key is not kept in run.json: it must be in the environment again
    return _run(run_dir, check_db_url(args.db) or record.db, record, ctx, args.json, resume=True)


def _run(run_dir: Path, db: str | None, record: RunRecord, ctx: Context, as_json: bool, resume: bool = False) -> int:
    """Run (or continue) the graph on the run's checkpoints; print progress and the summary."""
    from langgraph.types import Command

    from kernelopt.checkpoint import open_checkpointer, run_lock
    from kernelopt.graph import build_graph
    from kernelopt.progress import render_event

    config = record.config()
    with run_lock(run_dir), open_checkpointer(run_dir, db) as saver:
        graph = build_graph().compile(checkpointer=saver)
        snapshot = graph.get_state(config)
        started = snapshot.created_at is not None
        # Not `next`: a node that finished after the last checkpoint (its writes saved) leaves
        # `next` empty although the run goes on after it. A finished run has no task left at all.
        finished = started and not snapshot.tasks
        if resume and not as_json:
            print(f"resuming run {run_dir}: {_where(snapshot) if started else 'from the start'}", flush=True)
        if not finished:
            asker = _Asker(sys.stderr if as_json else sys.stdout)
            stream_input: Any = None if started else record.inputs
            waiting = list(snapshot.interrupts) if started else []  # a question left unanswered last time
            try:
                while True:
                    if not waiting:
                        for chunk in graph.stream(stream_input, config, context=ctx,
                                                  stream_mode="custom", durability="sync"):
                            line = None if as_json else render_event(chunk)
                            if line:
                                print(line, flush=True)
                        waiting = list(graph.get_state(config).interrupts)
                        if not waiting:
                            break
                    # --approve: the graph stopped at a question (interrupt); ask, then resume with the replies
                    answers = {}
                    for question in waiting:
                        answer = asker.ask(question.value)
                        if answer is None:
                            print(f"kernelopt: no answer (end of input); the run waits at this question: "
                                  f"answer it with `kernelopt resume {run_dir}`", file=sys.stderr)
                            return NO_ANSWER
                        answers[question.id] = answer
                    stream_input, waiting = Command(resume=answers), []
            except KeyboardInterrupt:
                print(f"kernelopt: interrupted; continue with: kernelopt resume {run_dir}", file=sys.stderr)
                return 130
        final = graph.get_state(config).values
    return _finish(final, as_json, already_finished=resume and finished)


def _where(snapshot: Any) -> str:
    """Where a resumed run stands, in a few words."""
    if not snapshot.tasks:
        return "it has finished"
    if snapshot.interrupts:
        asking = ", ".join(t.name for t in snapshot.tasks if t.interrupts)
        return f"waiting for your answer at {asking}, round {snapshot.values.get('round', 0)}"
    done = [t.name for t in snapshot.tasks if t.result is not None]
    todo = [t.name for t in snapshot.tasks if t.result is None]
    where = f"at {', '.join(todo)}" if todo else f"after {', '.join(done)} (finished before the stop)"
    return f"continuing {where}, round {snapshot.values.get('round', 0)}"


class _Asker:
    """Asks the person the graph's approval questions (--approve) on the terminal.

    With stdin a terminal: a prompt per answer, and $EDITOR (or $VISUAL) on a temp copy for an
    edit. Otherwise the answers are read line by line from stdin (a, r then the reason, e then
    the path of a file with the new source), so they can be piped in. None: end of input.
    """

    def __init__(self, out: Any) -> None:
        self.out = out
        self.tty = sys.stdin.isatty()

    def _line(self, prompt: str) -> str | None:
        print(prompt, end="", file=self.out, flush=True)
        if self.tty:
            try:
                return input()
            except EOFError:
                return None
        line = sys.stdin.readline()
        if not line:
            return None
        print(line.rstrip("\n"), file=self.out, flush=True)  # echo what was read, as a terminal would
        return line.rstrip("\n")

    def ask(self, payload: Any) -> dict[str, Any] | None:
        from kernelopt.progress import render_question

        if not isinstance(payload, dict):  # not one of ours: show it, and take a plain reply
            print(f"── the graph asks: {payload}", file=self.out, flush=True)
            line = self._line("reply: ")
            return None if line is None else {"action": line.strip()}
        print(render_question(payload), file=self.out, flush=True)
        can_edit = "edit" in payload.get("replies", ())
        choices = "[a]pprove / [r]eject" + (" / [e]dit" if can_edit else "")
        while True:
            line = self._line(f"{choices}? ")
            if line is None:
                return None
            word = line.strip().lower()
            if word in ("a", "approve", "y", "yes"):
                return {"action": "approve"}
            if word in ("r", "reject", "n", "no"):
                reason = self._line("reason (it goes to the optimizer): ")
                return None if reason is None else {"action": "reject", "reason": reason.strip()}
            if word in ("e", "edit") and can_edit:
                source = self._edited(payload)
                return None if source is None else {"action": "edit", "source": source}
            print(f"answer {'a, r or e' if can_edit else 'a or r'}", file=self.out, flush=True)

    def _edited(self, payload: dict[str, Any]) -> str | None:
        """The edited source: from $EDITOR on a temp copy (a terminal), else from a file named."""
        import os
        import shlex
        import subprocess

        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if self.tty and editor:
            with tempfile.TemporaryDirectory(prefix="kernelopt-edit-") as work:
                copy = Path(work, Path(payload.get("kernel_path") or "kernel.py").name)
                copy.write_text(payload.get("source") or "")
                subprocess.run([*shlex.split(editor), str(copy)], check=False)
                return copy.read_text()
        while True:
            line = self._line("file with the edited kernel: ")
            if line is None:
                return None
            path = Path(line.strip()).expanduser()
            if path.is_file():
                return path.read_text()
            print(f"no file {path}; give another path", file=self.out, flush=True)


def _finish(final: dict[str, Any], as_json: bool, already_finished: bool = False) -> int:
    """Write the reports and print the summary; the exit code says whether a best kernel exists."""
    from kernelopt.report import summarize_run, write_reports

    summary = summarize_run(final)
    if summary["run_dir"] and Path(summary["run_dir"]).is_dir():
        write_reports(summary, summary["run_dir"])
    if as_json:
        print(json.dumps(summary | ({"already_finished": True} if already_finished else {}), indent=2, default=str))
    else:
        note = "this run had already finished; nothing was redone\n" if already_finished else ""
        print(note + _final_text(summary))
    return 0 if summary.get("best_kernel_path") else 1


def _report(args: argparse.Namespace) -> int:
    from kernelopt.report import load_summary, summarize_run, write_reports

    run_dir = Path(args.run_dir).resolve()
    summary = load_summary(run_dir)
    if summary is None:  # the run never finished: its last checkpoint has the figures so far
        from kernelopt.checkpoint import check_db_url, open_checkpointer, read_run_record
        from kernelopt.graph import build_graph

        record = read_run_record(run_dir)
        with open_checkpointer(run_dir, check_db_url(args.db) or record.db) as saver:
            state = build_graph().compile(checkpointer=saver).get_state(record.config()).values
        if not state:
            raise InputError(f"the run in {run_dir} has no checkpoint yet; nothing to report")
        summary = summarize_run(state)
    for path in write_reports(summary, run_dir):
        print(path)
    return 0


def _final_text(summary: dict[str, Any]) -> str:
    lines = [f"stopped: {summary['stop_reason']}", f"run directory: {summary['run_dir']}"]
    if summary.get("best_kernel_path"):
        lines.append(f"best kernel: {summary['best_kernel_path']}")
        lines.append(f"best time: {summary['best_time_ms']:.4f} ms{_clock_note(summary)}")
        for name in ("eager", "compile"):
            if summary.get(f"{name}_ms") and summary["is_gpu_time"]:
                lines.append(f"  vs {name}: {summary[f'{name}_ms']:.4f} ms ({summary[f'speedup_vs_{name}']:.2f}x)")
            elif summary.get(f"{name}_ms"):
                lines.append(f"  {name} (PyTorch on CPU, not comparable): {summary[f'{name}_ms']:.4f} ms")
    roof = summary.get("roofline")
    if roof:
        eff = roof.get("efficiency_pct")
        lines.append(
            f"roofline: {roof['bottleneck']}-bound, efficiency {'n/a' if eff is None else f'{eff:.1f}%'}, "
            f"compute SOL {_pct(roof.get('compute_sol_pct'))}, memory SOL {_pct(roof.get('memory_sol_pct'))}"
        )
        lines += [f"  note: {w}" for w in roof.get("warnings", [])]
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _clock_note(summary: dict[str, Any]) -> str:
    return "" if summary.get("is_gpu_time") else " (Triton interpreter on CPU: not GPU performance)"


def _verify(args: argparse.Namespace) -> int:
    from kernelopt.harness.verify import HarnessSettings, Verifier, floor_ms_for

    _checked_sources(args.problem, None)
    read_source(args.kernel, "kernel")  # a missing kernel file is bad input; a bad kernel is a rejection
    with tempfile.TemporaryDirectory(prefix="kernelopt-verify-") as work:
        verifier = Verifier(args.problem, work, HarnessSettings.detect(time_compile=args.compile))
        baselines = verifier.baselines()
        verdict = verifier.verify(args.kernel, floor_time_ms=floor_ms_for(baselines.floor, None))
    result: dict[str, Any] = {
        "accepted": verdict.accepted, "reason": verdict.reason, "rule": verdict.rule,
        "time_ms": verdict.timing.median_ms if verdict.timing else None,
        "timing": dataclasses.asdict(verdict.timing) if verdict.timing else None,
        "eager_ms": baselines.eager.median_ms if baselines.eager else None,
        "compile_ms": baselines.compile.median_ms if baselines.compile else None,
        "is_gpu_time": bool(verdict.timing and verdict.timing.is_gpu_time),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(("ACCEPTED: " if verdict.accepted else f"REJECTED [{verdict.rule}]: ") + verdict.reason)
        if result["eager_ms"] and result["time_ms"] and result["is_gpu_time"]:
            print(f"eager: {result['eager_ms']:.4f} ms ({result['eager_ms'] / result['time_ms']:.2f}x)")
        elif result["eager_ms"]:
            print(f"eager (PyTorch on the CPU, not comparable): {result['eager_ms']:.4f} ms")
    return 0 if verdict.accepted else 1


if __name__ == "__main__":
    sys.exit(main())
