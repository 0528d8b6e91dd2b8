"""The `kernelopt` command as a user runs it: a real subprocess, its exit code and its output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import DATA

ADD = DATA / "add"


def kernelopt(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m kernelopt.cli ARGS` in `cwd`, its default runs folder cwd/kernelopt_runs
    (not the user's cache); fails the test if it hangs."""
    env = dict(env if env is not None else os.environ)
    env.setdefault("KERNELOPT_RUNS_DIR", str(cwd / "kernelopt_runs"))
    return subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", *map(str, args)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=240,
    )


def _show(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


# ── verify ───────────────────────────────────────────────────────────────────────────


def test_verify_accepts_a_correct_kernel(tmp_path):
    proc = kernelopt("verify", ADD / "problem.py", ADD / "kernel_base.py", "--json", cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    result = json.loads(proc.stdout)
    assert result["accepted"] is True and result["rule"] is None
    assert result["reason"].startswith("correct on")
    assert isinstance(result["time_ms"], float) and result["time_ms"] > 0
    assert result["is_gpu_time"] is False  # CPU: the Triton interpreter's clock
    assert result["compile_ms"] is None  # no --compile


def test_verify_rejects_a_wrong_kernel(tmp_path):
    proc = kernelopt("verify", ADD / "problem.py", ADD / "kernel_wrong.py", "--json", cwd=tmp_path)
    assert proc.returncode == 1, _show(proc)
    result = json.loads(proc.stdout)
    assert result["accepted"] is False and result["rule"] == "incorrect"
    assert "atol" in result["reason"]  # says how far off it was
    assert result["time_ms"] is None  # a wrong kernel is never timed


# ── optimize ─────────────────────────────────────────────────────────────────────────


def test_optimize_json_prints_one_object(tmp_path):
    proc = kernelopt(
        "optimize", ADD / "problem.py", "--kernel", ADD / "kernel_base.py",
        "--max-rounds", "1", "--no-compile", "--json", "--sweep-configs", "2", cwd=tmp_path,
    )
    assert proc.returncode == 0, _show(proc)
    summary = json.loads(proc.stdout)  # the whole of stdout is one JSON object: no progress lines
    assert summary["stop_reason"] == "max_rounds" and summary["rounds"] == 1
    best = Path(summary["best_kernel_path"])
    assert best.is_file() and best.is_relative_to(tmp_path / "kernelopt_runs")  # $KERNELOPT_RUNS_DIR
    assert "class ModelNew" in best.read_text()
    assert isinstance(summary["best_time_ms"], float) and summary["best_time_ms"] > 0
    assert summary["compile_ms"] is None  # --no-compile
    # the start, then the offline policy's round-1 candidate: it was measured, but whether it beats
    # the start by more than the noise depends on the load of this machine under the interpreter
    # (the sweep measured the start and BLOCK_SIZE 128; the faster of the two was verified in full)
    changes = [a["change"] for a in summary["attempts"]]
    assert changes[0] == "the starting kernel" and changes[1].startswith("BLOCK_SIZE 64 -> 128 (swept: ")
    assert len(changes) == 2
    assert summary["attempts"][0]["outcome"] == "faster" and summary["attempts"][0]["new_best"]
    assert summary["attempts"][1]["outcome"] in ("faster", "within_noise", "slower")
    assert summary["attempts"][1]["time_ms"] > 0
    assert json.loads((best.parent / "report.json").read_text()) == summary  # the report node's, read, not made again


def test_an_offline_run_s_own_process_imports_no_torch_where_no_gpu_driver_is(tmp_path):
    """The run's process reads the problem's family through a child of its fork server (offline/moves/remote.py) and
    never handles a tensor: on a host without a GPU driver it imports no torch (torch about 3 s of its CPU,
    torch._dynamo 3 s more, on 2 cores). The sweep's note of the moves is the child's answer."""
    runs = tmp_path / "kernelopt_runs"
    code = ("import sys\nfrom kernelopt.cli import main\nstatus = main(sys.argv[1:])\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')), file=sys.stderr)\n"
            "sys.exit(status)")
    proc = subprocess.run(
        [sys.executable, "-c", code, "optimize", str(ADD / "problem.py"), "--kernel", str(ADD / "kernel_base.py"),
         "--max-rounds", "1", "--no-compile", "--json", "--sweep-configs", "2"],
        cwd=tmp_path, env={**os.environ, "KERNELOPT_RUNS_DIR": str(runs)}, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, _show(proc)
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr
    table = json.loads(next((runs).glob("*/sweeps/round-001.json")).read_text())
    assert table["moves"]["family"] == "other"  # a + 2 * b: traced in the child, no template for it
    assert table["moves"]["skipped"][0] == {"name": "all", "why": "no template for this reference (its operators: "
                                                                   "mul, add); only the launch is swept"}
    assert "dot.tf32x3" in {s["name"] for s in table["moves"]["skipped"]}  # the best kernel's rewrites: its source sent
    assert not list(runs.glob("*/harness/moves/*"))  # each answered job's folder is gone


def test_optimize_prints_progress_and_a_summary(tmp_path):
    out = tmp_path / "my_run"
    proc = kernelopt(
        "optimize", ADD / "problem.py", "--kernel", ADD / "kernel_base.py",
        "--max-rounds", "1", "--no-compile", "--out", out, "--sweep-configs", "2", cwd=tmp_path,
    )
    assert proc.returncode == 0, _show(proc)
    text = proc.stdout
    assert f"run directory {out}" in text
    assert "baselines: eager" in text
    assert "round 1" in text and "round 2" not in text
    assert "judger [rules]" in text
    assert re.search(r"candidate \(the starting kernel\): the baseline: [0-9.]+ ms", text), text
    assert re.search(r"candidate \(BLOCK_SIZE 64 -> 128 \(swept: [0-9.e+-]+ ms\)\): "
                     r"(faster|slower|no gain beyond the noise): [0-9.]+ ms", text)
    assert f"report: {out / 'report.md'}" in text  # written by the graph's report node, before the summary
    assert "stopped: max_rounds" in text
    assert f"best kernel: {out / 'best_kernel.py'}" in text
    assert "best time: " in text and "not GPU performance" in text
    assert text.index("round 1") < text.index("stopped: max_rounds")  # progress first, summary last
    assert (out / "best_kernel.py").is_file() and (out / "report.json").is_file()
    # durable by default: the checkpoints and what resume needs live in the run directory
    record = json.loads((out / "run.json").read_text())
    assert record["db"] is None and record["inputs"]["run_dir"] == str(out) and record["thread_id"]
    assert (out / "checkpoints.sqlite").stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "- Stop reason: max_rounds" in report and "interpreter time, not GPU performance" in report
    assert "BLOCK_SIZE 64 -> 128" in report and "![time per attempt](roofline.png)" in report
    assert (out / "roofline.png").read_bytes().startswith(b"\x89PNG")


# ── bad input: one line on stderr, exit code 2, no work done ────────────────────────


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


PROBLEM_NO_INPUTS = (
    "import torch.nn as nn\n\nclass Model(nn.Module):\n    pass\n\ndef get_init_inputs():\n    return []\n"
)
PROBLEM_SYNTAX = "import torch\n\nclass Model(nn.Module)\n    pass\n"
KERNEL_NO_MODELNEW = "import torch.nn as nn\n\nclass Model(nn.Module):\n    pass\n"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing_problem", "does not exist"),
        ("problem_without_get_inputs", "has no get_inputs()"),
        ("problem_syntax_error", "syntax error"),
        ("kernel_without_modelnew", "not ModelNew"),
        ("model_without_key", "needs OPENAI_API_KEY"),
        ("no_kernel_no_model", "no --kernel given and no --model"),
        ("negative_max_rounds", "argument --max-rounds: -1 is too small"),
        ("zero_timeout", "argument --timeout-s: 0 is too small"),
        ("out_under_a_file", "is a file, not a folder"),
        ("unknown_gpu", "unknown GPU 'Z80'"),
        ("not_a_postgres_url", "not a postgresql:// URL"),
        ("gpu_not_here", "--gpus 0,7: this host shows"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, expected):
    problem, kernel = ADD / "problem.py", ADD / "kernel_base.py"
    env = os.environ.copy()
    extra: list[str | Path] = ["--kernel", kernel]
    if case == "missing_problem":
        problem = tmp_path / "nowhere" / "problem.py"
    elif case == "problem_without_get_inputs":
        problem = _write(tmp_path, "problem.py", PROBLEM_NO_INPUTS)
    elif case == "problem_syntax_error":
        problem = _write(tmp_path, "broken_problem.py", PROBLEM_SYNTAX)
    elif case == "kernel_without_modelnew":
        extra = ["--kernel", _write(tmp_path, "kernel.py", KERNEL_NO_MODELNEW)]
    elif case == "model_without_key":
        env = {k: v for k, v in env.items() if not k.startswith("OPENAI_")}
        extra += ["--model", "gpt-4o"]
    elif case == "no_kernel_no_model":
        extra = []
    elif case == "negative_max_rounds":
        extra += ["--max-rounds", "-1"]
    elif case == "zero_timeout":
        extra += ["--timeout-s", "0"]
    elif case == "out_under_a_file":
        extra += ["--out", _write(tmp_path, "notes.txt", "x") / "run"]
    elif case == "unknown_gpu":
        extra += ["--gpu", "Z80"]
    elif case == "not_a_postgres_url":
        extra += ["--db", "runs.sqlite"]
    elif case == "gpu_not_here":
        extra += ["--gpus", "0,7"]
    began = time.monotonic()
    proc = kernelopt("optimize", problem, *extra, "--no-compile", cwd=tmp_path, env=env)
    took_s = time.monotonic() - began
    assert proc.returncode == 2, _show(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, _show(proc)
    assert lines[0].startswith("kernelopt: ") and expected in lines[0], _show(proc)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "kernelopt_runs").exists()  # refused before any run started
    if case == "problem_syntax_error":
        assert "broken_problem.py:3:" in lines[0]  # the file and line to fix
    if case != "model_without_key":  # the chat client's import is the one allowed cost of a usage error
        assert took_s < 3.0, f"a usage error took {took_s:.2f} s: checked after something heavy loaded"


# ── the command itself: --version, --help, usage errors, all before anything heavy loads ──


@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"], ["optimize", "--help"], [], ["optimise", "p.py"], ["resume"],
     ["report", "nowhere"], ["resume", "nowhere"], ["verify", "nowhere.py", "k.py"]],
)
def test_help_version_and_usage_errors_answer_at_once(tmp_path, args):
    began = time.monotonic()
    proc = kernelopt(*args, cwd=tmp_path)
    took_s = time.monotonic() - began
    # about 0.2 s here; the bound leaves room for a loaded 2-core CI box, not for importing torch (>1 s)
    assert took_s < 3.0, f"kernelopt {' '.join(args)} took {took_s:.2f} s"
    if args in (["--help"], ["--version"], ["optimize", "--help"]):
        assert proc.returncode == 0 and proc.stderr == "", _show(proc)
        assert proc.stdout.startswith("kernelopt 0.") if args == ["--version"] else "usage:" in proc.stdout
        return
    assert proc.returncode == 2 and proc.stdout == "", _show(proc)
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("kernelopt: "), _show(proc)


def test_modules_the_cli_needs_for_checking_load_no_torch_or_langgraph():
    code = ("import sys, kernelopt.cli, kernelopt.report.progress; "
            "print(sorted(m for m in ('torch', 'langgraph', 'langchain_core', 'matplotlib') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", _show(proc)


# ── one exit code per meaning, across commands ──────────────────────────────────────────

PROBLEM_INPUTS_RAISE = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
    "    def forward(self, x):\n        return x + x\n\n"
    "def get_inputs():\n    raise RuntimeError('no data here')\n\ndef get_init_inputs():\n    return []\n"
)


@pytest.mark.parametrize("case", ["kernel_syntax_error", "get_inputs_raises", "folder_as_problem"])
def test_the_same_bad_input_is_exit_2_in_verify_and_in_optimize(tmp_path, case):
    problem, kernel = ADD / "problem.py", ADD / "kernel_base.py"
    if case == "kernel_syntax_error":
        kernel = ADD / "kernel_syntax.py"
    elif case == "get_inputs_raises":
        problem = _write(tmp_path, "problem.py", PROBLEM_INPUTS_RAISE)
    else:
        problem = ADD
    said = {"kernel_syntax_error": "syntax error", "get_inputs_raises": "no data here",
            "folder_as_problem": "is a folder"}[case]
    verify = kernelopt("verify", problem, kernel, cwd=tmp_path)
    optimize = kernelopt("optimize", problem, "--kernel", kernel, "--no-compile", "--no-profile",
                         "--max-rounds", "1", "--out", tmp_path / "run", cwd=tmp_path)
    for proc in (verify, optimize):
        assert proc.returncode == 2, _show(proc)
        assert said in proc.stdout + proc.stderr, _show(proc)


def test_verify_says_what_it_is_doing_and_keeps_the_log_it_names(tmp_path):
    proc = kernelopt("verify", ADD / "problem.py", ADD / "kernel_wrong.py", cwd=tmp_path)
    assert proc.returncode == 1, _show(proc)
    assert "kernelopt: building the reference's cases and timing the baselines" in proc.stderr
    assert "kernelopt: verifying kernel_wrong.py" in proc.stderr
    logs = re.findall(r"^log: (\S+)$", proc.stdout, re.MULTILINE)
    assert logs and Path(logs[0]).is_file(), _show(proc)  # not in the deleted temporary folder
    assert Path(logs[0]).is_relative_to(tmp_path / "kernelopt_runs" / "verify-logs")


def test_a_job_failure_reads_as_a_sentence():
    from kernelopt.harness.sandbox.exits import failure_of

    said = failure_of("the candidate", "the process crashed with SIGSEGV")
    assert said == "the candidate's process crashed with SIGSEGV"
    assert failure_of("the sweep", "timed out in case 1/7 after 9 s") == "the sweep timed out in case 1/7 after 9 s"


def test_verify_warns_before_a_gpu_sized_problem_runs_under_the_interpreter(tmp_path, capsys):
    from kernelopt.cli_verify import _Say

    big = _write(tmp_path, "big.py", "import torch\nN = 1 << 25\nclass Model(torch.nn.Module):\n"
                 "    def forward(self, x):\n        return x\ndef get_inputs():\n    return [torch.rand(N)]\n"
                 "def get_init_inputs():\n    return []\n")
    _Say(quiet=False).warn_if_slow(str(big), use_cuda=False)
    assert "big.py's inputs take 128 MiB and no CUDA GPU is here" in capsys.readouterr().err
    _Say(quiet=False).warn_if_slow(str(big), use_cuda=True)
    _Say(quiet=False).warn_if_slow(str(ADD / "problem.py"), use_cuda=False)
    assert capsys.readouterr().err == ""


EXIT_NOW = r"""
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from kernelopt.cli_run import exit_now

def tracer():  # as LangSmith's background thread: it runs while the main thread lives
    while threading.main_thread().is_alive():
        time.sleep(0.05)
    print("tracer done", flush=True)

threading.Thread(target=tracer).start()
pool = ThreadPoolExecutor(2)
pool.submit(lambda: 1).result()  # an idle pool still referenced
atexit.register(lambda: print("handler ran", flush=True))
sys.stdout.write("unflushed")
exit_now(3)
"""


def test_the_fast_exit_ends_beside_a_tracer_thread_and_an_idle_pool_and_runs_the_handlers():
    """exit_now (the `kernelopt` command's end) skips only the modules' teardown: a non-daemon thread that
    runs while the main thread lives still ends, an idle pool still stops, exit handlers still run."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", EXIT_NOW], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "tracer done" in proc.stdout and "handler ran" in proc.stdout and proc.stdout.startswith("unflushed")
    assert time.monotonic() - started < 30
