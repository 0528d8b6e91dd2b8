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
    leaves = tmp_path / "waiting-ones-leave"  # while it exists, a worker started ahead leaves unrun
    script.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nshift {NCU_OPTIONS}\n'
                      f'if [ -e "{leaves}" ] && [ "$4" = "--wait-for" ]; then sleep 1; exit 0; fi\n'
                      f'"$@"\nstatus=$?\ncat "{CSV}"\nexit $status\n')
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


def _starts(log: Path) -> list[bool]:
    """Each ncu start so far: whether it was for a worker started ahead (else cold)."""
    return ["--wait-for" in line for line in log.read_text().splitlines()] if log.exists() else []


def _running(marker: str) -> bool:
    """Whether a process whose command line holds `marker` is alive (not a zombie)."""
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_text() and "\nState:\tZ" not in (proc / "status").read_text():
                return True
        except OSError:
            continue
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
        request = str(warm_profile._WAITING[verifier._key].request)
        assert _running(request)  # the Python worker under ncu, waiting
    finally:
        verifier.close()
    second.wait(timeout=10)  # the run's end stops ncu and the worker under it
    assert not _running(request)
    assert verifier._key not in warm_profile._WAITING and not warm_profile.asked(verifier._key)


def test_a_failing_kernel_in_the_process_started_ahead_is_a_failed_profile(tmp_path: Path, fake_ncu: Path) -> None:
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False))
    try:
        assert verifier.prepare_profile()
        first = _waiting(verifier)
        broken = tmp_path / "kernel_broken.py"
        broken.write_text((ADD / "kernel_base.py").read_text() + "\nraise_at_import = 1 / 0\n")
        profile = verifier.profile(broken, tmp_path / "work")
        assert not profile.ok and "ZeroDivisionError" in (profile.error or "")
        assert first.poll() is not None and _started(fake_ncu, 2)
        assert _starts(fake_ncu) == [True, True]  # the waiting one ran it (none cold), and the next waits
    finally:
        verifier.close()


def test_a_profile_starts_cold_where_the_waiting_process_cannot_serve_and_the_next_still_waits(
    tmp_path: Path, fake_ncu: Path
) -> None:
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False))
    try:
        # gone before its profile (killed, out of memory): the profile starts cold
        assert verifier.prepare_profile() and _started(fake_ncu, 1)
        gone = _waiting(verifier)
        os.killpg(gone.pid, 9)
        gone.wait(timeout=10)
        assert verifier.profile(ADD / "kernel_fast.py", tmp_path / "gone").ok
        assert _started(fake_ncu, 2)  # cold, then the next one ahead

        # started for other metrics: not used
        assert verifier.profile(ADD / "kernel_fast.py", tmp_path / "metrics", metrics=["dram__bytes_read.sum"]).ok
        assert _started(fake_ncu, 3)

        # alive when taken, but it leaves without reading its request: the profile starts again, cold
        (tmp_path / "waiting-ones-leave").touch()
        assert verifier.prepare_profile(["dram__bytes_read.sum"]) and _started(fake_ncu, 4)
        assert verifier.profile(ADD / "kernel_fast.py", tmp_path / "left", metrics=["dram__bytes_read.sum"]).ok
        assert _started(fake_ncu, 5)
        assert _starts(fake_ncu) == [True, False, True, False, True, True, False, True]
        assert not list((tmp_path / "harness" / "profile-ahead").glob("request-*.json"))  # the unread one is gone
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


def test_one_process_waits_a_device_so_a_run_that_raised_leaves_none_behind(tmp_path: Path, fake_ncu: Path) -> None:
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    raised = Verifier(ADD / "problem.py", tmp_path / "raised", settings)  # its run ended without close()
    following = Verifier(ADD / "problem.py", tmp_path / "following", settings)
    try:
        assert raised.prepare_profile() and _started(fake_ncu, 1)
        left = _waiting(raised)
        assert following.prepare_profile() and _started(fake_ncu, 2)
        left.wait(timeout=10)  # stopped: the next run on the device took its place
        assert raised._key not in warm_profile._WAITING and _waiting(following).poll() is None
    finally:
        following.close()
        raised.close()
