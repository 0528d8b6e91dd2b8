"""The GPU runs' logs: with KERNELOPT_FAILURES_NOW=1 (benchmarks/h200/gpu_tests.sh) a failing test's traceback is in
the log the moment it fails. A device call's time box kills pytest before its summary, which held the only message of
session 38's H100 batch-norm failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_a_failure_is_written_when_it_happens_not_only_in_the_summary(tmp_path: Path) -> None:
    shutil.copy(TESTS / "conftest.py", tmp_path)
    shutil.copy(TESTS / "helpers.py", tmp_path)
    (tmp_path / "test_box.py").write_text(
        "import time\n\n\ndef test_fails():\n    assert 1 == 2, 'what the box would have cut'\n\n\n"
        "def test_outlasts_the_box():\n    time.sleep(60)\n")
    env = {**os.environ, "KERNELOPT_FAILURES_NOW": "1"}
    try:  # the box: pytest killed before it reaches its summary
        subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_box.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=10)
        raise AssertionError("pytest outlived its box")
    except subprocess.TimeoutExpired as cut:
        log = (cut.stdout or b"").decode() if isinstance(cut.stdout, bytes) else (cut.stdout or "")
    assert "[KERNELOPT_FAILURES_NOW] test_box.py::test_fails call failed:" in log, log
    assert "AssertionError: what the box would have cut" in log and "short test summary" not in log, log
    quiet = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                            "test_box.py::test_fails"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "KERNELOPT_FAILURES_NOW"})
    assert quiet.returncode == 1 and "[KERNELOPT_FAILURES_NOW]" not in quiet.stdout, quiet.stdout
