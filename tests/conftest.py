"""Fixtures for the tests (shared helpers live in helpers.py): tiny problems under Triton's interpreter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Without an NVIDIA device, Triton kernels run under the interpreter (also those a test runs in
# its own process); on a CUDA host they run on the GPU, as the GPU tests mean them to.
if not (any(Path("/dev").glob("nvidia[0-9]*")) or Path("/proc/driver/nvidia/gpus").is_dir()):
    os.environ.setdefault("TRITON_INTERPRET", "1")

from helpers import DATA


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: the test files spread over up to two processes on the CPU; GPU tests (`-m gpu`)
    stay in one, so that no two of them time kernels on the GPU at once."""
    marks = config.getoption("markexpr") or ""
    if "gpu" in marks and "not gpu" not in marks:
        return 0
    return min(2, os.cpu_count() or 1)


@pytest.fixture
def add_problem() -> Path:
    return DATA / "add" / "problem.py"


# The files whose tests take longest on two CPU cores, longest first (seen in CI's --durations).
# `--dist loadfile` hands files to the workers in collection order, so a long file collected
# last runs alone at the end while the other worker idles: these go first.
LONGEST_FILES = (
    "test_resume_signals.py", "test_resume.py", "test_cli.py", "test_ray.py", "test_seed_translate.py",
    "test_approval.py", "test_scale.py", "test_suite.py", "test_moves.py", "test_parallel.py", "test_hangs.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first, every file's tests in their own order (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
