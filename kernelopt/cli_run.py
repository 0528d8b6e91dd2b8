"""Running the graph for the `kernelopt` command: progress lines, the questions of `--approve`,
Ctrl-C, and the closing summary. Heavy imports stay inside the functions (see cli.py)."""

from __future__ import annotations

import json
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from kernelopt.checkpoint import RUN_FILE
from kernelopt.context import Context
from kernelopt.harness import stop_running_jobs
from kernelopt.records import InputError
from kernelopt.report.summary import RunSummary

if TYPE_CHECKING:
    from kernelopt.checkpoint import RunRecord

# Exit codes, one meaning each across commands (README "Exit codes"; cli.py's --help):
# 0 done (a best kernel, an accepted kernel, every suite problem correct); 1 the work's verdict is
# negative (a rejected kernel, no correct kernel, a suite problem wrong, the model unreachable
# mid-run: resumable); 2 bad input (arguments, files, a problem that does not run); 3 waiting for
# an --approve answer; 130 interrupted.
BAD_INPUT = 2
NO_ANSWER = 3  # --approve and stdin ended before a question was answered: the run waits, resumable


def interrupt(signum: int, frame: Any) -> None:
    """Ctrl-C: kill the running candidates first (LangGraph waits for its running nodes before the
    interrupt reaches us), then stop as Python would."""
    stop_jobs()
    raise KeyboardInterrupt


def stop_jobs() -> None:
    """Kill the candidates still running, so that the threads waiting on them end with the run."""
    stop_running_jobs()


def run_graph_to_end(
    run_dir: Path, db: str | None, record: RunRecord, ctx: Context, as_json: bool, resume: bool = False
) -> int:
    """Run (or continue) the graph on the run's checkpoints; print progress and the summary."""
    from langgraph.types import Command

    from kernelopt.checkpoint import open_checkpointer, run_lock
    from kernelopt.graph import build_graph
    from kernelopt.report.progress import render_event

    config = record.config()
    with run_lock(run_dir), open_checkpointer(run_dir, db) as saver:
        graph = build_graph().compile(checkpointer=saver)
        snapshot = graph.get_state(config)
        started = snapshot.created_at is not None
        # Not `next`: a node that finished after the last checkpoint (its writes saved) leaves
        # `next` empty although the run goes on after it. A finished run has no task left at all.
        finished = started and not snapshot.tasks
        stream_config = config
        if resume and finished and _llm_stopped(snapshot.values):
            # the endpoint failed: go on from the checkpoint before the failed call (a fork of it)
            before = _before_the_llm_failure(graph, config)
            if before is not None:
                snapshot, stream_config, finished = before, before.config, False
                if not as_json:
                    print("the run stopped as its model was unavailable; going on with "
                          f"{ctx.model} at {ctx.base_url or 'its endpoint'}", flush=True)
        if resume and not finished:
            from kernelopt.events import Resumed
            from kernelopt.runs import log_event

            log_event(run_dir, Resumed(where=_where(snapshot) if started else "from the start", model=ctx.model,
                                       models=ctx.models, base_url=ctx.base_url).payload())
        if resume and not as_json:
            print(f"resuming run {run_dir}: {_where(snapshot) if started else 'from the start'}", flush=True)
        if not finished:
            asker = _Asker(sys.stderr if as_json else sys.stdout)
            stream_input: Any = None if started else record.inputs
            waiting = list(snapshot.interrupts) if started else []  # a question left unanswered last time
            signal.signal(signal.SIGINT, interrupt)
            try:
                while True:
                    if not waiting:
                        for chunk in graph.stream(stream_input, stream_config, context=ctx,
                                                  stream_mode="custom", durability="sync"):
                            line = None if as_json else render_event(chunk)
                            if line:
                                print(line, flush=True)
                        stream_config = config  # from here on, the thread's newest checkpoint
                        waiting = list(graph.get_state(config).interrupts)
                        if not waiting:
                            break
                    # --approve: the graph stopped at a question (interrupt); ask, then resume with the replies
                    answers = {}
                    for question in waiting:
                        answer = asker.answer_for(question.value)
                        if answer is None:
                            print(f"kernelopt: no answer (end of input); the run waits at this question: "
                                  f"answer it with `kernelopt resume {run_dir}`", file=sys.stderr)
                            return NO_ANSWER
                        answers[question.id] = answer
                    stream_input, waiting = Command(resume=answers), []
            except KeyboardInterrupt:
                stop_jobs()
                print(f"kernelopt: interrupted; continue with: kernelopt resume {run_dir}", file=sys.stderr)
                return 130
        final = graph.get_state(config).values
    return _finish(final, ctx, as_json, already_finished=resume and finished)


def _llm_stopped(values: dict[str, Any]) -> bool:
    return str(values.get("stop_reason") or "").startswith(("llm_unavailable", "llm_error"))


def _before_the_llm_failure(graph: Any, config: dict[str, Any]) -> Any:
    """The newest checkpoint with work still to do and no stop reason: the one before the node
    whose LLM call failed. None when there is none (the failure came first thing)."""
    for snapshot in graph.get_state_history(config):
        if snapshot.next and "report" not in snapshot.next and not snapshot.values.get("stop_reason"):
            return snapshot
    return None


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

    def answer_for(self, payload: Any) -> dict[str, Any] | None:
        from kernelopt.report.progress import render_question

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


def _finish(final: dict[str, Any], ctx: Context, as_json: bool, already_finished: bool = False) -> int:
    """Print the summary the report node wrote (report.json: made once, read here); the exit code
    says whether a best kernel exists."""
    from kernelopt.report.run import REPORT_MD, summarize_run, write_reports
    from kernelopt.report.summary import load_summary

    run_dir = Path(final["run_dir"]) if final.get("run_dir") else None
    summary = load_summary(run_dir) if run_dir else None
    if summary is None:  # no run folder (bad input before it was made), or a finished run's reports lost
        summary = summarize_run(final, gpu_named=ctx.gpu is not None)
    if already_finished and run_dir and run_dir.is_dir() and not (run_dir / REPORT_MD).is_file():
        write_reports(summary, run_dir)  # asked again of a finished run: its reports are there again
    if as_json:
        found = summary.to_json() | ({"already_finished": True} if already_finished else {})
        print(json.dumps(found, indent=2, default=str))
    else:
        note = "this run had already finished; nothing was redone\n" if already_finished else ""
        print(note + final_text(summary))
        if _llm_stopped(final) and run_dir:
            print(f"kernelopt: the model could not be reached; continue with `kernelopt resume {run_dir}` "
                  "(--base-url/--model to change them)", file=sys.stderr)
    if str(final.get("stop_reason") or "").startswith("bad input"):
        return BAD_INPUT  # a problem that does not run, as `verify` says it: the input, not the kernel
    return 0 if summary.best_kernel_path and not _llm_stopped(final) else 1


def final_text(summary: RunSummary) -> str:
    from kernelopt.report.figures import baseline_text
    from kernelopt.report.models import models_text
    from kernelopt.report.run import roofline_notes

    lines = [f"stopped: {summary.stop_reason}", f"run directory: {summary.run_dir}"]
    if summary.best_kernel_path:
        lines.append(f"best kernel: {summary.best_kernel_path} (round {summary.best_round})")
        lines.append(f"best time: {summary.best_time_ms:.4f} ms{_clock_note(summary)}")
        if text := baseline_text(summary.to_json()):  # the figures' JSON, as `verify` has them too
            lines.append(text)
    if summary.duplicates_removed:
        lines.append(f"duplicates removed: {summary.duplicates_removed} (compiled to kernels already timed: "
                     "checked, not timed again)")
    roof = summary.roofline
    if roof and summary.is_gpu_time:
        eff = roof.get("efficiency_pct")
        lines.append(
            f"roofline: {roof['bottleneck']}-bound, efficiency {'n/a' if eff is None else f'{eff:.1f}%'}, "
            f"compute SOL {_pct(roof.get('compute_sol_pct'))}, memory SOL {_pct(roof.get('memory_sol_pct'))}"
        )
    elif roof:
        lines.append(f"roofline: {roof['bottleneck']}-bound by the problem's floor intensity")
    lines += [f"  note: {w}" for w in roofline_notes(summary)]
    lines += models_text(summary)
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _clock_note(summary: RunSummary) -> str:
    return "" if summary.is_gpu_time else " (Triton interpreter on CPU: not GPU performance)"


def out_dir(out: str) -> Path:
    """The --out folder, checked: not a file, not under one, not an existing run; made if new."""
    run_dir = Path(out).expanduser().resolve()
    for folder in (run_dir, *run_dir.parents):
        if folder.exists() and not folder.is_dir():
            where = "is" if folder == run_dir else f"is under {folder}, which is"
            raise InputError(f"--out {out} {where} a file, not a folder; pass a folder for the run")
    if (run_dir / RUN_FILE).exists():
        raise InputError(f"{run_dir} already holds a run; continue it with `kernelopt resume {run_dir}` "
                         "or pass another --out")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"--out {out}: cannot make the folder ({err.strerror})") from None
    return run_dir


def exit_now(code: int) -> NoReturn:
    """End the process with `code` without Python's teardown of torch, Triton and LangGraph's modules
    (1.4 s at the end of every command on a 2-core host). What a normal exit does first is done here
    too, by the interpreter's own steps: the threads' exit hooks (idle thread pools stop), the main
    thread marked finished (a tracer's thread that runs while it lives ends), the other threads
    joined; then the exit handlers (jobs stopped, the fork server closed, logging shut down), and
    the streams flushed. A Ctrl-C now ends the process at once."""
    import atexit
    import os
    import threading

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is None:  # an interpreter without it: the normal exit, teardown included
        sys.exit(code)
    shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone (`| head`), or the stream closed
            pass
    os._exit(code)
