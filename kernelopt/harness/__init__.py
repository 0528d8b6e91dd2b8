"""The harness: kernelopt's one way to run, check and time a kernel (docs/ARCHITECTURE.md).

The rest of kernelopt reaches it through three doors only: this package (the services below),
`verify.py` (the Verifier and its settings) and `problem.py` (reading a problem and a kernel).
The rooms inside, `guards/`, `sandbox/` and `measure/`, are the harness's own;
`tests/test_architecture.py` fails on an import into them from outside.

A name loads its module on first use, so importing this package loads neither torch nor Triton.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelopt.harness.measure.cases import input_bytes
    from kernelopt.harness.measure.ceilings import load_or_measure_ceilings
    from kernelopt.harness.measure.impossible import floor_ms_for
    from kernelopt.harness.measure.timing import beats, timing_config_for
    from kernelopt.harness.sandbox.audit import scrubbed_env
    from kernelopt.harness.sandbox.baseline_client import COMPILE_CACHE
    from kernelopt.harness.sandbox.calls import exact_math
    from kernelopt.harness.sandbox.interpreter import quick_interpreter, unchecked_integers
    from kernelopt.harness.sandbox.runner import Progress, likely_cuda, prewarm
    from kernelopt.harness.sandbox.service import run_service_job

_RUNNER = "kernelopt.harness.sandbox.runner"
_EXPORTS = {
    # the fork server started ahead of the first job, and where jobs will run (sandbox/runner.py)
    "prewarm": _RUNNER,
    "likely_cuda": _RUNNER,
    "Progress": _RUNNER,  # (phase, seconds) callbacks of a running job
    "run_service_job": "kernelopt.harness.sandbox.service",  # a function of kernelopt's own in a forked child
    # the measurement protocol: its settings for a run, and when one time beats another
    "timing_config_for": "kernelopt.harness.measure.timing",
    "beats": "kernelopt.harness.measure.timing",
    "load_or_measure_ceilings": "kernelopt.harness.measure.ceilings",
    "floor_ms_for": "kernelopt.harness.measure.impossible",  # the floor the impossible-speed rule judges by
    "input_bytes": "kernelopt.harness.measure.cases",  # a problem's input size (imports torch)
    "COMPILE_CACHE": "kernelopt.harness.sandbox.baseline_client",  # Inductor's caches' folder name
    "scrubbed_env": "kernelopt.harness.sandbox.audit",  # an environment without secrets, for a child
    "exact_math": "kernelopt.harness.sandbox.calls",  # reduced precision off (TF32, fp16 sums): the yardstick's flags
    # Triton's interpreter without its integer overflow check (and its re-patching at each helper call, quick_), as
    # the sandbox's workers run kernels on a CPU host
    "quick_interpreter": "kernelopt.harness.sandbox.interpreter",
    "unchecked_integers": "kernelopt.harness.sandbox.interpreter",
}

__all__ = [
    "COMPILE_CACHE",
    "Progress",
    "beats",
    "exact_math",
    "floor_ms_for",
    "input_bytes",
    "likely_cuda",
    "load_or_measure_ceilings",
    "prewarm",
    "quick_interpreter",
    "run_service_job",
    "scrubbed_env",
    "stop_running_jobs",
    "timing_config_for",
    "unchecked_integers",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def stop_running_jobs() -> None:
    """Kill every candidate job this process is watching (Ctrl-C, a stopped worker); nothing to do,
    and nothing imported, where no job ever started."""
    runner = sys.modules.get(_RUNNER)
    if runner is not None:
        runner.stop_jobs()
