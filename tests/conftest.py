"""Fixtures for the tests (shared helpers live in helpers.py): tiny problems under Triton's interpreter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

from helpers import DATA


@pytest.fixture
def add_problem() -> Path:
    return DATA / "add" / "problem.py"
