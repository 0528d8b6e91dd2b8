"""`kernelopt suite` as a user runs it, on tests/data/suite under the interpreter: one correct
kernel, one wrong, one missing, one that raises at launch, one problem whose reference raises."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA
from test_cli import _show, kernelopt

from kernelopt.report.suite import draw_results, progress_line, render_markdown
from kernelopt.suite import ProblemResult, summarize

SUITE = DATA / "suite"
PROBLEMS, KERNELS = SUITE / "problems", SUITE / "kernels"
NAMES = ["1_Add", "2_Scale", "3_ReLU", "4_Sub", "5_BadMatmul"]
EXPECTED = {  # name: (status, rule)
    "1_Add": ("correct", None), "2_Scale": ("rejected", "incorrect"), "3_ReLU": ("no_kernel", None),
    "4_Sub": ("rejected", "runtime-error"), "5_BadMatmul": ("bad_problem", None),
}


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The whole suite verified once, --json, into OUT."""
    cwd = tmp_path_factory.mktemp("verified")
    proc = kernelopt("suite", PROBLEMS, "--kernels", KERNELS, "--no-compile", "--out", cwd / "out", "--json", cwd=cwd)
    return proc, cwd / "out"


def test_every_problem_has_its_verdict(verified):
    proc, _ = verified
    assert proc.returncode == 1, _show(proc)  # the suite ran; not every problem is correct
    problems = json.loads(proc.stdout)["problems"]  # --json: stdout is one object, no progress
    assert [p["name"] for p in problems] == NAMES
    assert {p["name"]: (p["status"], p["rule"]) for p in problems} == EXPECTED
    by_name = {p["name"]: p for p in problems}
    add = by_name["1_Add"]
    assert add["reason"].startswith("correct on") and add["best_ms"] > 0 and add["start_ms"] == add["best_ms"]
    assert add["speedup_vs_eager"] == pytest.approx(add["eager_ms"] / add["best_ms"])
    assert add["is_gpu_time"] is False and add["pct_of_floor"] is None  # no floor against interpreter times
    assert add["compile_ms"] is None and add["speedup_vs_compile"] is None  # --no-compile
    assert "outside atol" in by_name["2_Scale"]["reason"] and by_name["2_Scale"]["best_ms"] is None
    assert by_name["3_ReLU"]["reason"] == f"{KERNELS / '3_ReLU.py'} does not exist"
    assert "missing 1 required positional argument" in by_name["4_Sub"]["reason"]
    assert by_name["5_BadMatmul"]["reason"].startswith("the reference problem does not run")


def test_summary_is_computed_from_the_problems(verified):
    proc, _ = verified
    data = json.loads(proc.stdout)
    summary, problems = data["summary"], data["problems"]
    correct = [p for p in problems if p["status"] == "correct"]
    for p, share in summary["fast_p"].items():  # over ALL problems, correct and faster than eager by > p
        assert share == sum(1 for c in correct if c["speedup_vs_eager"] > float(p)) / len(NAMES)
    assert summary["fast_p"]["0"] == pytest.approx(1 / 5)
    assert summary["geomean_speedup_vs_eager"] == pytest.approx(
        math.exp(sum(math.log(c["speedup_vs_eager"]) for c in correct) / len(correct)))
    assert summary["geomean_speedup_vs_compile"] is None and summary["geomean_pct_of_floor"] is None
    assert (summary["problems"], summary["finished"], summary["correct"]) == (5, 5, 1)
    assert summary["status_counts"] == {"correct": 1, "rejected": 2, "no_kernel": 1, "bad_problem": 1}


def test_files_are_written(verified):
    proc, out = verified
    assert json.loads((out / "results.json").read_text()) == json.loads(proc.stdout)
    assert sorted(p.name for p in (out / "problems").iterdir()) == sorted(f"{n}.json" for n in NAMES)
    assert (out / "results.png").stat().st_size > 0
    markdown = (out / "results.md").read_text()
    assert "| fast_0 | fast_1 | fast_1.5 | fast_2 |" in markdown and "not GPU performance" in markdown
    assert all(f"| {name} |" in markdown for name in NAMES) and "![" in markdown
    suite = json.loads((out / "suite.json").read_text())
    assert suite["problems_dir"] == str(PROBLEMS) and suite["settings"]["optimize"] is False


def _start(*args: str | Path, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "KERNELOPT_RUNS_DIR": str(cwd / "kernelopt_runs")}
    return subprocess.Popen([sys.executable, "-m", "kernelopt.cli", *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, f"the suite ended before {path.name} was written: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {path.name} in {timeout_s} s"
        time.sleep(0.02)


def test_a_killed_suite_resumes_where_it_stopped(tmp_path):
    out = tmp_path / "out"
    proc = _start("suite", PROBLEMS, "--kernels", KERNELS, "--no-compile", "--out", out, cwd=tmp_path)
    # the second problem's result: the first one's progress line, printed after its results are
    # rebuilt, is out by then (killed at the first's result, the line could still be on its way)
    _wait_for(out / "problems" / f"{NAMES[1]}.json", proc)
    proc.send_signal(signal.SIGKILL)
    stdout, _ = proc.communicate(timeout=30)
    assert stdout.splitlines()[0] == f"suite: 5 problems; results in {out}"
    assert stdout.splitlines()[1].startswith("[1/5] 1_Add: correct, ")  # progress as each problem finishes
    assert stdout.splitlines()[1].endswith(" s)")
    (out / "problems" / "5_BadMatmul.json").unlink(missing_ok=True)  # a result lost with the kill
    kept = {p.stem: p.read_text() for p in (out / "problems").glob("*.json")}
    assert "1_Add" in kept and len(kept) < 5

    resumed = kernelopt("suite", "--resume", out, cwd=tmp_path)
    assert resumed.returncode == 1, _show(resumed)
    lines = resumed.stdout.splitlines()
    assert lines[0] == f"suite: 5 problems, {len(kept)} already finished; results in {out}"
    redone = [line.split(":")[0].split("] ")[1] for line in lines if line.startswith("[")]
    assert redone == [n for n in NAMES if n not in kept]  # finished problems are not redone
    assert [line.split("]")[0] for line in lines if line.startswith("[")] == [
        f"[{i}/5" for i in range(len(kept) + 1, 6)]
    assert any(line.startswith("[5/5] 5_BadMatmul: bad problem: the reference problem does not run") for line in lines)
    assert all((out / "problems" / f"{name}.json").read_text() == text for name, text in kept.items())
    assert lines[-5].startswith("correct: 1 of 5; fast_0 0.20, fast_1 0.00")
    assert lines[-3:] == [str(out / name) for name in ("results.md", "results.json", "results.png")]

    again = kernelopt("suite", "--resume", out, "--json", cwd=tmp_path)  # all finished: nothing is redone
    data = json.loads(again.stdout)
    assert [(p["name"], p["status"]) for p in data["problems"]] == [(n, EXPECTED[n][0]) for n in NAMES]
    assert data["problems"][0] == json.loads(kept["1_Add"])


def test_optimize_one_round(tmp_path):
    problems = tmp_path / "problems"
    problems.mkdir()
    for name in ("1_Add", "3_ReLU"):
        shutil.copy(PROBLEMS / f"{name}.py", problems)
    proc = kernelopt("suite", problems, "--kernels", KERNELS, "--optimize", "--max-rounds", "1", "--no-compile",
                     "--out", tmp_path / "out", "--json", cwd=tmp_path)
    assert proc.returncode == 1, _show(proc)
    add, relu = json.loads(proc.stdout)["problems"]
    assert add["status"] == "correct" and add["rounds"] == 1 and add["stop_reason"] == "max_rounds"
    assert 0 < add["best_ms"] <= add["start_ms"]
    assert add["speedup_vs_eager"] == pytest.approx(add["eager_ms"] / add["best_ms"])
    assert Path(add["best_kernel_path"]) == tmp_path / "out" / "runs" / "1_Add" / "best_kernel.py"
    assert (tmp_path / "out" / "runs" / "1_Add" / "report.md").is_file()  # the problem's own run report
    assert {"baselines", "round 0", "round 1"} <= set(add["figures"]["phases_s"])  # where its time went
    assert "Wall time: baselines " in (tmp_path / "out" / "runs" / "1_Add" / "report.md").read_text()
    assert "Median wall time per problem: " in (tmp_path / "out" / "results.md").read_text()
    assert relu["status"] == "no_kernel" and relu["reason"].endswith("; no --model to write one")


def test_each_problem_stops_at_its_time_budget_and_the_suite_keeps_it(tmp_path):
    from kernelopt.suite import ProblemSpec, SuiteSettings, new_suite, read_suite, run_problem

    settings = SuiteSettings(optimize=True, max_rounds=3, time_compile=False, max_wall_s=0.01)
    spec = ProblemSpec("1_Add", str(PROBLEMS / "1_Add.py"), str(KERNELS / "1_Add.py"), str(tmp_path / "run"), settings)
    result = run_problem(spec)
    assert result.status == "correct" and result.rounds == 0, result  # spent before round 1's diagnosis
    assert result.stop_reason.startswith("time_budget: ") and result.best_ms is not None
    (tmp_path / "out").mkdir()
    new_suite(str(PROBLEMS), str(KERNELS), settings, tmp_path / "out")
    assert read_suite(str(tmp_path / "out")).settings.max_wall_s == 0.01  # --resume runs on the same budget


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}/nowhere", "--kernels", str(KERNELS)], "nowhere is not a folder"),
        (["{tmp}/empty", "--kernels", str(KERNELS)], "empty holds no problem files (*.py)"),
        ([str(PROBLEMS)], "no --kernels folder: pass one"),
        ([str(PROBLEMS), "--kernels", "{tmp}/nowhere"], "--kernels {tmp}/nowhere is not a folder"),
        ([], "name the folder of problems, or continue a stopped suite with --resume OUT"),
        (["--resume", "{tmp}/empty"], "holds no suite.json"),
        (["--resume", "{tmp}/empty", str(PROBLEMS)], "drop PROBLEMS_DIR"),
        (["--resume", "{tmp}/empty", "--max-wall-s", "60"], "drop --max-wall-s"),
        ([str(PROBLEMS), "--kernels", str(KERNELS), "--out", "{tmp}/done"], "already holds a suite; continue it"),
        ([str(PROBLEMS), "--max-rounds", "0"], "argument --max-rounds: 0 is too small"),
    ],
)
def test_usage_errors_are_one_line(tmp_path, args: list[str], message: str):
    (tmp_path / "empty").mkdir()
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "suite.json").write_text("{}")
    proc = kernelopt("suite", *(a.format(tmp=tmp_path) for a in args), cwd=tmp_path)
    assert proc.returncode == 2, _show(proc)
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1
    assert message.format(tmp=tmp_path) in proc.stderr


def _result(name: str, status: str, speedup: float | None, pct: float | None) -> ProblemResult:
    best = 1.0 if speedup else None
    return ProblemResult(name, status, "why", is_gpu_time=True, eager_ms=speedup, compile_ms=2.0 if best else None,
                         best_ms=best, speedup_vs_eager=speedup, speedup_vs_compile=2.0 if best else None,
                         pct_of_floor=pct, eager_pct_of_floor=pct and pct / 2, compile_pct_of_floor=pct and pct / 3,
                         wall_s=12.0)


def test_gpu_summary_progress_and_report(tmp_path):
    """On GPU times: fast_p at every threshold, the geomean % of floor, the line, the table and plot."""
    results = [_result("a", "correct", 4.0, 90.0), _result("b", "correct", 1.2, 40.0),
               _result("c", "correct", 0.5, 10.0), _result("d", "rejected", None, None)]
    summary = summarize(results, total=5)  # one more problem not finished yet
    assert summary["fast_p"] == {"0": 3 / 5, "1": 2 / 5, "1.5": 1 / 5, "2": 1 / 5}
    assert summary["geomean_speedup_vs_eager"] == pytest.approx((4.0 * 1.2 * 0.5) ** (1 / 3))
    assert summary["geomean_speedup_vs_compile"] == pytest.approx(2.0)
    assert summary["geomean_pct_of_floor"] == pytest.approx((90.0 * 40.0 * 10.0) ** (1 / 3))
    assert progress_line(3, 8, results[0]) == "[3/8] a: correct, 4x eager, 90% of floor (12 s)"
    data: dict[str, Any] = {
        "suite": {"problems_dir": "/p", "kernels_dir": "/k", "out_dir": str(tmp_path),
                  "settings": {"optimize": True, "model": None, "max_rounds": 3}},
        "summary": summary, "problems": [dataclasses.asdict(r) for r in results],
    }
    assert draw_results(data, tmp_path / "results.png")
    markdown = render_markdown(data, has_plot=True)
    assert "Finished: 4 of 5 (continue with `kernelopt suite --resume" in markdown
    assert "optimize with the offline policy, at most 3 rounds" in markdown
    assert "| 0.60 | 0.40 | 0.20 | 0.20 | 1.34x | 2x | - | - | - / - | 33% |" in markdown  # no stronger baselines
    assert "not GPU performance" not in markdown and "% of the floor per problem" in markdown


def _fake_gpu(folder: Path, name: str) -> dict[str, str]:
    """An environment whose nvidia-smi names `name` (the suite reads the GPU's name from it, never from torch)."""
    folder.mkdir(exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{name}'\n")
    smi.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def test_a_suite_keeps_its_gpu_and_is_not_resumed_on_another(tmp_path):
    # Session 38's device lent an H100 and an H200 by turns to calls that asked for the H200: a pass resumed on the
    # other card would put two GPUs' times in one table. The name is recorded when the suite starts ("cpu" where the
    # interpreter times); a resume on another device is one line and no work; on the same one, or where the start's
    # device is not known (a suite from before), it goes on.
    problems = tmp_path / "problems"
    problems.mkdir()
    shutil.copy(PROBLEMS / "1_Add.py", problems)
    out = tmp_path / "out"
    h200 = _fake_gpu(tmp_path / "h200", "NVIDIA H200")
    started = kernelopt("suite", problems, "--kernels", KERNELS, "--no-compile", "--out", out, cwd=tmp_path,
                        env=h200)
    assert started.returncode == 0, _show(started)
    assert json.loads((out / "suite.json").read_text())["device"] == "NVIDIA H200"
    assert "- Timed on: NVIDIA H200 (a resume on another device is refused)" in (out / "results.md").read_text()
    (out / "problems" / "1_Add.json").unlink()  # unfinished again: a resume would run it

    h100 = _fake_gpu(tmp_path / "h100", "NVIDIA H100 80GB HBM3")
    refused = kernelopt("suite", "--resume", out, cwd=tmp_path, env=h100)
    assert refused.returncode != 0 and refused.stdout == "", _show(refused)
    assert refused.stderr.strip().splitlines()[-1] == (
        f"kernelopt: {out} was timed on NVIDIA H200 and this host times on NVIDIA H100 80GB HBM3: one table would "
        "mix two devices' times; resume it where it started, or start a new suite here")
    assert not (out / "problems" / "1_Add.json").exists()
    no_gpu = {**h200, "CUDA_VISIBLE_DEVICES": ""}  # the interpreter's times after a GPU's: refused as well
    assert "this host times on the CPU (the interpreter)" in kernelopt("suite", "--resume", out, cwd=tmp_path,
                                                                       env=no_gpu).stderr

    resumed = kernelopt("suite", "--resume", out, cwd=tmp_path, env=h200)
    assert resumed.returncode == 0 and (out / "problems" / "1_Add.json").exists(), _show(resumed)
    data = json.loads((out / "suite.json").read_text())
    old = {k: v for k, v in data.items() if k != "device"}
    (out / "suite.json").write_text(json.dumps(old))  # a suite written before the name was kept
    assert kernelopt("suite", "--resume", out, cwd=tmp_path, env=h100).returncode == 0
    later = {**data, "placement": "a later version's", "settings": {**data["settings"], "new_knob": 1}}
    (out / "suite.json").write_text(json.dumps(later))  # keys of a later version are left, not a traceback
    assert kernelopt("suite", "--resume", out, cwd=tmp_path, env=h200).returncode == 0
    cpu_out = tmp_path / "cpu_out"  # and a suite timed by the interpreter is not resumed on a GPU
    assert kernelopt("suite", problems, "--kernels", KERNELS, "--no-compile", "--out", cpu_out, cwd=tmp_path,
                     env=no_gpu).returncode == 0
    assert json.loads((cpu_out / "suite.json").read_text())["device"] == "cpu"
    assert "was timed on the CPU (the interpreter)" in kernelopt("suite", "--resume", cpu_out, cwd=tmp_path,
                                                                 env=h200).stderr
