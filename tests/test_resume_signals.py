"""Durable runs stopped by a signal: Ctrl-C mid-verification, and a PostgreSQL run killed and resumed
from the database (kept apart from test_resume.py so that the slowest runs of each go side by side)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from test_cli import _show, kernelopt
from test_resume import _assert_no_process_left, _kill_during_round_1_verification, _verdicts
from test_resume import _start_and_wait_for_a_hanging_round_1_candidate as _start_hanging_run


def test_ctrl_c_stops_the_candidate_and_resume_keeps_the_last_verdict(tmp_path):
    run_dir = tmp_path / "run"
    proc = _start_hanging_run(run_dir, tmp_path, "--max-rounds", "1")
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert f"kernelopt resume {run_dir}" in stderr and "Traceback" not in stderr
    _assert_no_process_left(run_dir)
    assert not (run_dir / "report.json").exists() and _verdicts(run_dir) == [(0, 0)]

    resumed = kernelopt("resume", run_dir, "--timeout-s", "8", cwd=tmp_path)
    assert resumed.returncode == 0, _show(resumed)
    assert f"resuming run {run_dir}: continuing" in resumed.stdout and "stopped: max_rounds" in resumed.stdout
    summary = json.loads((run_dir / "report.json").read_text())
    keys = [(a["round"], a["repair"]) for a in summary["attempts"]]
    assert keys[:2] == [(0, 0), (1, 0)] and summary["attempts"][1]["rule"] == "timeout"
    assert _verdicts(run_dir) == keys  # round 0's verdict kept, round 1's given once, after the resume


@pytest.mark.skipif(not os.environ.get("KERNELOPT_TEST_PG"), reason="KERNELOPT_TEST_PG (a PostgreSQL URL) is unset")
def test_postgres_run_killed_and_resumed_from_the_database(tmp_path):
    import psycopg

    db = os.environ["KERNELOPT_TEST_PG"]
    run_dir = tmp_path / "run"
    _kill_during_round_1_verification(run_dir, tmp_path, "--max-rounds", "1", "--db", db)
    assert not (run_dir / "checkpoints.sqlite").exists()
    record = json.loads((run_dir / "run.json").read_text())
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (record["thread_id"],)).fetchone()
    assert row is not None and row[0] >= 3  # the checkpoints are in PostgreSQL

    # resume needs only the folder: run.json names the database
    proc = kernelopt("resume", run_dir, "--json", "--timeout-s", "8", cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    summary = json.loads(proc.stdout)
    assert summary["stop_reason"] == "max_rounds"
    keys = [(a["round"], a["repair"]) for a in summary["attempts"]]
    assert keys[:2] == [(0, 0), (1, 0)] and _verdicts(run_dir) == keys
    assert Path(summary["best_kernel_path"]).is_file() and (run_dir / "report.md").is_file()

    again = json.loads(kernelopt("resume", run_dir, "--json", "--db", db, cwd=tmp_path).stdout)
    assert again["already_finished"] is True and len(again["attempts"]) == len(keys)
