"""Durable runs: killed with SIGKILL mid-verification and resumed, finished runs resumed, PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from helpers import DATA
from test_cli import _show, kernelopt

from kernelopt.records import KernelRecord, Timing

ADD = DATA / "add"


def _events(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _processes_using(run_dir: Path) -> list[int]:
    """Processes whose command line names the run directory or that work inside it (a candidate's)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if str(run_dir) in cmdline or cwd.startswith(str(run_dir)):
                pids.append(int(proc.name))
    return pids


def _working_in(run_dir: Path, folder: str) -> bool:
    """Whether a process works in a folder of that name inside the run directory (a candidate's)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cwd = Path(os.readlink(proc / "cwd"))
            except OSError:
                continue
            if cwd.name == folder and cwd.is_relative_to(run_dir):
                return True
    return False


def _start_and_wait_for_a_hanging_round_1_candidate(run_dir: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """Start an optimize run in its own process group; return once round 1's candidate's process
    has started. That candidate never ends by itself (kernel_hangs_at_128.py, a 600 s limit), so
    whenever the test then stops the run, it stops it in the middle of that verification. A failed
    candidate is not repaired (--max-repairs 0): the resumed run ends after the hanging one."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelopt.cli", "optimize", str(ADD / "problem.py"),
         "--kernel", str(ADD / "kernel_hangs_at_128.py"), "--patience", "5", "--no-compile", "--timeout-s", "600",
         "--sweep-configs", "2",  # the start and BLOCK_SIZE 128: the sweep's winner is the hanging candidate
         "--max-repairs", "0", "--out", str(run_dir), *args],
        cwd=cwd, stdout=(run_dir.parent / "stdout.txt").open("w"), stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240  # a guard against a hung test, not a wait for something to happen
    try:
        while not _working_in(run_dir, "r001_a0"):
            assert proc.poll() is None, f"the run ended before round 1's candidate ran: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "round 1's candidate was not running within 240 s"
            time.sleep(0.1)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return proc


def _kill_during_round_1_verification(run_dir: Path, cwd: Path, *args: str) -> None:
    """SIGKILL an optimize run (and its workers) in the middle of round 1's verification."""
    proc = _start_and_wait_for_a_hanging_round_1_candidate(run_dir, cwd, *args)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    _assert_no_process_left(run_dir)
    assert not any(e["event"] == "verdict" and e.get("round") == 1 for e in _events(run_dir))


def _assert_no_process_left(run_dir: Path) -> None:
    # Workers run in their own sessions, out of the stopped group: they notice and exit by themselves.
    deadline = time.monotonic() + 15
    while _processes_using(run_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_using(run_dir), "a candidate's process outlived its stopped run"


def _verdicts(run_dir: Path) -> list[tuple[int, int]]:
    return [(e["round"], e["repair"]) for e in _events(run_dir) if e["event"] == "verdict"]


def test_killed_mid_verification_resumes_without_redoing_finished_work(tmp_path):
    run_dir = tmp_path / "run"
    _kill_during_round_1_verification(run_dir, tmp_path, "--max-rounds", "1")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["thread_id"] and record["inputs"]["run_dir"] == str(run_dir)
    assert record["context"]["max_rounds"] == 1 and record["context"]["api_key"] is None
    assert (run_dir / "checkpoints.sqlite").is_file()
    assert not (run_dir / "report.json").exists()  # it never finished

    # the hanging candidate is verified again: a shorter limit for this resume (and later ones) stops it
    proc = kernelopt("resume", run_dir, "--json", "--timeout-s", "8", cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    assert json.loads((run_dir / "run.json").read_text())["context"]["timeout_s"] == 8
    summary = json.loads(proc.stdout)
    assert summary["stop_reason"] == "max_rounds" and summary["rounds"] == 1
    assert Path(summary["best_kernel_path"]).is_file()
    attempts = summary["attempts"]
    assert [(a["round"], a["repair"]) for a in attempts] == [(0, 0), (1, 0)]  # round 0 not redone, no repair
    assert attempts[1]["change"].startswith("BLOCK_SIZE 64 -> 128 (swept: ") and attempts[1]["rule"] == "timeout"
    # setup and round 0's verdict ran once, before the kill; round 1's verdicts once each, after it
    assert sum(e["event"] == "baselines" for e in _events(run_dir)) == 1
    assert _verdicts(run_dir) == [(a["round"], a["repair"]) for a in attempts]
    for name in ("report.json", "report.md", "roofline.png"):
        assert (run_dir / name).is_file(), name


def test_finished_run_resumed_says_so_redoes_nothing_and_its_checkpoints_are_small(tmp_path):
    run_dir = tmp_path / "run"
    first = kernelopt("optimize", ADD / "problem.py", "--kernel", ADD / "kernel_base.py", "--max-rounds", "1",
                      "--no-compile", "--out", run_dir, cwd=tmp_path)
    assert first.returncode == 0, _show(first)
    with sqlite3.connect(run_dir / "checkpoints.sqlite") as db:
        sizes = [n for (n,) in db.execute("SELECT length(checkpoint) FROM checkpoints")]
        writes = [n for (n,) in db.execute("SELECT length(value) FROM writes")]
    assert len(sizes) >= 8  # a checkpoint per step: setup, verifier, profile, judger, optimizer, ...
    # The state points at files: a whole checkpoint (both sources, every attempt) stays small.
    assert max(sizes) < 16_000, sizes
    assert max(writes) < 8_000, writes

    events_before = (run_dir / "events.jsonl").read_text()
    (run_dir / "report.md").unlink()
    proc = kernelopt("resume", run_dir, cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    assert "already finished" in proc.stdout and "stopped: max_rounds" in proc.stdout
    assert f"best kernel: {run_dir / 'best_kernel.py'}" in proc.stdout
    assert (run_dir / "events.jsonl").read_text() == events_before  # no node ran again
    assert (run_dir / "report.md").is_file()  # the summary and reports are written again

    as_json = json.loads(kernelopt("resume", run_dir, "--json", cwd=tmp_path).stdout)
    assert as_json["already_finished"] is True and as_json["stop_reason"] == "max_rounds"
    assert len(as_json["attempts"]) == 3  # the start, and the sweep's best two, verified in full


def test_resume_refuses_a_folder_without_a_run(tmp_path):
    proc = kernelopt("resume", tmp_path, cwd=tmp_path)
    assert proc.returncode == 2, _show(proc)
    assert proc.stderr.startswith("kernelopt: ") and "run.json" in proc.stderr and "Traceback" not in proc.stderr


def test_a_run_is_driven_by_one_process_at_a_time(tmp_path):
    from kernelopt.checkpoint import new_run_record, run_lock
    from kernelopt.context import Context

    new_run_record(tmp_path, {"problem_source": "x", "run_dir": str(tmp_path)}, Context(), None)
    with run_lock(tmp_path):
        proc = kernelopt("resume", tmp_path, cwd=tmp_path)
    assert proc.returncode == 2, _show(proc)
    assert f"being run by process {os.getpid()}" in proc.stderr
    again = kernelopt("optimize", ADD / "problem.py", "--kernel", ADD / "kernel_base.py", "--out", tmp_path,
                      cwd=tmp_path)
    assert again.returncode == 2, _show(again)
    assert "already holds a run" in again.stderr and "kernelopt resume" in again.stderr


def test_db_must_be_a_postgres_url(tmp_path):
    proc = kernelopt("optimize", ADD / "problem.py", "--kernel", ADD / "kernel_base.py", "--db", "runs.sqlite",
                     cwd=tmp_path)
    assert proc.returncode == 2, _show(proc)
    assert "not a postgresql:// URL" in proc.stderr
    assert not (tmp_path / "kernelopt_runs").exists()


@dataclasses.dataclass(frozen=True)
class NotInTheState:
    value: int


def test_checkpoints_revive_every_state_record_and_nothing_else():
    import kernelopt.state
    from kernelopt.checkpoint import serializer, state_record_types

    defined = {v for v in vars(kernelopt.state).values() if dataclasses.is_dataclass(v)}
    assert defined <= state_record_types()  # a new record in state.py is revived without a code change
    serde = serializer()
    timing = Timing(1.0, 0.9, 1.1, 0.8, 1.2, 10, "interpreter")
    record = KernelRecord("k.py", "abc", timing, 3)
    assert serde.loads_typed(serde.dumps_typed(record)) == record
    assert serde.loads_typed(serde.dumps_typed(NotInTheState(1))) == {"value": 1}  # not revived as an object


def test_run_record_keeps_no_secrets(tmp_path):
    from kernelopt.checkpoint import new_run_record, read_run_record
    from kernelopt.context import Context

    ctx = Context(model="m", api_key="sk-secret-key", max_rounds=7)
    new_run_record(tmp_path, {"problem_source": "x"}, ctx, "postgresql://me:pg-secret@db.example:5433/runs")
    text = (tmp_path / "run.json").read_text()
    assert "secret" not in text
    record = read_run_record(tmp_path)
    assert record.db == "postgresql://me@db.example:5433/runs"
    assert record.run_context() == Context(model="m", max_rounds=7)
