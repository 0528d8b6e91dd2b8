"""Fixtures for the tests (shared helpers live in helpers.py): tiny problems under Triton's interpreter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Without an NVIDIA device, Triton kernels run under the interpreter (also those a test runs in
# its own process); on a CUDA host they run on the GPU, as the GPU tests mean them to.
if not any(Path("/dev").glob("nvidia[0-9]*")):
    os.environ.setdefault("TRITON_INTERPRET", "1")

from helpers import DATA


@pytest.fixture
def add_problem() -> Path:
    return DATA / "add" / "problem.py"
