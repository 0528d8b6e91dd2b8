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

