"""Fixtures for the tests (shared helpers live in helpers.py): tiny problems under Triton's interpreter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Without an NVIDIA device, Triton kernels run under the interpreter (also those a test runs in
# its own process); on a CUDA host they run on the GPU, as the GPU tests mean them to.
if not (any(Path("/dev").glob("nvidia[0-9]*")) or Path("/proc/driver/nvidia/gpus").is_dir()):
    os.environ.setdefault("TRITON_INTERPRET", "1")

from helpers import DATA

from kernelopt.harness import quick_interpreter

quick_interpreter()  # the tests' own kernels as the sandbox's workers run them: integer arithmetic unchecked


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: the test files spread over up to two processes on the CPU; GPU tests (`-m gpu`)
    stay in one, so that no two of them time kernels on the GPU at once."""
    marks = config.getoption("markexpr") or ""
    if "gpu" in marks and "not gpu" not in marks:
        return 0
    return min(2, os.cpu_count() or 1)


# The longest test files, longest first (seconds of their tests' durations in a whole run on two CPU cores, session
# 57: moves 176, moves_ptx 149, suite 121, cli 95, seed_translate 82, conv_split 73, pooling3d 72, ray 70, ...).
# With `--dist loadfile` a worker takes one file at a time: started last, a long file keeps one worker busy while
# the other has nothing left (pytest-xdist's own order, by number of tests, put resume_signals and ray last; the
# alphabet put moves_ptx and pooling3d in the second half). The rest follow in their usual order.
LONGEST_FIRST = (
    "test_moves.py", "test_moves_ptx.py", "test_suite.py", "test_cli.py", "test_seed_translate.py",
    "test_conv_split.py", "test_pooling3d.py", "test_ray.py", "test_resume.py", "test_conv_reduce.py",
    "test_verifier.py", "test_approval.py", "test_studio.py", "test_conv_epilogue.py", "test_scale.py",
    "test_separable.py", "test_conv_rows.py", "test_precision.py", "test_resume_signals.py", "test_parallel.py",
    "test_split_f16.py", "test_graph.py", "test_seed_specialize.py", "test_sliding_pool.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (`--no-loadscope-reorder` in addopts keeps this order for xdist)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order kept


@pytest.fixture(scope="session", autouse=True)
def own_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder ($XDG_CACHE_HOME) for this pytest process and what it starts: the device
    lock is per machine, so the other xdist worker's timing would otherwise wait for this one's
    checks (a hanging candidate holds it shared for its whole time limit) and the other way round;
    runs given no runs folder, and their knowledge store, stay out of the user's cache too."""
    home = tmp_path_factory.mktemp("cache-home")
    os.environ["XDG_CACHE_HOME"] = str(home)
    return home


@pytest.fixture
def add_problem() -> Path:
    return DATA / "add" / "problem.py"


@pytest.fixture(scope="module")
def settings():  # noqa: ANN201 - kernelopt.harness.verify.HarnessSettings, imported only where a test asks for it
    """The verifier's settings of the tests that verify kernels: one seed, no compile timing."""
    from kernelopt.harness.verify import HarnessSettings

    return HarnessSettings.detect(seeds=1, time_compile=False)


# KERNELOPT_FAILURES_NOW=1 (benchmarks/h200/gpu_tests.sh sets it): a failing test's traceback is written to the log as
# it fails, not only in the summary at the end, which a time box that kills pytest never lets it reach (session 38's
# H100 run of test_moves_gpu lost the only message of a failure that way).
FAILURES_NOW = "KERNELOPT_FAILURES_NOW"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and os.environ.get(FAILURES_NOW) == "1":
        print(f"\n[{FAILURES_NOW}] {report.nodeid} {report.when} failed:\n{report.longreprtext[-6000:]}", flush=True)


@pytest.fixture
def numpy_libdevice() -> object:
    """libdevice's functions the interpreter does not know (Mish's tanh and log1p) as numpy's, for one test."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import seed_audit
    from triton.language.extra import libdevice

    saved = dict(vars(libdevice))
    seed_audit.interpretable_libdevice()
    yield
    for name in set(vars(libdevice)) - set(saved):
        delattr(libdevice, name)
    for name, value in saved.items():
        setattr(libdevice, name, value)
