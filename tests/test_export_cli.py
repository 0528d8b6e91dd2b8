"""`kernelopt export` as a user runs it: usage errors at once (before torch loads), a module written and importable."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import DATA, EXAMPLES
from test_cli import _show, kernelopt

EXPORT = DATA / "export"


@pytest.mark.parametrize(("args", "says"), [
    (["export"], "the following arguments are required: RUN_DIR"),
    (["export", "no/such/run"], "no/such/run does not exist; pass a run directory"),
    (["export", EXPORT / "linear_problem.py"], "is a file: pass its kernel too"),
    (["export", EXPORT / "linear_problem.py", "missing.py"], "kernel file 'missing.py' does not exist"),
    (["export", EXPORT / "linear_problem.py", EXPORT / "linear_kernel.py", "--name", "linear"],
     "--name 'linear' is not NAMESPACE::OP"),
    (["export", EXPORT, "x.py"], "is a folder; pass KERNEL only after a problem file"),
    (["export", EXPORT], "holds no problem.py; pass a run directory whose run found a correct kernel"),
])
def test_usage_errors_are_one_line_and_exit_2_before_torch_loads(tmp_path, args, says):
    began = time.monotonic()
    proc = kernelopt(*args, cwd=tmp_path)
    assert time.monotonic() - began < 3.0, "the check should not need torch"
    assert proc.returncode == 2 and proc.stdout == "", _show(proc)
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("kernelopt: "), _show(proc)
    assert says in proc.stderr, _show(proc)


def test_a_suite_name_is_a_namespace_only(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    proc = kernelopt("export", tmp_path, "--name", "ops::add", cwd=tmp_path)
    assert proc.returncode == 2 and "name its namespace only" in proc.stderr, _show(proc)


def test_export_writes_a_module_that_imports_and_runs(tmp_path):
    proc = kernelopt("export", EXAMPLES / "swish" / "problem.py", EXAMPLES / "swish" / "kernel.py",
                     "--name", "mylib::swish", "--out", tmp_path / "ops", cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    path = Path(proc.stdout.strip())
    assert path == (tmp_path / "ops" / "swish.py").resolve()
    code = ("import torch, swish; m = swish.Swish(); x = torch.randn(1000); "
            "assert torch.allclose(m(x), x * torch.sigmoid(x), atol=1e-6); "
            "assert torch.allclose(torch.ops.mylib.swish(x, [], m.kernelopt_init), m(x)); print('ok')")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "ops", capture_output=True, text=True,
                         timeout=240)
    assert run.stdout.strip() == "ok", _show(run)


def test_export_of_a_run_directory_is_named_after_its_problem(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "problem.py").write_text((EXAMPLES / "swish" / "problem.py").read_text())
    (run / "best_kernel.py").write_text((EXAMPLES / "swish" / "kernel.py").read_text())
    (run / "report.json").write_text(json.dumps({"problem": str(EXAMPLES / "swish" / "problem.py"),
                                                 "best_time_ms": 1.5, "best_round": 2, "stop_reason": "max_rounds"}))
    proc = kernelopt("export", run, "--out", tmp_path / "ops", cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    module = Path(proc.stdout.strip())
    assert module == (tmp_path / "ops" / "swish.py").resolve()
    assert "kernelopt::swish" in module.read_text() and "best of round 2, stopped: max_rounds" in module.read_text()
