"""A profile's process started ahead (harness/sandbox/warm_profile.py): the verifier hands it the
next profile's request, leaves the one after waiting, and stops it when the run ends; a waiting
worker leaves when the process that started it is gone. ncu here is a script that runs the
program it is given and prints an H200 profile."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelopt.harness.sandbox import warm_profile
from kernelopt.harness.verify import HarnessSettings, Verifier

ADD = Path(__file__).parent / "data" / "add"
CSV = Path(__file__).parent / "fixtures" / "ncu" / "h200_softmax_8192x4096_fp32_full_raw.csv"
NCU_OPTIONS = 11  # --csv --page raw --clock-control none --target-processes all --profile-from-start off --metrics M


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `ncu` on PATH that logs each start, runs its program and prints a real profile; its log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "ncu-starts.txt"
    bin_dir.mkdir()
    script = bin_dir / "ncu"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nshift {NCU_OPTIONS}\n"$@"\nstatus=$?\n'
                      f'cat "{CSV}"\nexit $status\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def _started(log: Path, count: int, within_s: float = 10.0) -> bool:
    """Whether ncu was started `count` times, each for a waiting worker (the script logs as it starts)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count("--wait-for") == count:
            return True
        time.sleep(0.05)
    return False


def _waiting(verifier: Verifier) -> subprocess.Popen[str]:
    waiting = warm_profile._WAITING[verifier._key]
    return waiting.proc


def test_a_profile_takes_the_process_started_ahead_and_leaves_the_next_waiting(tmp_path: Path, fake_ncu: Path) -> None:
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False))
    try:
        assert verifier.prepare_profile()
        first = _waiting(verifier)
        assert _started(fake_ncu, 1)
        time.sleep(0.5)
        assert first.poll() is None  # it waits: no request yet

        profile = verifier.profile(ADD / "kernel_fast.py", tmp_path / "work")
        assert profile.ok, profile.error
        assert [k.name for k in profile.kernels] == ["softmax_kernel"]
        assert first.poll() == 0  # the waiting process ran this profile
        report = (tmp_path / "work" / "ncu_raw.csv").read_text()
        assert "model built, inputs made" in report and "profiled" in report  # the job's own stages
        assert (tmp_path / "work" / "result.json").read_text() == '{"ok": true}'

        second = _waiting(verifier)  # the next one waits while the next round verifies
        assert second is not first and second.poll() is None
        assert _started(fake_ncu, 2)
    finally:
        verifier.close()
    assert second.wait(timeout=10) is not None  # the run's end stops it
    assert verifier._key not in warm_profile._WAITING


def test_a_failing_kernel_in_the_process_started_ahead_is_a_failed_profile(tmp_path: Path, fake_ncu: Path) -> None:
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False))
    try:
        verifier.prepare_profile()
        broken = tmp_path / "kernel_broken.py"
        broken.write_text((ADD / "kernel_base.py").read_text() + "\nraise_at_import = 1 / 0\n")
        profile = verifier.profile(broken, tmp_path / "work")
        assert not profile.ok and "ZeroDivisionError" in (profile.error or "")
    finally:
        verifier.close()


def test_a_waiting_worker_leaves_when_the_process_that_started_it_is_gone(tmp_path: Path) -> None:
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    request = tmp_path / "request.json"
    worker = subprocess.Popen([sys.executable, "-m", "kernelopt.harness.sandbox.worker", warm_profile.WAIT_FLAG,
                               str(request), str(owner.pid)])
    try:
        time.sleep(0.5)
        assert worker.poll() is None
        owner.kill()
        owner.wait()
        assert worker.wait(timeout=30) == 3  # no request ever came, and nobody is left to send one
    finally:
        worker.kill()
        owner.kill()
