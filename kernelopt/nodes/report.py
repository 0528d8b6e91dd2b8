"""report: the last node of every run, however started: the report files in its run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from kernelopt.context import Context
from kernelopt.events import ReportWritten, Stopped
from kernelopt.nodes.common import context_of, emit, verifiers_for
from kernelopt.report.run import summarize_run, write_reports
from kernelopt.runs import log_event
from kernelopt.state import KernelOptState


def report(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write report.json, report.md and roofline.png into the run directory; the files in `progress`.

    A run stopped by bad input before its folder existed has nothing to report on.
    """
    run_dir = state.get("run_dir")
    if not run_dir or not Path(run_dir).is_dir():
        return {"progress": {"node": "report", "files": [], "stop_reason": state.get("stop_reason")}}
    ctx = context_of(runtime)
    if state.get("problem_file"):  # the run is over: its reference processes leave the GPUs
        for verifier in verifiers_for(state, ctx):
            verifier.close()
    log_event(run_dir, Stopped(stop_reason=state.get("stop_reason"), round=state.get("round", 0)).payload())
    summary = summarize_run(dict(state), gpu_named=ctx.gpu is not None)
    files = [str(path) for path in write_reports(summary, run_dir)]
    emit(state, ReportWritten(path=str(Path(run_dir) / "report.md"), files=files))
    return {"progress": {"node": "report", "files": files, "stop_reason": state.get("stop_reason")}}
