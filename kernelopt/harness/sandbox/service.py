"""A service's job: a function of kernelopt's own, not a kernel, run in a child of the warm fork server.

Some of a run's work needs torch only to read the user's reference: the offline optimizer's structural moves trace it
on the meta device, which also loads `torch._dynamo` (offline/moves/remote.py). In the run's own process that costs
torch's import and dynamo's (about 6 s of a 2-core host's CPU) and runs the user's code beside the graph. As a job it
runs in a child forked from the fork server, which has both imported already, under the runner's watchdog. The job
names its function as "kernelopt.module:function"; the function takes the request and returns a dict of plain values
with "ok": true.
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelopt.harness.sandbox import runner
from kernelopt.harness.sandbox.runner import PhaseLimits

if TYPE_CHECKING:
    from kernelopt.harness.verify import Verifier

JOB = "service"


def run_service_job(verifier: Verifier, entry: str, request: dict[str, Any], limit_s: float,
                    name: str = "service") -> tuple[dict[str, Any] | None, str]:
    """Run `entry` ("kernelopt.module:function") on `request` in a child of `verifier`'s fork server, at most
    `limit_s` in any phase, under its memory cap: the function's answer, or None and why (with the job's log). The
    job's folder, under the verifier's `name` folder, is removed after an answer and kept after a failure."""
    if not entry.startswith("kernelopt.") or ":" not in entry:
        raise ValueError(f"a service job's entry is kernelopt's own module:function, not {entry!r}")
    root = verifier.job_dir(name)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="job-", dir=root))
    outcome = runner.run_job(JOB, {**request, "entry": entry}, work, verifier.settings.limits(
        PhaseLimits.uniform(limit_s)))
    result = outcome.result or {}
    if outcome.failure is None and result.get("ok"):
        shutil.rmtree(work, ignore_errors=True)
        return result, ""
    why = outcome.failure or result.get("reason") or "it wrote no answer"
    return None, f"{why} (its log: {outcome.log_path})"


def run_job(job: str, request: dict[str, Any]) -> int:
    """The child's side: import the entry's module, run its function through the worker's `run_job` (its answer to
    result.json, an exception as an answer that says so)."""
    from kernelopt.harness.sandbox import worker

    module, _, function = request["entry"].partition(":")
    return worker.run_job(job, request, {JOB: getattr(importlib.import_module(module), function)})
